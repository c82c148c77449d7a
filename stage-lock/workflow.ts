/**
 * One lock workflow per Stage (id `stage-lock/<namespace>/<stage>`): grants the Stage to one
 * activation at a time, across all workers and restarts. While activations wait, the newest
 * supersedes the older ones, so a burst of N activations runs O(1).
 *
 * The rules are rules.ts; this loop feeds them what happens (signals, Updates, time, holder checks)
 * and carries out what they say: signals to requesters, Update answers, holder checks, timers,
 * continue-as-new and the end of an idle run.
 *
 * The lock never expires on its own: it is released by its holder, or taken back when the holder's
 * workflow is found closed (terminated, say). That is what keeps a second activation out while
 * executions still run, whatever happens to the Kubernetes Lease that mirrors it.
 */
import {
  allHandlersFinished,
  condition,
  continueAsNew,
  getExternalWorkflowHandle,
  log,
  proxyActivities,
  setHandler,
  setWorkflowOptions,
  workflowInfo,
} from '@temporalio/workflow';
import type { LockActivities } from './activities.js';
import {
  expectLockSignal,
  lockGrantedSignal,
  lockNewerWaitingSignal,
  lockStateQuery,
  lockSupersededSignal,
  releaseLockSignal,
  releaseLockUpdate,
  requestLockSignal,
  requestLockUpdate,
  type LockRequest,
  type LockState,
} from './contract.js';
import {
  expectation,
  grantable,
  idle,
  initialState,
  isSignal,
  kept,
  step,
  type LockEvent,
  type LockNotice,
  type LockSignalNotice,
} from './rules.js';
import { LOCK_HOLDER_CHECK } from '../workflows/policies.js';

/**
 * A check that fails (Temporal unreachable, say) gives up after a few attempts instead of retrying
 * for ever: the lock logs it and checks again at the next period.
 */
const { isWorkflowOpen } = proxyActivities<LockActivities>(LOCK_HOLDER_CHECK);

/**
 * How long an idle lock waits for a next request before it finishes. A request that meets the
 * task closing the lock makes the server refuse that task, and an Update around the refusal was
 * seen waiting about 2 s (bench:burst: a burst's expectLock met the lock finishing after the
 * activation before it). Activations of a Stage that come within this of each other find the lock
 * running; a request meets it closing only when it arrives just as the linger runs out.
 */
export const IDLE_LINGER_MS = 10_000;

/** How often the lock checks that its holder's workflow is still open. */
export const HOLDER_CHECK_MS = 60_000;

/**
 * Continue-as-new past this many history events when the server has not suggested it before (the
 * real server suggests it much earlier; the time-skipping test server never does).
 */
const DEFAULT_HISTORY_LIMIT = 10_000;

export interface StageLockOptions {
  /** Continue-as-new once the history has this many events (default 10,000). */
  historyLimit?: number;
}

/**
 * Under Worker Versioning the lock follows the current build (AUTO_UPGRADE): it lives as long as its
 * Stage is busy and continues as new, so pinned it would keep an old build alive for ever. Hence its
 * state (LockState) and its signals must stay compatible across builds: a new build reads what an
 * old one wrote and answers an old activation's requests (docs/scale.md, "Controller versions").
 * Declared only on a versioned worker: an unversioned one must not send a behaviour (the SDK refuses).
 */
