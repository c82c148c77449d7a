/**
 * The namespace's pass of the activation controller, as a pure function: given what the pass
 * observed (the namespace's cached activations, and for a burst its Stages and StageVersions) and
 * what the controller remembers of earlier passes (the workflows it knows to run, the bursts being
 * waited for, the losers being skipped, the expectations sent), which workflows start, which
 * activations are superseded before they start, which wait for the Stage limit, which burst
 * winners the Stage's lock is told to expect, when the next pass must run, and what to remember.
 * No I/O and no clock: namespace-pass.ts observes, calls decidePass, acts (act.ts), so every rule is a
 * table row (test/unit/watcher-passes.test.ts).
 *
 * The pass is the only path that starts a workflow: the Stage limit (decisions/fair-share.ts) and a
 * burst's supersession (decisions/supersede.ts) are decided on the namespace as a whole.
 */
import { isFinal } from '../../decisions/activation.js';
import { fairShare, heldMessage, NAMESPACE_LIMIT_REASON } from '../../decisions/fair-share.js';
import {
  holdBurstWinners,
  supersededBeforeStart,
  type BurstWait,
  type KnownStageVersion,
  type Superseder,
} from '../../decisions/supersede.js';
import { createdOf, stageOf, workflowIdOf, type CachedActivation } from '../../shared/cached-activation.js';

/** What a pass observed of one namespace. */
export interface PassSnapshot {
  namespace: string;
  /** The namespace's cached activations when the pass began. */
  activations: readonly CachedActivation[];
  /** When the pass began (monotonic ms): an arrival after it is one the snapshot missed. */
  seenAt: number;
  /** At most this many Stages of the namespace activate at once; undefined or 0: no limit. */
  limit?: number;
  settleMs: number;
  quietMs: number;
  /**
   * Which of the crowded Stages exist (not being deleted) and the namespace's StageVersions, read
   * for a burst; 'unreadable' when the read failed (every activation starts, the lock supersedes);
   * undefined when not read.
   */
  supersession?: { stages: ReadonlySet<string>; stageVersions: ReadonlyMap<string, KnownStageVersion> } | 'unreadable';
}

/** What the controller remembers of a namespace between passes. */
export interface NamespacePassState {
  /** Workflow ids known to run: a repeated event costs no Temporal call (learnt by act.ts). */
  readonly running: ReadonlySet<string>;
  /** Per Stage, until when its burst's newest waits for the rest (holdBurstWinners). */
  readonly settling: ReadonlyMap<string, BurstWait>;
  /**
   * Per Stage, when its latest activation arrived (first seen unfinished by the watch, monotonic
   * ms): how long a burst has been quiet. An old one reads as quiet, so none is pruned.
   */
  readonly lastArrival: ReadonlyMap<string, number>;
  /** Activations (uid) being ended before they start: no pass starts them while the write is on its way. */
  readonly skipping: ReadonlySet<string>;
  /** Burst winners (uid) whose Stage's lock was told to expect them: told once. */
  readonly expectSent: ReadonlySet<string>;
}

/** The part of the memory a pass decides; the rest is learnt from what the acts and the watch find. */
export interface NextPassState {
  settling: Map<string, BurstWait>;
  skipping: Set<string>;
  expectSent: Set<string>;
}

export interface PassDecision {
  /** Crowded Stages to read before the burst's losers can be told: decide again with `supersession`. */
  read: string[];
  /** Whose workflow to start, or find running (USE_EXISTING), in this order. */
  starts: CachedActivation[];
  /** Superseded before they start: ended Skipped by the one that supersedes each. */
  skips: { activation: CachedActivation; by: Superseder }[];
  /** Held back by the Stage limit: marked Waiting/NamespaceLimit with `heldMessage`. */
  holds: CachedActivation[];
  heldMessage: string;
  /** Burst winners whose Stage's lock is told to expect them. */
  expectations: Superseder[];
  /** When a pass must run again (a burst's newest is held); undefined: no need. */
  wakeAt?: number;
  nextState: NextPassState;
}

export function emptyPassState(): NamespacePassState {
  return {
    running: new Set(),
    settling: new Map(),
    lastArrival: new Map(),
    skipping: new Set(),
    expectSent: new Set(),
  };
}

const uidOf = (activation: CachedActivation) => activation.metadata!.uid!;

/** Started: this controller knows its workflow runs, or its status names one (a workflow wrote it). */
const startedIn = (state: NamespacePassState) => (activation: CachedActivation) =>
  state.running.has(workflowIdOf(activation)) || Boolean(activation.status?.workflowId);

