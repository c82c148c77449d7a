/**
 * One lock workflow per Stage (id `stage-lock/<namespace>/<stage>`): grants the Stage to one
 * activation at a time, across all workers and restarts. While activations wait, the newest
 * (highest StageVersion revision) supersedes the older ones, so a burst of N activations runs O(1).
 *
 * The lock never expires on its own: it is released by its holder, or taken back when the holder's
 * workflow is found closed (terminated, say). That is what keeps a second activation out while
 * executions still run, whatever happens to the Kubernetes Lease that mirrors it.
 */
import {
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  proxyActivities,
  setHandler,
  workflowInfo,
  allHandlersFinished,
} from '@temporalio/workflow';
import type { LockActivities } from '../activities/lock.js';
import {
  lockGrantedSignal,
  lockStateQuery,
  lockSupersededSignal,
  releaseLockSignal,
  requestLockSignal,
  type LockRequest,
  type LockState,
} from '../shared/activation.js';

const { isWorkflowOpen } = proxyActivities<LockActivities>({
  startToCloseTimeout: '30 seconds',
  summary: 'check that the lock holder still runs',
});

/** How often the lock checks that its holder's workflow is still open. */
const HOLDER_CHECK = '1 minute';

type Notice = { to: string; granted: true } | { to: string; granted: false; by: LockRequest };

export async function stageLock(initial: LockState = { waiting: [] }): Promise<void> {
  const state: LockState = { holder: initial.holder, waiting: [...initial.waiting] };
  const outbox: Notice[] = [];

  setHandler(lockStateQuery, () => state);

  setHandler(requestLockSignal, (req) => {
    if (state.holder?.requester === req.requester) {
      // The requester asked again (its activity was retried): confirm, do not queue it twice.
      outbox.push({ to: req.requester, granted: true });
      return;
    }
    if (state.waiting.some((w) => w.requester === req.requester)) return;
    const newer = state.waiting.find((w) => w.revision > req.revision);
    if (newer) {
      outbox.push({ to: req.requester, granted: false, by: newer });
      return;
    }
    // Equal revisions: the later request wins, as a later kubectl apply would.
    for (const older of state.waiting) outbox.push({ to: older.requester, granted: false, by: req });
    state.waiting = [req];
  });

  setHandler(releaseLockSignal, ({ requester }) => {
    if (state.holder?.requester === requester) state.holder = undefined;
    state.waiting = state.waiting.filter((w) => w.requester !== requester);
  });

  for (;;) {
    const woke = await condition(() => outbox.length > 0 || !state.holder, HOLDER_CHECK);
    await deliver(outbox.splice(0), state);
    if (!state.holder && state.waiting.length > 0) {
      state.holder = state.waiting.shift();
      outbox.push({ to: state.holder!.requester, granted: true });
      continue;
    }
    if (!state.holder && state.waiting.length === 0 && outbox.length === 0) {
      // Idle: finish. The next request starts a new run (signal-with-start).
      await condition(allHandlersFinished);
      if (!state.holder && state.waiting.length === 0 && outbox.length === 0) return;
      continue;
    }
    if (!woke && state.holder && !(await isWorkflowOpen(state.holder.requester))) {
      log.warn('lock holder closed without releasing the Stage; taking the lock back', { holder: state.holder });
      state.holder = undefined;
    }
    if (workflowInfo().continueAsNewSuggested && outbox.length === 0) {
      await condition(allHandlersFinished);
      await continueAsNew<typeof stageLock>(state);
    }
  }
}

async function deliver(notices: Notice[], state: LockState): Promise<void> {
  for (const n of notices) {
    const target = getExternalWorkflowHandle(n.to);
    try {
      if (n.granted) await target.signal(lockGrantedSignal, { lock: workflowInfo().workflowId });
      else await target.signal(lockSupersededSignal, { by: n.by.activation, revision: n.by.revision });
    } catch (err) {
      // The requester's workflow is gone: a grant to it must not block the Stage.
      log.warn('lock notice not delivered', { to: n.to, error: String(err) });
      if (n.granted && state.holder?.requester === n.to) state.holder = undefined;
    }
  }
}
