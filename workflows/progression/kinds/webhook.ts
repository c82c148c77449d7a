/** An HTTP check step: a local activity with the check's timeout and retries; a failure aborts. */
import { proxyLocalActivities } from '@temporalio/workflow';
import type { ActivationActivities } from '../../../activities/core.js';
import { gateReason, stepLabel } from '../../../decisions/progression.js';
import { causeOf, messageOf } from '../../failures.js';
import { httpCheck } from '../../policies.js';
import type { StepHandler } from './index.js';

const webhookOf = (timeoutSeconds: number, retries: number) =>
  proxyLocalActivities<ActivationActivities>(httpCheck(timeoutSeconds, retries)).callWebhook;

export const webhookStep: StepHandler<'webhook'> = async (progression, check, step) => {
  const label = stepLabel(progression.spec, step);
  const message = `${label}: calling ${check.url}`;
  progression.showGate({ type: 'Webhook', onTimeout: 'abort', message }, Date.now());
  await progression.writeStatus(gateReason('Webhook'), message);
  try {
    const body = progression.host.webhookBody(step, progression.spec.steps[step]?.name, progression.weight);
    await webhookOf(check.timeoutSeconds, check.retries)(check.url, body, check.timeoutSeconds);
    progression.showGate(undefined);
    return { next: 'next' };
  } catch (err) {
    progression.showGate(undefined);
    return { next: 'abort', reason: 'CheckFailed', why: `${label}: the HTTP check failed: ${messageOf(causeOf(err))}` };
  }
};
