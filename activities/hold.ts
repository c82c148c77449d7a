/**
 * What the watcher writes on activations that have no workflow yet: held back by the namespace's
 * Stage limit (decisions/fair-share.ts: phase Waiting, reason NamespaceLimit, so `kubectl get va`
 * says why it has not started), or superseded before it started (decisions/supersede.ts). Each
 * write is conditional on the resourceVersion it read, so it never lands over a status a workflow
 * wrote meanwhile. Repeating it changes nothing.
 */
import { isFinal, reasonOf } from '../decisions/activation.js';
import { activationEvents, type StatusView } from '../decisions/events.js';
import { NAMESPACE_LIMIT_REASON } from '../decisions/fair-share.js';
import { SUPERSEDED_REASON } from '../decisions/supersede.js';
import { sendEvents } from '../k8s/events.js';
import { kubeTime } from '../shared/format.js';
import { recordActivationPhase } from '../telemetry/metrics.js';
import { conditionsAfter } from './activation-status.js';
import type { ActivationRef } from '../shared/activation.js';
import type { CoreDeps } from './deps.js';

/** True when it wrote the held status; false when gone, started, finished or already marked. */
export async function holdActivation(deps: CoreDeps, ref: ActivationRef, message: string): Promise<boolean> {
  const va = await deps.objects.get('VectorActivation', ref.namespace, ref.name);
  if (!va || va.metadata.uid !== ref.uid) return false;
  const status = va.status ?? {};
  if (isFinal(status.phase) || status.workflowId || (status.reason === NAMESPACE_LIMIT_REASON && status.message === message)) return false;
  return deps.objects.patchStatusAt('VectorActivation', ref.namespace, ref.name, va.metadata.resourceVersion!, {
    phase: 'Waiting',
    reason: NAMESPACE_LIMIT_REASON,
    message,
    observedGeneration: va.metadata.generation,
    conditions: conditionsAfter(va, 'Waiting', NAMESPACE_LIMIT_REASON, message),
  });
}

/**
 * Ends an activation that has no workflow yet as Skipped/Superseded (decisions/supersede.ts), with
 * its Events; conditional on the resourceVersion read, like the hold. True when the activation is
 * final now (this write, or an earlier one: it must not start); false when it is gone, has a
 * workflow, or changed since the read (it starts, and its workflow decides).
 */
export async function skipBeforeStart(deps: CoreDeps, ref: ActivationRef, message: string): Promise<boolean> {
  const va = await deps.objects.get('VectorActivation', ref.namespace, ref.name);
  if (!va || va.metadata.uid !== ref.uid) return false;
  const before = (va.status ?? {}) as StatusView;
  if (isFinal(before.phase)) return true;
  if (va.status?.workflowId) return false;
  const after = { phase: 'Skipped', reason: SUPERSEDED_REASON, message };
  const written = await deps.objects.patchStatusAt('VectorActivation', ref.namespace, ref.name, va.metadata.resourceVersion!, {
    ...after,
    completionTime: kubeTime(),
    observedGeneration: va.metadata.generation,
    conditions: conditionsAfter(va, 'Skipped', SUPERSEDED_REASON, message),
  });
  if (!written) return false;
  const facts = { name: ref.name, stage: va.spec.stage, stageVersion: va.spec.stageVersion };
  sendEvents(deps.event, ref.namespace, activationEvents(facts, before, after), { [`VectorActivation/${ref.name}`]: ref.uid }, deps.log);
  recordActivationPhase(va, 'Skipped', reasonOf(SUPERSEDED_REASON));
  return true;
}
