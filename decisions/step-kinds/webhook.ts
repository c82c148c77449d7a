/** An HTTP check at a step: a 2xx goes on, anything else (after its retries) aborts. */
import type { GateTypeRules, StepKindRules } from './types.js';

export const webhookStep: StepKindRules<'webhook'> = {
  kind: 'webhook',
  of: (step) => (step.webhook ? { kind: 'webhook', ...step.webhook } : undefined),
};

export const webhookGateRules: GateTypeRules = {
  reason: 'CallingWebhook',
  event: 'WaitingForWebhook',
  approvable: false,
  runs: 'an HTTP check',
};
