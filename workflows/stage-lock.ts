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
import type { LockActivities } from '../activities/lock.js';
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
  type LockAnswer,
  type LockRequest,
  type LockState,
  type ReleaseAnswer,
} from '../shared/activation.js';

/**
 * A check that fails (Temporal unreachable, say) gives up after a few attempts instead of retrying
 * for ever: the lock logs it and checks again at the next period.
 */
const { isWorkflowOpen } = proxyActivities<LockActivities>({
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 5 },
  summary: 'check that the lock holder still runs',
});

/**
 * How long an expected request (expectLockSignal) holds older ones back at most: a started
 * activation asks within a second or two; one that fails before it asks must not keep the Stage
 * from the others for long.
 */
export const EXPECT_MS = 15_000;

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

/**
 * How many superseded requesters the lock remembers: a waiting activation asks again now and then,
 * and an ask sent just before it was superseded must not queue it again (it would win an equal
 * revision and supersede the activation that superseded it).
 */
const SUPERSEDED_MEMORY = 256;

export interface StageLockOptions {
  /** Continue-as-new once the history has this many events (default 10,000). */
  historyLimit?: number;
}

/** What a requester is told of its own request. */
type Told = { to: string; granted: true } | { to: string; granted: false; by: LockRequest };
type Notice = Told | { to: string; newer: LockRequest };

/**
 * Under Worker Versioning the lock follows the current build (AUTO_UPGRADE): it lives as long as its
 * Stage is busy and continues as new, so pinned it would keep an old build alive for ever. Hence its
 * state (LockState) and its signals must stay compatible across builds: a new build reads what an
 * old one wrote and answers an old activation's requests (docs/scale.md, "Controller versions").
 * Declared only on a versioned worker: an unversioned one must not send a behaviour (the SDK refuses).
 */
