/**
 * Marks an activation that the namespace's Stage limit holds back (decisions/fair-share.ts): phase
 * Waiting, reason NamespaceLimit, so `kubectl get va` says why it has not started. The watcher runs
 * it for activations that have no workflow yet; the write is conditional on the resourceVersion it
 * read, so it never lands over a status a workflow wrote meanwhile. Repeating it changes nothing.
 */
import { isFinal } from '../decisions/activation.js';
import { conditionsAfter } from './activation-status.js';
import { NAMESPACE_LIMIT_REASON } from '../decisions/fair-share.js';
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
