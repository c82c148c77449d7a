/**
 * The rules of a Stage's lock as a pure reducer: `step(state, event, now)` → the next state and
 * the notices the lock workflow (workflow.ts) carries out. `now` is the workflow's clock (ms).
 * Every decision of the lock is here: whom the Stage goes to, who is superseded, how long an
 * expected request holds older ones back, when a holder is told that something newer waits.
 * Table-tested in test/unit/lock-rules.test.ts. Imports no runtime: the workflow and the watcher's
 * decisions (decisions/supersede.ts) both use it.
 */
import { newer, newerRevision, type Candidate } from '../decisions/newer.js';
import type { LockAnswer, LockRequest, LockState, ReleaseAnswer } from './contract.js';

/**
 * How long an expected request (expectLockSignal) holds older ones back at most: a started
 * activation asks within a second or two; one that fails before it asks must not keep the Stage
 * from the others for long.
 */
export const EXPECT_MS = 15_000;

/**
 * How many superseded requesters the lock remembers: a waiting activation asks again now and then,
 * and an ask sent just before it was superseded must not queue it again (it would win an equal
 * revision and supersede the activation that superseded it).
 */
const SUPERSEDED_MEMORY = 256;

/**
 * The lock knows of arrival only the order it hears requests in: a request it hears now came after
 * everything it holds. An expectation still standing came after the first in line whenever their
 * revisions are equal, since a request heard after it, of no lower revision, ends it (`request`).
 */
const later = (lockRequest: LockRequest): Candidate => ({ revision: lockRequest.revision, came: 1 });
const earlier = (lockRequest: LockRequest): Candidate => ({ revision: lockRequest.revision, came: 0 });

/** The lock's state: what it keeps across continue-as-new, and what one run remembers besides. */
export interface RuleState extends LockState {
  /** Requesters superseded lately, each with the request that superseded it, oldest first. */
  superseded: readonly (readonly [requester: string, by: LockRequest])[];
}

export type LockEvent =
  /** The watcher says a burst's newest is on its way (expectLockSignal). */
  | { type: 'expect'; request: LockRequest }
  /** An activation asks for the Stage; by Update it is answered. */
  | { type: 'request'; request: LockRequest; by: 'signal' | 'update' }
  /** The holder gives the Stage back, or a waiting requester gives up; by Update it is answered. */
  | { type: 'release'; requester: string; by: 'signal' | 'update' }
  /** The requester's workflow was found closed (a holder check, a grant that could not be delivered). */
  | { type: 'closed'; requester: string }
  /** The loop's turn: time passed, and a free Stage goes to the first in line. */
  | { type: 'tick' };

export type LockNotice =
  /** Signal the requester that it holds the Stage. */
  | { type: 'granted'; to: string }
  /** Signal the requester that `by` superseded it. */
  | { type: 'superseded'; to: string; by: LockRequest }
  /** Signal the holder that a request for a newer StageVersion waits. */
  | { type: 'newerWaits'; to: string; newer: LockRequest }
  /** Answer the request Update. */
  | { type: 'answer'; answer: LockAnswer }
  /** Answer the release Update. */
  | { type: 'released'; answer: ReleaseAnswer }
  /** The holder's workflow closed without releasing: the Stage is taken back. */
  | { type: 'takenBack'; holder: LockRequest };

/** Notices that are signals to requesters. */
export type LockSignalNotice = Extract<LockNotice, { to: string }>;
export const isSignal = (n: LockNotice): n is LockSignalNotice => 'to' in n;
/** What a requester is told of its own request. */
type Told = Extract<LockNotice, { type: 'granted' | 'superseded' }>;

/** The state of a run that starts from `kept` (a first run: `{ waiting: [] }`). */
export function initialState(keptState: LockState): RuleState {
  return {
    holder: keptState.holder,
    waiting: [...keptState.waiting],
    ...(keptState.expected ? { expected: keptState.expected } : {}),
    ...(keptState.handedOn ? { handedOn: keptState.handedOn } : {}),
    ...(keptState.toldNewer ? { toldNewer: keptState.toldNewer } : {}),
    superseded: [],
  };
}

/** What a run keeps across continue-as-new and shows to lockStateQuery: no superseded memory. */
export function kept(state: RuleState): LockState {
  const { superseded: _, ...rest } = state;
  return rest;
}

/** The expected request, while it is waited for. */
export function expectation(state: LockState, now: number): LockState['expected'] {
  return state.expected && now < state.expected.until ? state.expected : undefined;
}

/** Whether the Stage goes to the first in line now: free, and no newer request is expected. */
export function grantable(state: LockState, now: number): boolean {
  const first = state.waiting[0];
  const expected = expectation(state, now);
  return !state.holder && first !== undefined && !(expected && newer(later(expected), earlier(first)));
}

/** Nothing held, waiting or expected. */
export function idle(state: LockState, now: number): boolean {
  return !state.holder && state.waiting.length === 0 && !expectation(state, now);
}

