/**
 * Bringing the objects back to truth in the activation controller's own process, when an
 * activation's workflow closed without finishing it and its close-out run
 * (workflows/activation/close-out.ts) closed too, or could not be started: its unfinished
 * executions end (Error, reason Cancelled), the activation usage goes unless one of its tasks may
 * have sent its StageVersion traffic, the StageVersion mark goes, the Stage's Lease is released,
 * the VectorActivation gets its final status (Failed, saying why; k8s/activation-store.ts), and the
 * close-out finalizer goes. Nothing is reverted here: only the executors can, and they run for
 * workflows. Each step is idempotent and is the same step the workflow's activities take; the
 * status is written last but the finalizer, so whoever reads the final phase finds everything
 * released.
 */
import { isFinal } from '../../decisions/activation.js';
import { holderOf, type ActivationRef } from '../../shared/activation.js';
import { readActivation, writeClosedOut } from '../../k8s/activation-store.js';
import type { CoreDeps } from '../../activities/deps.js';
import { releaseStageLease } from '../../activities/lease.js';
import { stageVersionActivities } from '../../activities/stage-versions.js';
import { usageActivities } from '../../activities/usages.js';
import { executionWrites, ownExecutions } from '../../activities/executions.js';
import { closeOutFinalizerActivities } from '../../activities/close-out-finalizer.js';

export interface CloseOut {
  reason: string;
  message: string;
}

/** True when it closed the activation out; false when it was gone or had ended already. */
export async function closeOutActivation(deps: CoreDeps, ref: ActivationRef, why: CloseOut): Promise<boolean> {
  const { objects } = deps;
  const va = await readActivation(deps, ref);
  if (!va) return false;
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
  const applied = executions.some(
    (object) =>
      object.spec.action === 'Apply' &&
      (object.status?.record?.rules?.length ?? 0) > 0 &&
      (object.spec.assignment?.[va.spec.stageVersion] ?? 0) > 0,
  );
  if (!applied) await usageActivities(deps).releaseActivationUsage(ref);
  await stageVersionActivities(deps).unmarkStageVersion(ref.namespace, va.spec.stageVersion, holder);
  await releaseStageLease(deps, ref.namespace, va.spec.stage, holder);
  await writeClosedOut(deps, ref, va, why);
  await finalizer.removeCloseOutFinalizer(ref);
  return true;
}
