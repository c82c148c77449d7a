/** Stage: an environment of a landscape whose traffic the activation switches between StageVersions. */
import { z } from 'zod';
import { defineKind, resourceSchema } from './kind.js';
import { dnsLabel, objectName, routeRef, statusOf, timestamp, transitionRule } from './meta.js';

export const vector = z
  .string()
  .min(1)
  .max(253)
  .describe('The software version (vector) reference, e.g. common.konfidence.cloud/example/vector:0.0.1.');

/**
 * Where a Stage's routes live is fixed at its creation: its executions carry no landscape, and a
 * revert of what a run changed, or the Stage controller's reading of the traffic, follows the
 * Stage's landscape. Changed, they would act on routes of the same names in another cluster.
 */
const LANDSCAPE_FIXED = {
  rule: 'has(self.landscape) == has(oldSelf.landscape) && (!has(self.landscape) || self.landscape == oldSelf.landscape)',
  message:
    'spec.landscape is immutable: the Stage routes in the cluster it was created for (create a new Stage to route in another landscape)',
  fieldPath: '.landscape',
};

export const stageSpec = transitionRule(
  z.object({
    vector: vector.describe('Desired vector of this Stage; a change creates a new StageVersion.'),
    stageVersionHistoryLimit: z
      .int()
      .min(0)
      .max(100)
      .default(3)
      .describe('How many unused StageVersions besides the target and the active one to keep.'),
    drainSeconds: z
      .int()
      .min(0)
      .max(3600)
      .default(30)
      .describe(
        'How long a StageVersion stays protected (serving-marked: not deleted) after the managed routes stop sending it traffic: the time the data plane takes to apply a route change and to finish the requests it sent there.',
      ),
    landscape: dnsLabel
      .optional()
      .describe(
        "The Landscape (in the system namespace) whose cluster holds this Stage's routes; its executor workers make the routing changes there. Absent: the control plane's own cluster. The Landscape must list this namespace in spec.allowedNamespaces.",
      ),
  }),
  LANDSCAPE_FIXED,
);

/** One managed rule and the percent it sends each StageVersion: in a Stage's status, and in a Landscape's reports. */
export const trafficRule = z.object({
  route: routeRef,
  rule: z.int().min(0).describe('Position of the rule in the route.'),
  name: z.string().min(1).max(253).optional().describe('Name of the rule, when it has one.'),
  weights: z
    .record(z.string().min(1).max(512), z.int().min(0).max(100))
    .describe('Percent of the rule per StageVersion (a backend that is no StageVersion by its reference).'),
});

export const stagePhases = ['Pending', 'Progressing', 'Ready', 'Degraded'] as const;

export const stageStatus = statusOf(stagePhases, {
  latestRevision: z.int().min(0).optional().describe('Highest StageVersion revision created for this Stage.'),
  targetStageVersion: objectName.optional().describe('StageVersion of spec.vector (the "target" usage).'),
  activeStageVersion: objectName.optional().describe('StageVersion that serves traffic (the "active" usage).'),
  traffic: z
    .array(trafficRule)
    .max(64)
    .optional()
    .describe(
      'The traffic as the rules that the registrations manage hold it, read by the Stage controller: every StageVersion with a percent above 0 here serves, and cannot be deleted.',
    ),
  servingStageVersions: z
    .array(objectName)
    .max(64)
    .optional()
    .describe('StageVersions that a managed rule sends traffic to (status.traffic), newest first.'),
  draining: z
    .array(
      z.object({
        stageVersion: objectName,
        since: timestamp.describe('When the Stage controller first saw no managed rule send it traffic.'),
      }),
    )
    .max(64)
    .optional()
    .describe(
      'StageVersions no managed rule sends traffic to any more, still protected until since + spec.drainSeconds.',
    ),
  controllerStatus: z
    .object({
      namespace: dnsLabel.describe('The system namespace (KONFIDENCE_SYSTEM_NAMESPACE of the Stage controller).'),
      name: objectName.describe('Name of the ControllerStatus, "stage-controller".'),
    })
    .optional()
    .describe(
      'The ControllerStatus of the Stage controller serving this Stage: its status.activeController names the replica that leads and its endpoint (kubectl get controllerstatus NAME -n NAMESPACE). The object exists only with leader election.',
    ),
});

export const Stage = defineKind({
  kind: 'Stage',
  plural: 'stages',
  singular: 'stage',
  shortNames: ['stg'],
  description: 'A Stage of a landscape; its traffic is switched between StageVersions by VectorActivations.',
  spec: stageSpec,
  status: stageStatus,
  printerColumns: [
    { name: 'Vector', type: 'string', jsonPath: '.spec.vector' },
    { name: 'Target', type: 'string', jsonPath: '.status.targetStageVersion' },
    { name: 'Active', type: 'string', jsonPath: '.status.activeStageVersion' },
    { name: 'Serving', type: 'string', jsonPath: '.status.servingStageVersions', priority: 1 },
  ],
});
export const stageResource = resourceSchema(Stage);
export type StageResource = z.infer<typeof stageResource>;
