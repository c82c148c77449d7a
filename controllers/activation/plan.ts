/**
 * The namespace's pass of the activation controller, as a pure function: given what the pass
 * observed (the namespace's cached activations, and for a burst its Stages and StageVersions) and
 * what the controller remembers of earlier passes (the workflows it knows to run, the bursts being
 * waited for, the losers being skipped, the expectations sent), which workflows start, which
 * activations are superseded before they start, which wait for the Stage limit, which burst
 * winners the Stage's lock is told to expect, when the next pass must run, and what to remember.
 * No I/O and no clock: controller.ts observes, calls planPass, acts (act.ts), so every rule is a
 * table row (test/unit/activation-plan.test.ts).
 *
 * The pass is the only path that starts a workflow: the Stage limit (decisions/fair-share.ts) and a
 * burst's supersession (decisions/supersede.ts) are decided on the namespace as a whole.
 */
import { isFinal } from '../../decisions/activation.js';
import { fairShare, heldMessage, NAMESPACE_LIMIT_REASON } from '../../decisions/fair-share.js';
import { holdBurstWinners, supersededBeforeStart, type BurstWait, type KnownStageVersion, type Superseder } from '../../decisions/supersede.js';
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
export interface NamespaceMemory {
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
export interface NextMemory {
  settling: Map<string, BurstWait>;
  skipping: Set<string>;
  expectSent: Set<string>;
}

export interface PassPlan {
  /** Crowded Stages to read before the burst's losers can be told: plan again with `supersession`. */
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
  memory: NextMemory;
}

export function emptyMemory(): NamespaceMemory {
  return { running: new Set(), settling: new Map(), lastArrival: new Map(), skipping: new Set(), expectSent: new Set() };
}

const uidOf = (o: CachedActivation) => o.metadata!.uid!;

/** Started: this controller knows its workflow runs, or its status names one (a workflow wrote it). */
const startedIn = (m: NamespaceMemory) => (o: CachedActivation) => m.running.has(workflowIdOf(o)) || Boolean(o.status?.workflowId);

export function planPass(s: PassSnapshot, m: NamespaceMemory, now: number): PassPlan {
  const started = startedIn(m);
  const unfinished = s.activations.filter((o) => !o.metadata!.deletionTimestamp && !isFinal(o.status?.phase));
  const admitted = fairShare(
    unfinished.map((o) => ({
      uid: uidOf(o),
      name: o.metadata!.name!,
      stage: stageOf(o),
      created: createdOf(o),
      // A burst's newest held for the rest of its burst keeps the place its Stage was admitted to.
      started: started(o) || m.settling.has(stageOf(o)),
    })),
    s.limit,
  );
  // Both hold an activation until the snapshot has it final (the watch brought the write back); a
  // deleted one is forgotten as its deletion is seen. One the snapshot lacks may be newer than it.
  const final = new Set(s.activations.filter((o) => isFinal(o.status?.phase)).map(uidOf));
  const skipping = new Set([...m.skipping].filter((uid) => !final.has(uid)));
  const expectSent = new Set([...m.expectSent].filter((uid) => !final.has(uid)));
  const starting = unfinished.filter((o) => admitted.has(uidOf(o)) && !started(o) && !skipping.has(uidOf(o)));
  const count = new Map<string, number>();
  for (const o of starting) count.set(stageOf(o), (count.get(stageOf(o)) ?? 0) + 1);
  const crowded = [...count].filter(([, n]) => n > 1).map(([stage]) => stage);
  const message = heldMessage(s.namespace, s.limit ?? 0);
  if (crowded.length > 0 && s.supersession === undefined) {
    return { read: crowded, starts: [], skips: [], holds: [], heldMessage: message, expectations: [], memory: { settling: new Map(m.settling), skipping, expectSent } };
  }
  // A burst on one Stage: of the activations about to start, only the newest gets a workflow.
  const losers =
    crowded.length === 0 || s.supersession === undefined || s.supersession === 'unreadable'
      ? new Map<string, Superseder>()
      : supersededBeforeStart(
          starting.map((o) => ({ uid: uidOf(o), name: o.metadata!.name!, stage: stageOf(o), stageVersion: o.spec?.stageVersion ?? '', created: createdOf(o) })),
          s.supersession.stages,
          s.supersession.stageVersions,
        );
  // A burst's newest: its lock expects it (an older one started already waits for it there), and
  // it waits a moment for the rest of its burst (decisions/supersede.ts).
  const winners = new Map([...losers.values()].map((w) => [w.uid, w]));
  const expectations = [...winners.values()].filter((w) => !expectSent.has(w.uid));
  for (const w of expectations) expectSent.add(w.uid);
  // A burst's wait is judged at `now`, after the pass's reads, on every arrival up to now: one that
  // came during them (not in the snapshot) makes its Stage wait for the next pass, which sees it.
  const hold = holdBurstWinners(
    starting
      .filter((o) => !losers.has(uidOf(o)))
      .map((o) => ({ uid: uidOf(o), stage: stageOf(o), crowd: winners.has(uidOf(o)), missed: (m.lastArrival.get(stageOf(o)) ?? -Infinity) > s.seenAt })),
    m.lastArrival,
    m.settling,
    now,
    s.settleMs,
    s.quietMs,
  );
  // The winners start while the losers are ended (a burst's newest does not wait for every skip);
  // the losers stay among those being skipped until the watch brings their ending back.
  const skips = starting.filter((o) => losers.has(uidOf(o))).map((o) => ({ activation: o, by: losers.get(uidOf(o))! }));
  for (const { activation } of skips) skipping.add(uidOf(activation));
  const starts = unfinished.filter((o) => admitted.has(uidOf(o)) && !losers.has(uidOf(o)) && !hold.held.has(uidOf(o)) && !skipping.has(uidOf(o)));
  const holds = unfinished.filter((o) => !admitted.has(uidOf(o)) && !(o.status?.reason === NAMESPACE_LIMIT_REASON && o.status.phase === 'Waiting'));
  return {
    read: [],
    starts,
    skips,
    holds,
    heldMessage: message,
    expectations,
    ...(hold.wakeAt !== undefined ? { wakeAt: hold.wakeAt } : {}),
    memory: { settling: hold.settling, skipping, expectSent },
  };
}