export function decidePass(observed: PassSnapshot, state: NamespacePassState, now: number): PassDecision {
  const started = startedIn(state);
  const unfinished = observed.activations.filter(
    (activation) => !activation.metadata!.deletionTimestamp && !isFinal(activation.status?.phase),
  );
  const admitted = fairShare(
    unfinished.map((activation) => ({
      uid: uidOf(activation),
      name: activation.metadata!.name!,
      stage: stageOf(activation),
      created: createdOf(activation),
      // A burst's newest held for the rest of its burst keeps the place its Stage was admitted to.
      started: started(activation) || state.settling.has(stageOf(activation)),
    })),
    observed.limit,
  );
  // Both hold an activation until the snapshot has it final (the watch brought the write back); a
  // deleted one is forgotten as its deletion is seen. One the snapshot lacks may be newer than it.
  const final = new Set(observed.activations.filter((activation) => isFinal(activation.status?.phase)).map(uidOf));
  const skipping = new Set([...state.skipping].filter((uid) => !final.has(uid)));
  const expectSent = new Set([...state.expectSent].filter((uid) => !final.has(uid)));
  const starting = unfinished.filter(
    (activation) => admitted.has(uidOf(activation)) && !started(activation) && !skipping.has(uidOf(activation)),
  );
  const count = new Map<string, number>();
  for (const cachedActivation of starting)
    count.set(stageOf(cachedActivation), (count.get(stageOf(cachedActivation)) ?? 0) + 1);
  const crowded = [...count].filter(([, starts]) => starts > 1).map(([stage]) => stage);
  const message = heldMessage(observed.namespace, observed.limit ?? 0);
  if (crowded.length > 0 && observed.supersession === undefined) {
    return {
      read: crowded,
      starts: [],
      skips: [],
      holds: [],
      heldMessage: message,
      expectations: [],
      nextState: { settling: new Map(state.settling), skipping, expectSent },
    };
  }
  // A burst on one Stage: of the activations about to start, only the newest gets a workflow.
  const losers =
    crowded.length === 0 || observed.supersession === undefined || observed.supersession === 'unreadable'
      ? new Map<string, Superseder>()
      : supersededBeforeStart(
          starting.map((activation) => ({
            uid: uidOf(activation),
            name: activation.metadata!.name!,
            stage: stageOf(activation),
            stageVersion: activation.spec?.stageVersion ?? '',
            created: createdOf(activation),
          })),
          observed.supersession.stages,
          observed.supersession.stageVersions,
        );
  // A burst's newest: its lock expects it (an older one started already waits for it there), and
  // it waits a moment for the rest of its burst (decisions/supersede.ts).
  const winners = new Map([...losers.values()].map((superseder) => [superseder.uid, superseder]));
  const expectations = [...winners.values()].filter((superseder) => !expectSent.has(superseder.uid));
  for (const superseder of expectations) expectSent.add(superseder.uid);
  // A burst's wait is judged at `now`, after the pass's reads, on every arrival up to now: one that
  // came during them (not in the snapshot) makes its Stage wait for the next pass, which sees it.
  const hold = holdBurstWinners(
    starting
      .filter((activation) => !losers.has(uidOf(activation)))
      .map((activation) => ({
        uid: uidOf(activation),
        stage: stageOf(activation),
        crowd: winners.has(uidOf(activation)),
        missed: (state.lastArrival.get(stageOf(activation)) ?? -Infinity) > observed.seenAt,
      })),
    state.lastArrival,
    state.settling,
    now,
    observed.settleMs,
    observed.quietMs,
  );
  // The winners start while the losers are ended (a burst's newest does not wait for every skip);
  // the losers stay among those being skipped until the watch brings their ending back.
  const skips = starting
    .filter((activation) => losers.has(uidOf(activation)))
    .map((cachedActivation) => ({ activation: cachedActivation, by: losers.get(uidOf(cachedActivation))! }));
  for (const { activation } of skips) skipping.add(uidOf(activation));
  const starts = unfinished.filter(
    (activation) =>
      admitted.has(uidOf(activation)) &&
      !losers.has(uidOf(activation)) &&
      !hold.held.has(uidOf(activation)) &&
      !skipping.has(uidOf(activation)),
  );
  const holds = unfinished.filter(
    (activation) =>
      !admitted.has(uidOf(activation)) &&
      !(activation.status?.reason === NAMESPACE_LIMIT_REASON && activation.status.phase === 'Waiting'),
  );
  return {
    read: [],
    starts,
    skips,
    holds,
    heldMessage: message,
    expectations,
    ...(hold.wakeAt !== undefined ? { wakeAt: hold.wakeAt } : {}),
    nextState: { settling: hold.settling, skipping, expectSent },
  };
}
