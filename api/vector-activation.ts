/** VectorActivation (ADR-0012): the request to switch a Stage's traffic to one StageVersion. */
import { z } from 'zod';
import { defineKind, resourceSchema } from './kind.js';
import { dnsLabel, immutable, objectName, statusOf, timestamp } from './meta.js';
import { vector } from './stage.js';
import { progressionStatus } from './progression.js';

export const vectorActivationSpec = immutable(
  z.object({
    stage: objectName.describe('Stage (same namespace) whose traffic is switched.'),
    stageVersion: objectName.describe('StageVersion (same namespace) that receives the traffic.'),
    vector: vector.optional().describe('Vector of the StageVersion, for search and display.'),
    vectorDeployment: objectName.optional().describe('VectorDeployment that produced the StageVersion.'),
    executionPlan: objectName
      .optional()
      .describe('ActivationExecutionPlan in the system namespace; default: the plan named "default".'),
  }),
  'spec of a VectorActivation (create a new one to activate something else)',
);

export const vectorActivationPhases = [
  'Pending',
  'Waiting',
  'InProgress',
  'Succeeded',
  'Failed',
  'Skipped',
  'Cancelled',
] as const;
export type VectorActivationPhase = (typeof vectorActivationPhases)[number];

export const executionPhases = ['Pending', 'InProgress', 'Succeeded', 'Error'] as const;

/** A plan has at most 16 steps; without a plan every registration is a step of its own. */
export const MAX_STATUS_STEPS = 64;
/** Longest message kept per task, request and first error: status stays small and readable. */
export const MAX_MESSAGE = 4096;

export const taskProgress = z.object({
  registration: objectName,
  execution: objectName.optional(),
  phase: z.enum(executionPhases),
  message: z.string().max(MAX_MESSAGE).optional(),
});

export const stepProgress = z.object({
  name: dnsLabel,
  phase: z.enum(['Pending', 'InProgress', 'Succeeded', 'Failed', 'Reverted']),
  tasks: z.array(taskProgress).max(16),
});

export const requestActions = ['cancel', 'retry', 'approve', 'promote', 'abort'] as const;

/** The answer to a request asked for by annotation, so a kubectl user sees it. */
export const handledRequest = z.object({
  action: z.enum(requestActions),
  token: z.string().max(1024).describe('<annotation>=<value> of the request.'),
  outcome: z.enum(['Accepted', 'Refused']),
  by: z.string().max(512).optional().describe('Who asked: the user the annotation names (approve, promote, abort).'),
  message: z.string().max(MAX_MESSAGE),
  time: timestamp,
});

export const vectorActivationStatus = statusOf(vectorActivationPhases, {
  workflowId: z.string().max(1024).optional().describe('Temporal workflow that runs this activation.'),
  workflowUrl: z.string().max(2048).optional().describe('Link to the workflow in the Temporal UI.'),
  attempt: z.int().min(1).optional().describe('1 for the first run; raised by every retry.'),
  previousStageVersion: objectName.optional().describe('StageVersion that was active when this one started.'),
  firstError: z
    .string()
    .max(MAX_MESSAGE)
    .optional()
    .describe('The first error of this activation, kept across retries.'),
  startTime: timestamp.optional(),
  completionTime: timestamp.optional(),
  coreBuildId: z
    .string()
    .max(64)
    .optional()
    .describe('Build id of the core worker that last wrote this status (Worker Versioning); absent when unversioned.'),
  steps: z.array(stepProgress).max(MAX_STATUS_STEPS).optional(),
  requests: z
    .array(handledRequest)
    .max(requestActions.length)
    .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['action'] })
    .optional()
    .describe('The last request of each kind (cancel, retry, approve, promote, abort) and what became of it.'),
  progression: progressionStatus
    .optional()
    .describe('Where a progressive activation is: step, weight, gate, analyses, who answered.'),
});

export const VectorActivation = defineKind({
  kind: 'VectorActivation',
  plural: 'vectoractivations',
  singular: 'vectoractivation',
  shortNames: ['va'],
  description: 'Switches the traffic of a Stage to a StageVersion (ADR-0012). One runs per Stage at a time.',
  spec: vectorActivationSpec,
  status: vectorActivationStatus,
  printerColumns: [
    { name: 'Stage', type: 'string', jsonPath: '.spec.stage' },
    { name: 'StageVersion', type: 'string', jsonPath: '.spec.stageVersion' },
    { name: 'Weight', type: 'integer', jsonPath: '.status.progression.weight' },
    { name: 'Gate', type: 'string', jsonPath: '.status.progression.gate.type' },
    { name: 'Reason', type: 'string', jsonPath: '.status.reason', priority: 1 },
    { name: 'Workflow', type: 'string', jsonPath: '.status.workflowId', priority: 1 },
  ],
});
export const vectorActivationResource = resourceSchema(VectorActivation);
export type VectorActivationResource = z.infer<typeof vectorActivationResource>;