setWorkflowOptions(
  () => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: 'AUTO_UPGRADE' } : {}),
  stageLock,
);
export async function stageLock(initial: LockState = { waiting: [] }, options: StageLockOptions = {}): Promise<void> {
  let state = initialState(initial);
  const outbox: LockSignalNotice[] = [];
  const historyLimit = options.historyLimit ?? DEFAULT_HISTORY_LIMIT;

  // The holder check runs on its own schedule, however busy the lock is: waking up for every
  // signal must not postpone it (under steady traffic a timed-out wait would never happen).
  // Date.now() is the workflow's deterministic clock.
  let nextCheck = Date.now() + HOLDER_CHECK_MS;
  let checking = false;
  let checksFinished = 0;

  /** Feeds `event` to the rules; their signals go out at the next delivery, the rest is returned. */
  function apply(event: LockEvent): LockNotice[] {
    const next = step(state, event, Date.now());
    state = next.state;
    outbox.push(...next.notices.filter(isSignal));
    return next.notices;
  }

  setHandler(lockStateQuery, () => kept(state));
  setHandler(expectLockSignal, (request) => void apply({ type: 'expect', request }));
  setHandler(requestLockSignal, (request) => void apply({ type: 'request', request, by: 'signal' }));
  setHandler(
    requestLockUpdate,
    (request) => apply({ type: 'request', request, by: 'update' }).find((n) => n.type === 'answer')!.answer,
  );
  setHandler(releaseLockSignal, ({ requester }) => void apply({ type: 'release', requester, by: 'signal' }));
  setHandler(
    releaseLockUpdate,
    ({ requester }) => apply({ type: 'release', requester, by: 'update' }).find((n) => n.type === 'released')!.answer,
  );

  /** Nothing held, waiting, expected or left to send. */
  const quiet = () => idle(state, Date.now()) && outbox.length === 0;
  /** Idle, it waited IDLE_LINGER_MS already and nothing came: it finishes. */
  let lingered = false;

  /** Looks at the holder's workflow in the background; the lock keeps answering meanwhile. */
  function checkHolder(holder: LockRequest): void {
    checking = true;
    nextCheck = Date.now() + HOLDER_CHECK_MS;
    isWorkflowOpen(holder.requester)
      .then(
        (open) => {
          if (open) return;
          if (apply({ type: 'closed', requester: holder.requester }).some((n) => n.type === 'takenBack')) {
            log.warn('lock holder closed without releasing the Stage; taking the lock back', { holder });
          }
        },
        (err: unknown) => {
          log.warn('could not check that the lock holder still runs; checking again at the next period', {
            holder,
            error: String(err),
          });
        },
      )
      .finally(() => {
        checking = false;
        checksFinished++;
      });
  }

  async function deliver(notices: LockSignalNotice[]): Promise<void> {
    for (const n of notices) {
      const target = getExternalWorkflowHandle(n.to);
      try {
        if (n.type === 'newerWaits')
          await target.signal(lockNewerWaitingSignal, { by: n.newer.activation, revision: n.newer.revision });
        else if (n.type === 'granted') await target.signal(lockGrantedSignal, { lock: workflowInfo().workflowId });
        else await target.signal(lockSupersededSignal, { by: n.by.activation, revision: n.by.revision });
      } catch (err) {
        // The requester's workflow is closed or gone: the Stage is never left granted to it.
        log.warn('lock notice not delivered', { to: n.to, error: String(err) });
        if (n.type === 'granted') apply({ type: 'closed', requester: n.to });
      }
    }
  }

  for (;;) {
    await deliver(outbox.splice(0));
    if (apply({ type: 'tick' }).some((n) => n.type === 'granted')) continue;
    if (quiet()) {
      // Idle: finish, once a check still running is done (a request meanwhile is served at once),
      // after the linger below. A request after that starts a new run (signal-with-start).
      await condition(() => (allHandlersFinished() && !checking) || !quiet());
      // It lingers (IDLE_LINGER_MS), serving whatever comes meanwhile, and finishes in a task of
      // its own, at the timer: never in the workflow task of a release Update, where a signal
      // arriving meanwhile made the server refuse the task and hold up the lock's signals for 2-3 s.
      if (quiet() && !lingered) {
        lingered = true;
        // Cut short (a request, or only a notice to send): it lingers afresh when idle again.
        if (await condition(() => !quiet(), IDLE_LINGER_MS)) lingered = false;
        continue;
      }
      if (quiet()) return;
      continue;
    }
    lingered = false;
    // The holder is checked only while someone waits for the Stage: a holder waiting at a gate for
    // days costs nothing until then.
    const contended = state.holder !== undefined && state.waiting.length > 0;
    if (contended && !checking && Date.now() >= nextCheck) checkHolder(state.holder!);
    const info = workflowInfo();
    if (outbox.length === 0 && !checking && (info.continueAsNewSuggested || info.historyLength >= historyLimit)) {
      await condition(allHandlersFinished);
      if (outbox.length === 0) await continueAsNew<typeof stageLock>(kept(state), options);
      continue;
    }
    // Wake for a notice to send, a Stage to hand on, nothing left to do, a finished check, the
    // next check's time, or the end of a wait for an expected request.
    const finished = checksFinished;
    const expected = expectation(state, Date.now());
    const untilCheck = contended && !checking ? Math.max(nextCheck - Date.now(), 1) : undefined;
    const untilExpected = expected ? Math.max(expected.until - Date.now(), 1) : undefined;
    const timeouts = [untilCheck, untilExpected].filter((wait) => wait !== undefined);
    const timeout = timeouts.length > 0 ? Math.min(...timeouts) : undefined;
    const waiters = state.waiting.length;
    const wake = () =>
      outbox.length > 0 ||
      grantable(state, Date.now()) ||
      quiet() ||
      checksFinished !== finished ||
      expectation(state, Date.now()) !== expected ||
      (waiters === 0) !== (state.waiting.length === 0);
    if (timeout === undefined) await condition(wake);
    else await condition(wake, timeout);
  }
}
