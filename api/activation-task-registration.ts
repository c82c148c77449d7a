/** ActivationTaskRegistration (ADR-0012): a pluggable activation task and the executor that runs it. */
import { z } from 'zod';
import { defineKind, resourceSchema } from './kind.js';
import { dnsLabel, freeform, rule, statusOf } from './meta.js';

export const executorModes = ['Worker', 'External'] as const;

export const activationTaskRegistrationSpec = rule(
  z.object({
    type: dnsLabel.describe(
      'Executor type, e.g. gateway-api or istio. Worker-executed types run on task queue konfidence-executor-<type>.',
    ),
    executor: z
      .enum(executorModes)
      .default('Worker')
      .describe(
        'Worker: an activity worker of this type runs the task. External: an outside controller watches ' +
          'ActivationExecutions of this type and sets their status.',
      ),
    spec: freeform().optional().describe('Executor-specific configuration, validated by the executor type.'),
    timeoutSeconds: z
      .int()
      .min(1)
      .max(86400)
      .default(300)
      .describe('Longest time one execution may take; past it the execution is aborted and ends Error.'),
    allowCrossNamespaceFrom: z
      .array(dnsLabel)
      .max(64)
      .meta({ 'x-kubernetes-list-type': 'set' })
      .optional()
      .describe(
        'Namespaces whose VectorActivations may use this registration to change routes outside their own ' +
          'namespace ("*": any). Without it, an activation changes routes in its own namespace only.',
      ),
    heartbeatTimeoutSeconds: z
      .int()
      .min(1)
      .max(3600)
      .optional()
      .describe('How long a Worker executor may go silent before it is considered lost and retried.'),
  }),
  {
    rule: '!has(self.heartbeatTimeoutSeconds) || self.heartbeatTimeoutSeconds <= self.timeoutSeconds',
    message: 'heartbeatTimeoutSeconds must not exceed timeoutSeconds',
    fieldPath: '.heartbeatTimeoutSeconds',
  },
  (s) => s.heartbeatTimeoutSeconds === undefined || s.heartbeatTimeoutSeconds <= s.timeoutSeconds,
);

export const activationTaskRegistrationStatus = statusOf(['Ready', 'Invalid'] as const, {});

export const ActivationTaskRegistration = defineKind({
  kind: 'ActivationTaskRegistration',
  plural: 'activationtaskregistrations',
  singular: 'activationtaskregistration',
  shortNames: ['atr'],
  description: 'Registers an activation task: its executor type, configuration and timeout (ADR-0012).',
  spec: activationTaskRegistrationSpec,
  status: activationTaskRegistrationStatus,
  printerColumns: [
    { name: 'Type', type: 'string', jsonPath: '.spec.type' },
    { name: 'Executor', type: 'string', jsonPath: '.spec.executor' },
    { name: 'Timeout', type: 'integer', jsonPath: '.spec.timeoutSeconds' },
  ],
});
export const activationTaskRegistrationResource = resourceSchema(ActivationTaskRegistration);
export type ActivationTaskRegistrationResource = z.infer<typeof activationTaskRegistrationResource>;