export function step(state: RuleState, event: LockEvent, now: number): { state: RuleState; notices: LockNotice[] } {
  const next: RuleState = { ...state, waiting: [...state.waiting] };
  if (state.expected && !expectation(state, now)) delete next.expected;
  const notices: LockNotice[] = [];
  switch (event.type) {
    case 'expect':
      expect(next, event.request, now);
      break;
    case 'request': {
      const req = event.request;
      const queuedBefore = next.waiting.some((waiter) => waiter.requester === req.requester);
      const own = request(next, req, notices);
      if (event.by === 'signal') {
        if (own) notices.push(own);
        break;
      }
      let answer: LockAnswer = !own
        ? { outcome: 'queued' }
        : own.type === 'granted'
          ? { outcome: 'granted' }
          : { outcome: 'superseded', by: own.by.activation, revision: own.by.revision };
      // As an Update a free Stage is granted in the answer: the loop would grant it next anyway,
      // one signal round trip later.
      if (grantable(next, now) && next.waiting[0]?.requester === req.requester) {
        grantNext(next);
        // Queued already by its signal: the requester asked by Update, had no answer in time (a
        // busy worker), and asked by signal; it may not hear this answer, so a grant goes by signal too.
        if (queuedBefore) notices.push({ type: 'granted', to: req.requester });
        answer = { outcome: 'granted' };
      }
      notices.push({ type: 'answer', answer });
      break;
    }
    case 'release': {
      const { requester } = event;
      if (event.by === 'signal') {
        // A releaser whose Update was answered but who did not hear it (its wait ran out) releases
        // again by signal: the new holder may never have been told, so the lock tells it.
        const holder = toldBy(next, requester);
        if (holder) notices.push({ type: 'granted', to: holder });
        release(next, requester);
        break;
      }
      // The holder's release: the Stage goes to the next in line inside the Update, and the answer
      // names it; the releaser tells it at once. Asked again (the releaser's activity was retried),
      // it answers the same, while that one holds the Stage. One that holds nothing (it let go by
      // signal already, or was only waiting) grants nothing here: the loop's turn grants, and
      // tells, as after a signal.
      const held = next.holder?.requester === requester;
      release(next, requester);
      if (held && grantable(next, now)) next.handedOn = { by: requester, to: grantNext(next).requester };
      const granted = toldBy(next, requester);
      notices.push({ type: 'released', answer: granted ? { granted } : {} });
      break;
    }
    case 'closed':
      // Only the Stage is taken back: a closed waiter is dropped when a grant to it fails.
      if (next.holder?.requester === event.requester) {
        notices.push({ type: 'takenBack', holder: next.holder });
        next.holder = undefined;
      }
      break;
    case 'tick':
      if (grantable(next, now)) notices.push({ type: 'granted', to: grantNext(next).requester });
      break;
  }
  return { state: next, notices };
}

function expect(state: RuleState, req: LockRequest, now: number): void {
  if (
    state.holder?.requester === req.requester ||
    state.waiting.some((waiter) => waiter.requester === req.requester) ||
    supersederOf(state, req.requester)
  )
    return;
  // Told again (a new leader, a restart): the wait keeps its end, so it is bounded by EXPECT_MS.
  if (state.expected && (state.expected.requester === req.requester || !newer(later(req), earlier(state.expected))))
    return;
  state.expected = { ...req, until: now + EXPECT_MS };
}

/** Queues a request; returns what the requester itself is to be told, and adds what others are. */
function request(state: RuleState, req: LockRequest, notices: LockNotice[]): Told | undefined {
  // The expected request came: the usual rules decide from here.
  if (state.expected?.requester === req.requester) delete state.expected;
  // The requester asked again (its activity was retried): confirm, do not queue it twice.
  if (state.holder?.requester === req.requester) return { type: 'granted', to: req.requester };
  if (state.waiting.some((waiter) => waiter.requester === req.requester)) return undefined;
  const winner =
    supersederOf(state, req.requester) ?? state.waiting.find((waiter) => newer(earlier(waiter), later(req)));
  if (winner) return supersede(state, req, winner);
  for (const older of state.waiting) notices.push(supersede(state, older, req));
  state.waiting = [req];
  // The holder is told, once, that a newer StageVersion waits: a progressive activation waiting at
  // a gate then gives the Stage up instead of holding it for days against a fix. The revision alone
  // decides here: a second activation of the same StageVersion brings no fix.
  if (
    state.holder &&
    newerRevision(req.revision, state.holder.revision) &&
    state.toldNewer !== state.holder.requester
  ) {
    state.toldNewer = state.holder.requester;
    notices.push({ type: 'newerWaits', to: state.holder.requester, newer: req });
  }
  // Queued, and newer than the one expected: no older request is left to hold back.
  if (state.expected && newer(later(req), earlier(state.expected))) delete state.expected;
  return undefined;
}

function release(state: RuleState, requester: string): void {
  if (state.holder?.requester === requester) {
    state.holder = undefined;
    if (state.handedOn?.to === requester) delete state.handedOn;
    // Holding again (its retry) it is told of a newer request again.
    if (state.toldNewer === requester) delete state.toldNewer;
  }
  state.waiting = state.waiting.filter((waiter) => waiter.requester !== requester);
}

/** The holder `releaser` was (or is to be) told of by Update, while that one still holds the Stage. */
function toldBy(state: LockState, releaser: string): string | undefined {
  const handed = state.handedOn;
  return handed?.by === releaser && handed.to === state.holder?.requester ? handed.to : undefined;
}

function supersede(state: RuleState, loser: LockRequest, by: LockRequest): Told {
  state.superseded = [
    ...state.superseded.filter(([requesterName]) => requesterName !== loser.requester),
    [loser.requester, by] as const,
  ].slice(-SUPERSEDED_MEMORY);
  return { type: 'superseded', to: loser.requester, by };
}

function supersederOf(state: RuleState, requester: string): LockRequest | undefined {
  return state.superseded.find(([requesterName]) => requesterName === requester)?.[1];
}

/** The Stage to the first in line (there is one, and no holder). */
function grantNext(state: RuleState): LockRequest {
  state.holder = state.waiting.shift()!;
  return state.holder;
}