setWorkflowOptions(() => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: 'AUTO_UPGRADE' } : {}), stageLock);
export async function stageLock(initial: LockState = { waiting: [] }, options: StageLockOptions = {}): Promise<void> {
  const state: LockState = {
    holder: initial.holder,
    waiting: [...initial.waiting],
    ...(initial.expected ? { expected: initial.expected } : {}),
    ...(initial.handedOn ? { handedOn: initial.handedOn } : {}),
    ...(initial.toldNewer ? { toldNewer: initial.toldNewer } : {}),
  };
  const outbox: Notice[] = [];
  const superseded = new Map<string, LockRequest>();
  const historyLimit = options.historyLimit ?? DEFAULT_HISTORY_LIMIT;

  // The holder check runs on its own schedule, however busy the lock is: waking up for every
  // signal must not postpone it (under steady traffic a timed-out wait would never happen).
  // Date.now() is the workflow's deterministic clock.
  let nextCheck = Date.now() + HOLDER_CHECK_MS;
  let checking = false;
  let checksFinished = 0;

  setHandler(lockStateQuery, () => state);

  /** Forgets an expected request whose time is up. */
  function lapse(): void {
    if (state.expected && Date.now() >= state.expected.until) delete state.expected;
  }

  /** Whether the first in line waits for an expected newer request (expectLockSignal). */
  function expecting(): boolean {
    lapse();
    return state.expected !== undefined && (state.waiting[0]?.revision ?? 0) <= state.expected.revision;
  }

  /** Whether the Stage goes to the first in line now. */
  function grantable(): boolean {
    return !state.holder && state.waiting.length > 0 && !expecting();
  }

  setHandler(expectLockSignal, (req) => {
    lapse();
    if (state.holder?.requester === req.requester || state.waiting.some((w) => w.requester === req.requester) || superseded.has(req.requester)) return;
    // Told again (a new leader, a restart): the wait keeps its end, so it is bounded by EXPECT_MS.
    if (state.expected && (state.expected.requester === req.requester || state.expected.revision > req.revision)) return;
    state.expected = { ...req, until: Date.now() + EXPECT_MS };
  });

  /** Queues a request; what the requester itself is to be told goes to `tell`. */
  function request(req: LockRequest, tell: (n: Told) => void): void {
    // The expected request came: the usual rules decide from here.
    if (state.expected?.requester === req.requester) delete state.expected;
    if (state.holder?.requester === req.requester) {
      // The requester asked again (its activity was retried): confirm, do not queue it twice.
      tell({ to: req.requester, granted: true });
      return;
    }
    if (state.waiting.some((w) => w.requester === req.requester)) return;
    const winner = superseded.get(req.requester) ?? state.waiting.find((w) => w.revision > req.revision);
    if (winner) {
      supersede(req, winner, tell);
      return;
    }
    // Equal revisions: the later request wins, as a later kubectl apply would.
    for (const older of state.waiting) supersede(older, req);
    state.waiting = [req];
    // The holder is told, once, that something newer waits: a progressive activation waiting at a
    // gate then gives the Stage up instead of holding it for days against a fix.
    if (state.holder && req.revision > state.holder.revision && state.toldNewer !== state.holder.requester) {
      state.toldNewer = state.holder.requester;
      outbox.push({ to: state.holder.requester, newer: req });
    }
    // Queued, and at least as new as the one expected: no older request is left to hold back.
    if (state.expected && req.revision >= state.expected.revision) delete state.expected;
  }

  setHandler(requestLockSignal, (req) => request(req, (n) => outbox.push(n)));

  // As an Update the requester is told in the answer, and a free Stage is granted in it: the main
  // loop would grant it next anyway, one signal round trip later.
  setHandler(requestLockUpdate, (req): LockAnswer => {
    // Queued already by its signal: the requester asked by Update, had no answer in time (a busy
    // worker), and asked by signal; it may not hear this answer, so a grant goes by signal too.
    const queuedBefore = state.waiting.some((w) => w.requester === req.requester);
    let answer: LockAnswer = { outcome: 'queued' };
    request(req, (n) => (answer = n.granted ? { outcome: 'granted' } : { outcome: 'superseded', by: n.by.activation, revision: n.by.revision }));
    if (grantable() && state.waiting[0]?.requester === req.requester) {
      grantNext();
      if (queuedBefore) outbox.push({ to: req.requester, granted: true });
      answer = { outcome: 'granted' };
    }
    return answer;
  });

  /** The holder `releaser` was (or is to be) told of by Update, while that one still holds the Stage. */
  const toldBy = (releaser: string): string | undefined => {
    const handed = state.handedOn;
    return handed?.by === releaser && handed.to === state.holder?.requester ? handed.to : undefined;
  };

  /** Idle, it waited IDLE_LINGER_MS already and nothing came: it finishes. */
  let lingered = false;

  function release(requester: string): void {
    if (state.holder?.requester === requester) {
      state.holder = undefined;
      if (state.handedOn?.to === requester) delete state.handedOn;
      // Holding again (its retry) it is told of a newer request again.
      if (state.toldNewer === requester) delete state.toldNewer;
    }
    state.waiting = state.waiting.filter((w) => w.requester !== requester);
  }

  setHandler(releaseLockSignal, ({ requester }) => {
    // A releaser whose Update was answered but who did not hear it (its wait ran out) releases
    // again by signal: the new holder may never have been told, so the lock tells it.
    const holder = toldBy(requester);
    if (holder) outbox.push({ to: holder, granted: true });
    release(requester);
  });

  // The holder's release: the Stage goes to the next in line inside the Update, and the answer
  // names it; the releaser tells it at once. Asked again (the releaser's activity was retried), it
  // answers the same, while that one holds the Stage. One that holds nothing (it let go by signal
  // already, or was only waiting) grants nothing here: the main loop grants, and tells, as after a
  // signal.
  setHandler(releaseLockUpdate, ({ requester }): ReleaseAnswer => {
    const held = state.holder?.requester === requester;
    release(requester);
    if (held && grantable()) state.handedOn = { by: requester, to: grantNext().requester };
    const granted = toldBy(requester);
    return granted ? { granted } : {};
  });

  function supersede(loser: LockRequest, by: LockRequest, tell: (n: Told) => void = (n) => outbox.push(n)): void {
    tell({ to: loser.requester, granted: false, by });
    superseded.delete(loser.requester);
    superseded.set(loser.requester, by);
    if (superseded.size > SUPERSEDED_MEMORY) superseded.delete(superseded.keys().next().value!);
  }

  /** The Stage to the first in line (there is one, and no holder). */
  function grantNext(): LockRequest {
    state.holder = state.waiting.shift()!;
    return state.holder;
  }

  function idle(): boolean {
    lapse();
    return !state.holder && state.waiting.length === 0 && outbox.length === 0 && !state.expected;
  }

  /** Looks at the holder's workflow in the background; the lock keeps answering meanwhile. */
  function checkHolder(holder: LockRequest): void {
    checking = true;
    nextCheck = Date.now() + HOLDER_CHECK_MS;
    isWorkflowOpen(holder.requester)
      .then(
        (open) => {
          if (open || state.holder?.requester !== holder.requester) return;
          log.warn('lock holder closed without releasing the Stage; taking the lock back', { holder });
          state.holder = undefined;
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

  for (;;) {
    await deliver(outbox.splice(0), state);
    lapse();
    if (grantable()) {
      outbox.push({ to: grantNext().requester, granted: true });
      continue;
    }
    if (idle()) {
      // Idle: finish, once a check still running is done (a request meanwhile is served at once),
      // after the linger below. A request after that starts a new run (signal-with-start).
      await condition(() => (allHandlersFinished() && !checking) || !idle());
      // It lingers (IDLE_LINGER_MS), serving whatever comes meanwhile, and finishes in a task of
      // its own, at the timer: never in the workflow task of a release Update, where a signal
      // arriving meanwhile made the server refuse the task and hold up the lock's signals for 2-3 s.
      if (idle() && !lingered) {
        lingered = true;
        // Cut short (a request, or only a notice to send): it lingers afresh when idle again.
        if (await condition(() => !idle(), IDLE_LINGER_MS)) lingered = false;
        continue;
      }
      if (idle()) return;
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
      if (outbox.length === 0) await continueAsNew<typeof stageLock>(state, options);
      continue;
    }
    // Wake for a notice to send, a Stage to hand on, nothing left to do, a finished check, the
    // next check's time, or the end of a wait for an expected request.
    const finished = checksFinished;
    const expected = state.expected;
    const untilCheck = contended && !checking ? Math.max(nextCheck - Date.now(), 1) : undefined;
    const untilExpected = expected ? Math.max(expected.until - Date.now(), 1) : undefined;
    const timeouts = [untilCheck, untilExpected].filter((t) => t !== undefined);
    const timeout = timeouts.length > 0 ? Math.min(...timeouts) : undefined;
    const waiters = state.waiting.length;
    const wake = () => outbox.length > 0 || grantable() || idle() || checksFinished !== finished || state.expected !== expected || (waiters === 0) !== (state.waiting.length === 0);
    if (timeout === undefined) await condition(wake);
    else await condition(wake, timeout);
  }
}

async function deliver(notices: Notice[], state: LockState): Promise<void> {
  for (const n of notices) {
    const target = getExternalWorkflowHandle(n.to);
    try {
      if ('newer' in n) await target.signal(lockNewerWaitingSignal, { by: n.newer.activation, revision: n.newer.revision });
      else if (n.granted) await target.signal(lockGrantedSignal, { lock: workflowInfo().workflowId });
      else await target.signal(lockSupersededSignal, { by: n.by.activation, revision: n.by.revision });
    } catch (err) {
      // The requester's workflow is closed or gone: the Stage is never left granted to it.
      log.warn('lock notice not delivered', { to: n.to, error: String(err) });
      if ('granted' in n && n.granted && state.holder?.requester === n.to) state.holder = undefined;
    }
  }
}
