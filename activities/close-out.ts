/**
 * Bringing the objects back to truth in the watcher's own process, when an activation's workflow
 * closed without finishing it and its close-out run (workflows/activation-run.ts, closeOut) closed
 * too, or could not be started: its unfinished executions end (Error, reason Cancelled), the
 * activation usage goes unless one of its tasks may have sent its StageVersion traffic, the
 * StageVersion mark goes, the Stage's Lease is released, the VectorActivation gets its final status
 * (Failed, saying why), and the close-out finalizer goes. Nothing is reverted here: only the
 * executors can, and they run for workflows. Each step is idempotent; the status is written last
 * but the finalizer, so whoever reads the final phase finds everything released.
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
import { executionWrites, ownExecutions } from './executions.js';
import { closeOutFinalizerActivities } from './close-out-finalizer.js';

export interface CloseOut {
  reason: string;
  message: string;
}

/** True when it closed the activation out; false when it was gone or had ended already. */
export async function closeOutActivation(deps: CoreDeps, ref: ActivationRef, why: CloseOut): Promise<boolean> {
  const { objects } = deps;
  const va = await objects.get('VectorActivation', ref.namespace, ref.name);
  if (!va || va.metadata.uid !== ref.uid) return false;
  const finalizer = closeOutFinalizerActivities(deps);
  if (isFinal(va.status?.phase)) {
    await finalizer.removeCloseOutFinalizer(ref, va);
    return false;
  }
  const holder = holderOf(ref);
  // ADR-0012's order: every execution ends first, with a reason an External controller acts on
  // (it stops), and only then is the Stage let go.
  const executions = await ownExecutions(objects, ref);
  await executionWrites(objects).endUnfinished(ref.namespace, executions, why.message);
  // The activation usage stays while a route its tasks changed may send the StageVersion traffic
  // (an Apply execution recorded its rules and assigned it a share): nothing reverts them here. The
  // Stage controller's serving mark then protects it for as long as a route does.
  const applied = executions.some((e) => e.spec.action === 'Apply' && (e.status?.record?.rules?.length ?? 0) > 0 && (e.spec.assignment?.[va.spec.stageVersion] ?? 0) > 0);
  if (!applied) await usageActivities(deps).releaseActivationUsage(ref);
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
  await finalizer.removeCloseOutFinalizer(ref);
  return true;
}
