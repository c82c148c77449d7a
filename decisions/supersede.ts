/**
 * Superseded before it starts (ADR-0012: an older version never overwrites a newer one).
 * When the watcher is about to start several activations of one Stage at once (a burst), only the
 * newest needs a workflow: the others end Skipped/Superseded at once, as the Stage's lock would have
 * ended them after each had run a workflow just to queue there. Which is newest is the lock's own
 * rule (`newer`, stage-lock/rules.ts). Only activations whose Stage exists and whose StageVersion
 * belongs to it take part: any other starts, and its workflow says what is wrong (it must not
 * supersede anyone, as it would never reach the lock).
 * Pure; table-tested in test/unit/supersede.test.ts.
 */
import { newer, type Candidate } from './newer.js';

/** The status reason of an activation superseded by a newer one of its Stage (here or in the lock). */
export const SUPERSEDED_REASON = 'Superseded';

export interface StartCandidate {
  uid: string;
  name: string;
  stage: string;
  stageVersion: string;
  /** metadata.creationTimestamp (RFC 3339, so it sorts as text). */
  created: string;
}

export interface KnownStageVersion {
  stage: string;
  revision: number;
}

/** A candidate that supersedes others, with its StageVersion's revision. */
export type Superseder = StartCandidate & { revision: number };

/** Of activations about to start, those superseded (uid → the one that supersedes it). */
export function supersededBeforeStart(
  candidates: readonly StartCandidate[],
  stages: ReadonlySet<string>,
  stageVersions: ReadonlyMap<string, KnownStageVersion>,
): Map<string, Superseder> {
  const byStage = new Map<string, Superseder[]>();
  for (const c of candidates) {
    const sv = stageVersions.get(c.stageVersion);
    if (!stages.has(c.stage) || !sv || sv.stage !== c.stage) continue;
    byStage.set(c.stage, [...(byStage.get(c.stage) ?? []), { ...c, revision: sv.revision }]);
  }
  const superseded = new Map<string, Superseder>();
  for (const group of byStage.values()) {
    if (group.length < 2) continue;
    const newest = group.reduce((w, c) => (newer(candidate(c), candidate(w)) ? c : w));
    for (const c of group) if (c !== newest) superseded.set(c.uid, newest);
  }
  return superseded;
}

/**
 * What the watcher knows of when an activation came: its creation time. The lock knows only the
 * order requests reach it in, so on equal revisions the two can pick differently: an activation
 * created earlier that asks the lock later wins there. Each judges "later" by what it sees; the
 * watcher has no arrivals at the lock, and the lock no creation times.
 */
const candidate = (c: Superseder): Candidate => ({ revision: c.revision, came: c.created, name: c.name });

/**
 * A burst reaches the watcher in pieces: its creates arrive over a few hundred milliseconds. The
 * newest of the first piece would take the free Stage at once and run, and the burst's real newest
 * would run after it: two executions where one does (bench/burst). So the newest of a crowd waits,
 * once per burst, for the rest: a newer one that arrives meanwhile supersedes it before it starts.
 * It waits until the Stage has had no new activation for BURST_QUIET_MS, and at most
 * BURST_SETTLE_MS in all. An activation that is alone on its Stage never waits.
 */
export const BURST_SETTLE_MS = 250;
/** The creates of 50 at once landed 20-30 ms apart at most (bench/burst, the 2-core machine). */
export const BURST_QUIET_MS = 75;

export interface StartingNow {
  uid: string;
  stage: string;
  /** It won over others of its Stage in this pass (a burst). */
  crowd: boolean;
  /**
   * Its Stage had an arrival that the pass's snapshot missed (it came during the pass's reads): a
   * newer one may be among it, so it waits for the next pass, which sees it (at most the settle).
   */
  missed?: boolean;
}

/** A Stage's burst being waited for. */
export interface BurstWait {
  /** When the wait began (its crowd was first seen). */
  since: number;
  /** Until when the Stage's newest waits: the quiet after the last arrival, at most the settle after `since`. */
  until: number;
}

/**
 * Which of the activations a pass would start wait for the rest of their burst. `lastArrival`: per
 * Stage, when its latest activation arrived (first seen by the watch, losers included: an older
 * arrival is part of the burst too); a Stage without one has been quiet for long. The quiet is
 * counted from that moment, not from the pass that looks at it, which may run late. `settling`: per Stage, its wait; the next map
 * is returned, with `wakeAt` when a pass must run again (something is held). A wait begins with a
 * crowd and holds whatever would start on that Stage until its time has come (the losers of an
 * earlier pass are being skipped, so a lone candidate may still be a burst's); then the Stage's
 * newest starts.
 */
export function holdBurstWinners(
  starts: readonly StartingNow[],
  lastArrival: ReadonlyMap<string, number>,
  settling: ReadonlyMap<string, BurstWait>,
  now: number,
  settleMs = BURST_SETTLE_MS,
  quietMs = BURST_QUIET_MS,
): { held: Set<string>; settling: Map<string, BurstWait>; wakeAt?: number } {
  const next = new Map([...settling].filter(([, w]) => w.until > now));
  const held = new Set<string>();
  let wakeAt: number | undefined;
  for (const s of starts) {
    const prior = settling.get(s.stage);
    if (!prior && !s.crowd && !s.missed) continue; // alone on its Stage, no wait running: it starts
    // A running wait keeps its beginning, so arrivals never push it past the settle.
    const since = prior?.since ?? now;
    const quiet = (lastArrival.get(s.stage) ?? -Infinity) + quietMs;
    const until = Math.min(since + settleMs, s.missed ? Math.max(quiet, now + 1) : quiet);
    if (until <= now) {
      next.delete(s.stage);
      continue;
    }
    next.set(s.stage, { since, until });
    held.add(s.uid);
    wakeAt = Math.min(wakeAt ?? Infinity, until);
  }
  return { held, settling: next, ...(wakeAt !== undefined ? { wakeAt } : {}) };
}

/** What a superseded activation's status says; like the lock's "superseded while waiting by …". */
export function supersededMessage(namespace: string, by: { name: string; revision: number }): string {
  return `superseded before it started by the newer activation ${namespace}/${by.name} (revision ${by.revision})`;
}
