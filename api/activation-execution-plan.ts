/**
 * ActivationExecutionPlan (ADR-0012 option 2): steps run in order, the tasks of a step together; a
 * step starts only when every task of the one before succeeded.
 */
import { z } from 'zod';
import { defineKind, resourceSchema } from './kind.js';
import { dnsLabel, objectName, rule, statusOf } from './meta.js';
import { analysisTemplate, MAX_ANALYSES, progressionSpec } from './progression.js';

// Bounds keep the CEL rules below within the apiserver's cost budget and plans readable.
export const MAX_STEPS = 16;
export const MAX_TASKS_PER_STEP = 16;

export const planStep = rule(
  z.object({
    name: dnsLabel.describe('Step name, unique within the plan.'),
    tasks: z
      .array(objectName.max(63).describe('Name of an ActivationTaskRegistration in the system namespace.'))
      .max(MAX_TASKS_PER_STEP)
      .meta({ 'x-kubernetes-list-type': 'set' })
      .describe('Registrations whose tasks run in parallel in this step.'),
  }),
  {
    rule: 'size(self.tasks) > 0',
    message: 'a step must list at least one task',
    messageExpression: "'step ' + self.name + ' must list at least one task'",
    fieldPath: '.tasks',
    reason: 'FieldValueRequired',
  },
  (s) => s.tasks.length > 0,
);

export const failurePolicies = ['Stop', 'Revert'] as const;

/** The analyses a plan's progression names, by step and in the background. */
const namedAnalyses = (p: {
  progression?: { steps: { analysis?: { name: string } }[]; background?: { analysis: string }[] };
}) => [
  ...(p.progression?.steps ?? []).flatMap((s) => (s.analysis ? [s.analysis.name] : [])),
  ...(p.progression?.background ?? []).map((b) => b.analysis),
];

const planFields = z.object({
  steps: z
    .array(planStep)
    .min(1)
    .max(MAX_STEPS)
    .describe('Steps, run in this order (for every weight of a progression).'),
  onFailure: z
    .enum(failurePolicies)
    .default('Stop')
    .describe('Stop: leave applied steps as they are. Revert: undo succeeded tasks in reverse order.'),
  progression: progressionSpec
    .optional()
    .describe(
      'Traffic in steps: each setWeight runs the steps above with that weight to the new StageVersion (the ' +
        "registrations' own weight is not used), gates and analyses between them, 100 % after the last. Absent: one switch.",
    ),
  analyses: z.array(analysisTemplate).max(MAX_ANALYSES).optional().describe('Analyses the progression names.'),
});

/** Analysis names are unique, and every one the progression names is defined. */
const withAnalyses = rule(
  rule(
    planFields,
    {
      rule: '!has(self.analyses) || self.analyses.all(a, self.analyses.exists_one(o, o.name == a.name))',
      message: 'analysis names must be unique',
      fieldPath: '.analyses',
    },
    (p) => new Set((p.analyses ?? []).map((a) => a.name)).size === (p.analyses ?? []).length,
  ),
  {
    rule:
      '!has(self.progression) || (' +
      'self.progression.steps.all(s, !has(s.analysis) || (has(self.analyses) && self.analyses.exists(a, a.name == s.analysis.name))) && ' +
      '(!has(self.progression.background) || self.progression.background.all(b, has(self.analyses) && self.analyses.exists(a, a.name == b.analysis))))',
    message: 'every analysis the progression names must be defined in spec.analyses',
    fieldPath: '.progression',
  },
  (p) => namedAnalyses(p).every((n) => (p.analyses ?? []).some((a) => a.name === n)),
);

export const activationExecutionPlanSpec = rule(
  rule(
    withAnalyses,
    {
      rule: 'self.steps.all(s, self.steps.exists_one(o, o.name == s.name))',
      message: 'step names must be unique',
      fieldPath: '.steps',
    },
    (s) => new Set(s.steps.map((x) => x.name)).size === s.steps.length,
  ),
  {
    rule: 'self.steps.all(s, s.tasks.all(t, self.steps.exists_one(o, t in o.tasks)))',
    message: 'a task may appear in only one step of a plan',
    fieldPath: '.steps',
  },
  (s) => {
    const tasks = s.steps.flatMap((x) => x.tasks);
    return new Set(tasks).size === tasks.length;
  },
);

export const ActivationExecutionPlan = defineKind({
  kind: 'ActivationExecutionPlan',
  plural: 'activationexecutionplans',
  singular: 'activationexecutionplan',
  shortNames: ['aep'],
  description: 'Orders activation tasks into steps (ADR-0012). Lives in the system namespace.',
  spec: activationExecutionPlanSpec,
  status: statusOf(['Ready', 'Invalid'] as const, {}),
  printerColumns: [
    { name: 'Steps', type: 'string', jsonPath: '.spec.steps[*].name' },
    { name: 'OnFailure', type: 'string', jsonPath: '.spec.onFailure' },
    { name: 'Weights', type: 'string', jsonPath: '.spec.progression.steps[*].setWeight' },
  ],
});
export const activationExecutionPlanResource = resourceSchema(ActivationExecutionPlan);
export type ActivationExecutionPlanResource = z.infer<typeof activationExecutionPlanResource>;
