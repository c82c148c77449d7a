/**
 * ActivationExecution (ADR-0012): one task of one activation. Worker executors report through the
 * workflow; External executors watch these objects and write their status themselves.
 */
import { z } from 'zod';
import { defineKind, resourceSchema } from './kind.js';
import { dnsLabel, freeform, immutable, objectName, statusOf, timestamp, transitionRule } from './meta.js';
import { executionPhases } from './vector-activation.js';

export const executionActions = ['Apply', 'Revert'] as const;

export const activationExecutionSpec = immutable(
  z.object({
    type: dnsLabel.describe('Executor type, copied from the registration.'),
    registration: objectName.describe('ActivationTaskRegistration this execution runs.'),
    vectorActivation: objectName.describe('VectorActivation this execution belongs to.'),
    vectorDeployment: objectName.optional(),
    stage: objectName,
    stageVersion: objectName.describe('StageVersion that traffic is switched to (Apply) or away from (Revert).'),
    previousStageVersion: objectName.optional().describe('StageVersion that was active before; the Revert target.'),
    step: dnsLabel.describe('Plan step this execution belongs to.'),
    action: z.enum(executionActions).default('Apply'),
    spec: freeform().optional().describe('Executor configuration, copied from the registration.'),
    timeoutSeconds: z.int().min(1).max(86400),
  }),
  'spec of an ActivationExecution',
);

/**
 * Reasons the core writes when it gives up on an execution; an External executor that sees one of
 * them with phase Error stops (and undoes what it started). The final phase cannot change afterwards.
 */
export const ABANDONED_REASONS = ['TimedOut', 'Cancelled'] as const;

export const activationExecutionStatus = transitionRule(
  statusOf(executionPhases, {
    startTime: timestamp.optional(),
    completionTime: timestamp.optional(),
  }),
  {
    rule: "!has(oldSelf.phase) || !(oldSelf.phase in ['Succeeded', 'Error']) || (has(self.phase) && self.phase == oldSelf.phase)",
    message: 'status.phase is final once Succeeded or Error: the activation has already acted on it',
  },
);

export const ActivationExecution = defineKind({
  kind: 'ActivationExecution',
  plural: 'activationexecutions',
  singular: 'activationexecution',
  shortNames: ['ae'],
  description: 'One activation task run by its executor (ADR-0012).',
  spec: activationExecutionSpec,
  status: activationExecutionStatus,
  printerColumns: [
    { name: 'Type', type: 'string', jsonPath: '.spec.type' },
    { name: 'Action', type: 'string', jsonPath: '.spec.action' },
    { name: 'Activation', type: 'string', jsonPath: '.spec.vectorActivation' },
    { name: 'Step', type: 'string', jsonPath: '.spec.step', priority: 1 },
    { name: 'Message', type: 'string', jsonPath: '.status.message', priority: 1 },
  ],
});
export const activationExecutionResource = resourceSchema(ActivationExecution);
export type ActivationExecutionResource = z.infer<typeof activationExecutionResource>;
