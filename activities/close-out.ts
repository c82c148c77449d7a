/**
 * Bringing the objects back to truth when an activation's workflow closed without finishing it
 * (terminated, timed out, failed, or lost to retention): the activation usage and the StageVersion
 * mark go, the Stage's Lease is released, and the VectorActivation gets its final status (Failed,
 * saying why). Each step is idempotent; the status is written last, so whoever reads the final
 * phase finds everything released. The watcher runs it.
 */
import { isFinal } from '../decisions/activation.js';
import { conditionsAfter } from './activation-status.js';
import { kubeTime } from '../shared/format.js';
import { holderOf, type ActivationRef } from '../shared/activation.js';
import { activationEvents, type StatusView } from '../decisions/events.js';
import { recordEvents } from '../k8s/events.js';
import type { CoreDeps } from './deps.js';
import { releaseStageLease } from './lease.js';
import { stageVersionActivities } from './stage-versions.js';
import { usageActivities } from './usages.js';

export interface CloseOut {
  reason: string;
  message: string;
}

/** True when it closed the activation out; false when it was gone or had ended already. */
export async function closeOutActivation(deps: CoreDeps, ref: ActivationRef, why: CloseOut): Promise<boolean> {
  const { objects } = deps;
  const va = await objects.get('VectorActivation', ref.namespace, ref.name);
  if (!va || va.metadata.uid !== ref.uid || isFinal(va.status?.phase)) return false;
  const holder = holderOf(ref);
  await usageActivities(deps).releaseActivationUsage(ref);
  await stageVersionActivities(deps).unmarkStageVersion(ref.namespace, va.spec.stageVersion, holder);
  await releaseStageLease(deps, ref.namespace, va.spec.stage, holder);
  const conditions = conditionsAfter(va, 'Failed', why.reason, why.message);
  const before = (va.status ?? {}) as StatusView;
  const firstError = va.status?.firstError ?? why.message;
  const facts = { name: ref.name, stage: va.spec.stage, stageVersion: va.spec.stageVersion };
  await recordEvents(deps.event, ref.namespace, activationEvents(facts, before, { ...before, phase: 'Failed', reason: why.reason, message: why.message, firstError }), { [`VectorActivation/${ref.name}`]: ref.uid });
  await objects.patchStatus('VectorActivation', ref.namespace, ref.name, {
    phase: 'Failed',
    reason: why.reason,
    message: why.message,
    firstError,
    completionTime: kubeTime(),
    observedGeneration: va.metadata.generation,
    conditions,
  });
  return true;
}
