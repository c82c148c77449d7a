/**
 * One workflow per VectorActivation: load it, then run attempts (attempt.ts) until one succeeds or
 * is skipped. Failed and Cancelled activations stay open for a retry (Update or signal, or the
 * annotation) for RETRY_WINDOW; a cancel or a deletion closes them. Every handler is registered
 * here, in one block; what they ask goes into the requests mailbox (requests.ts).
 */
import {
  condition,
  isCancellation,
  setHandler,
  setWorkflowOptions,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import { isFinal, isRetryable, type StepProgress } from '../../decisions/activation.js';
import {
  abortSignal,
  abortUpdate,
  approveSignal,
  approveUpdate,
  cancelSignal,
  cancelUpdate,
  progressQuery,
  promoteSignal,
  promoteUpdate,
  retrySignal,
  retryUpdate,
  stageDeletedSignal,
  type ActivationProgress,
  type ActivationRef,
} from '../../shared/activation.js';
import { K8S_NAMESPACE, STAGE, STAGE_VERSION, VECTOR } from '../../shared/search-attributes.js';
import { bookkeeping } from './bookkeeping-activities.js';
import { ActivationRequests, type Action } from './requests.js';
import { ActivationRun, type RunOptions } from './run.js';

/** How long a Failed or Cancelled activation stays open for a retry. */
const RETRY_WINDOW = '7 days';

export interface ActivationOptions extends RunOptions {
  /**
   * 'retry': the watcher started this workflow for a retry asked of a Failed or Cancelled object
   * whose workflow had closed. Without it, an object in a final phase is never run again.
   * 'close-out': the run before closed without finishing (`closeOut` says how); this run puts
   * back what it changed and ends the activation Failed (close-out.ts).
   */
  resume?: 'retry' | 'close-out';
  closeOut?: { reason: string; message: string };
}

/**
 * Under Worker Versioning an activation runs to its end on the build that started it (docs/scale.md).
 * Declared only on a versioned worker: an unversioned one must not send a behaviour (the SDK refuses).
 */
setWorkflowOptions(
  () => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: 'PINNED' } : {}),
  vectorActivation,
);
export async function vectorActivation(
  ref: ActivationRef,
  options: ActivationOptions = {},
): Promise<ActivationProgress> {
  const progress: ActivationProgress & { steps: StepProgress[] } = { phase: 'Pending', attempt: 1, steps: [] };
  const requests = new ActivationRequests(progress);

  // An Update answers whether it was accepted, or is refused with the reason; a signal cannot answer.
  const onUpdate = (update: typeof cancelUpdate, action: Action) =>
    setHandler(update, (request) => ({ outcome: 'Accepted' as const, message: requests.apply(action, request) }), {
      validator: (request) => {
        const decision = requests.decide(action, request);
        if (!decision.accepted) throw new Error(decision.message);
      },
    });
  setHandler(progressQuery, () => progress);
  setHandler(stageDeletedSignal, (deletion) => requests.stageDeletionSeen(deletion));
  setHandler(cancelSignal, (request) => requests.handle('cancel', request));
  setHandler(retrySignal, (request) => requests.handle('retry', request));
  setHandler(approveSignal, (request) => requests.handle('approve', request));
  setHandler(promoteSignal, (request) => requests.handle('promote', request));
  setHandler(abortSignal, (request) => requests.handle('abort', request));
  onUpdate(cancelUpdate, 'cancel');
  onUpdate(retryUpdate, 'retry');
  onUpdate(approveUpdate, 'approve');
  onUpdate(promoteUpdate, 'promote');
  onUpdate(abortUpdate, 'abort');

  const va = await bookkeeping.loadActivation(ref);
  if (!va) return progress; // deleted before we started: nothing to do, nothing to report to
  // The object's status is the record of what ran, not Temporal's retention: a final one is not
  // run again unless a retry was asked for.
  const recorded = va.status;
  if (isFinal(recorded.phase) && !(options.resume === 'retry' && isRetryable(recorded.phase))) {
    return { ...progress, phase: recorded.phase!, steps: recorded.steps ?? [] };
  }
  progress.attempt = (recorded.attempt ?? 1) + (options.resume === 'retry' ? 1 : 0);
  progress.steps = recorded.steps ?? [];
  upsertSearchAttributes([
    { key: STAGE, value: va.stage },
    { key: STAGE_VERSION, value: va.stageVersion },
    { key: K8S_NAMESPACE, value: ref.namespace },
    ...(va.vector ? [{ key: VECTOR, value: va.vector }] : []),
  ]);
  const run = new ActivationRun(ref, va, requests, progress, options);
  if (options.resume === 'close-out') {
    const why = options.closeOut ?? {
      reason: 'WorkflowClosed',
      message: "the activation's previous workflow run closed without finishing",
    };
    await run.closeOut(why);
    return progress;
  }
  // An earlier run may have switched traffic already: order it as a retry, not as a fresh start.
  const resumed = options.resume === 'retry' || recorded.phase === 'InProgress';
  try {
    for (let retry = resumed; ; retry = true) {
      const ending = await run.attempt(retry);
      if (ending.phase === 'Succeeded' || ending.phase === 'Skipped' || requests.closing) return progress;
      // Failed or Cancelled: stay open for a retry. A retry that arrived while this attempt was
      // still cleaning up counts; a cancel now closes the window.
      requests.attemptEnded();
      const woken = await condition(
        () => requests.retryPending || requests.cancelled || requests.closing,
        RETRY_WINDOW,
      );
      if (!woken || !requests.retryPending || requests.closing) return progress;
      requests.takeRetry();
      progress.attempt++;
    }
  } catch (err) {
    if (isCancellation(err)) await run.cancelledInTemporal();
    throw err;
  }
}
