/** StageVersionUsage (ADR-0013): while one references a StageVersion, that StageVersion is kept. */
import { z } from 'zod';
import { defineKind, resourceSchema } from './kind.js';
import { LABEL_VALUE_PATTERN } from './labels.js';
import { objectName, rule, statusOf } from './meta.js';

const labelValue = z.string().max(63).regex(LABEL_VALUE_PATTERN);

// `[.]` rather than `\.`: the same text is a JavaScript and a CEL (RE2) regular expression.
const LABEL_KEY =
  '^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?([A-Za-z0-9][-A-Za-z0-9_.]{0,61})?[A-Za-z0-9]$';
const MAX_LABELS = 32;

const matchLabels = z
  .record(z.string(), labelValue)
  .meta({ maxProperties: MAX_LABELS })
  .refine((m) => Object.keys(m).length <= MAX_LABELS, { message: `at most ${MAX_LABELS} labels` })
  .describe('Labels a StageVersion must all carry, e.g. konfidence.cloud/stage-name and konfidence.cloud/vector.');

export const stageVersionSelector = rule(
  rule(
    z.object({ matchLabels }),
    {
      rule: `self.matchLabels.all(k, k.matches('${LABEL_KEY}'))`,
      message: 'matchLabels keys must be label keys such as konfidence.cloud/stage-name',
      fieldPath: '.matchLabels',
    },
    (s) => Object.keys(s.matchLabels).every((k) => new RegExp(LABEL_KEY).test(k)),
  ),
  {
    rule: 'size(self.matchLabels) > 0',
    message:
      'stageVersionSelector.matchLabels must name at least one label: an empty selector would hold every StageVersion',
    fieldPath: '.matchLabels',
    reason: 'FieldValueRequired',
  },
  (s) => Object.keys(s.matchLabels).length > 0,
);

export const stageVersionUsageSpec = rule(
  z.object({
    reason: z
      .string()
      .min(1)
      .max(1024)
      .describe('Why the StageVersion is in use, for people: "target vector of stage dev", "activation x".'),
    stageVersionRef: z.object({ name: objectName.describe('Name of a StageVersion in this namespace.') }).optional(),
    stageVersionSelector: stageVersionSelector.optional(),
  }),
  {
    rule: 'has(self.stageVersionRef) != has(self.stageVersionSelector)',
    message: 'exactly one of stageVersionRef or stageVersionSelector must be set',
    reason: 'FieldValueInvalid',
  },
  (s) => (s.stageVersionRef === undefined) !== (s.stageVersionSelector === undefined),
);

export const stageVersionUsagePhases = ['Pending', 'Ready', 'NotReady', 'NotFound'] as const;

export const stageVersionUsageStatus = statusOf(stageVersionUsagePhases, {
  stageVersions: z.array(objectName).max(256).optional().describe('The StageVersions this usage resolves to.'),
});

export const StageVersionUsage = defineKind({
  kind: 'StageVersionUsage',
  plural: 'stageversionusages',
  singular: 'stageversionusage',
  shortNames: ['svu'],
  description: 'Marks a StageVersion (by name or by labels) as in use, so it is not deleted (ADR-0013).',
  spec: stageVersionUsageSpec,
  status: stageVersionUsageStatus,
  printerColumns: [
    { name: 'StageVersion', type: 'string', jsonPath: '.spec.stageVersionRef.name' },
    { name: 'Reason', type: 'string', jsonPath: '.spec.reason', priority: 1 },
  ],
});
export const stageVersionUsageResource = resourceSchema(StageVersionUsage);
export type StageVersionUsageResource = z.infer<typeof stageVersionUsageResource>;
