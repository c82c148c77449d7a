/**
 * ActivationExecution (ADR-0012): one task of one activation. Worker executors report through the
 * workflow; External executors watch these objects and write their status themselves.
 */
import { z } from 'zod';
import { defineKind, resourceSchema } from './kind.js';
import { dnsLabel, freeform, immutable, objectName, routeRef, statusOf, timestamp, transitionRule } from './meta.js';
import { executionPhases } from './vector-activation.js';

export const executionActions = ['Apply', 'Revert'] as const;

/**
 * Traffic as an absolute assignment: StageVersion name → percent of a managed rule's traffic. The
 * percents sum to 100; a StageVersion that is not named gets none.
 */
export const trafficAssignment = z
  .record(z.string().min(1).max(253), z.int().min(0).max(100))
  .describe('StageVersion → percent of every managed rule; the percents sum to 100.');
export type TrafficAssignment = z.infer<typeof trafficAssignment>;

export { routeRef, type RouteRef } from './meta.js';

/** One managed rule of one routing object, as a task found it before its first write. */
export const ruleRecord = z.object({
  route: routeRef,
  index: z.int().min(0).describe('Position of the rule (HTTPRoute rules[], VirtualService http[]).'),
  name: z
    .string()
    .min(1)
    .max(253)
    .optional()
    .describe('Name of the rule, when it has one: a restore finds it by name.'),
  entries: z
    .array(freeform())
    .max(16)
    .describe('The managed entries (backendRefs, route destinations) exactly as found, weights included; empty: none.'),
  traffic: z
    .record(z.string().min(1).max(512), z.int().min(0))
    .describe("Weight per StageVersion as found (a backend that is no StageVersion's by its reference)."),
});
export type RuleRecord = z.infer<typeof ruleRecord>;

/** What a task manages as it found it; a revert puts exactly this back. */
export const trafficRecord = z.object({
  rules: z.array(ruleRecord).max(64),
  time: timestamp.describe('When it was recorded: before the task changed anything.'),
});
export type TrafficRecord = z.infer<typeof trafficRecord>;

export const activationExecutionSpec = immutable(
  z.object({
    type: dnsLabel.describe('Executor type, copied from the registration.'),
    registration: objectName.describe('ActivationTaskRegistration this execution runs.'),
    vectorActivation: objectName.describe('VectorActivation this execution belongs to.'),
    vectorDeployment: objectName.optional(),
    stage: objectName,
    stageVersion: objectName.describe('StageVersion that traffic is switched to (Apply) or away from (Revert).'),
    previousStageVersion: objectName.optional().describe('StageVersion that was active when the activation started.'),
    assignment: trafficAssignment.optional().describe('Apply: the traffic every managed rule must hold afterwards.'),
    revertOf: objectName
      .optional()
      .describe('Revert: the Apply ActivationExecution whose status.record to put back, exactly as recorded.'),
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
    // What a revert puts back: written once, before the first change, never changed afterwards.
    record: immutable(trafficRecord, 'status.record (what was there before the task changed anything)')
      .optional()
      .describe('What the task manages as it found it, written once before its first change; a Revert restores it.'),
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
