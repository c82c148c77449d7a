/** Stage: an environment of a landscape whose traffic the activation switches between StageVersions. */
import { z } from 'zod';
import { defineKind, resourceSchema } from './kind.js';
import { dnsLabel, objectName, statusOf } from './meta.js';

export const vector = z
  .string()
  .min(1)
  .max(253)
  .describe('The software version (vector) reference, e.g. common.konfidence.cloud/example/vector:0.0.1.');

export const stageSpec = z.object({
  vector: vector.describe('Desired vector of this Stage; a change creates a new StageVersion.'),
  stageVersionHistoryLimit: z
    .int()
    .min(0)
    .max(100)
    .default(3)
    .describe('How many unused StageVersions besides the target and the active one to keep.'),
});

export const stagePhases = ['Pending', 'Progressing', 'Ready', 'Degraded'] as const;

export const stageStatus = statusOf(stagePhases, {
  latestRevision: z.int().min(0).optional().describe('Highest StageVersion revision created for this Stage.'),
  targetStageVersion: objectName.optional().describe('StageVersion of spec.vector (the "target" usage).'),
  activeStageVersion: objectName.optional().describe('StageVersion that serves traffic (the "active" usage).'),
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
  ],
});
export const stageResource = resourceSchema(Stage);
export type StageResource = z.infer<typeof stageResource>;
