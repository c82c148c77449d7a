/**
 * What the requests of a load (./load.ts) prove, as pure functions over their record: which failed
 * without their app being told to fail them, whether each weight window split as the Stage's status
 * recorded, and from when on every request reached one version. No I/O: table-tested in
 * test/unit/judge.test.ts; the data-plane tests and the benchmarks call them on what they recorded.
 */
import type { Sent } from './load.js';

/** A request failed by something other than its app's own told failure: the gateway, a stopped server, a timeout. */
export const failedByUs = (s: Sent): boolean => s.status !== 200 && !s.injected;

/** Requests that failed but were not told to, in the order they were sent. */
export function unexpectedFailures(sent: readonly Sent[]): Sent[] {
  return [...sent].filter(failedByUs).sort((a, b) => a.at - b.at);
}

/** A weight the Stage's status recorded for the route's rule, from `at` on (performance.now() ms): percent per StageVersion. */
export interface RecordedWeight {
  at: number;
  percent: Readonly<Record<string, number>>;
}

export interface WindowVerdict {
  from: number;
  to: number;
  /** The weight of `version` the status recorded for the window. */
  recorded: number;
  /** The share of the window's answered requests that `version` answered, in percent. */
  observed: number;
  requests: number;
  /** |observed − recorded| in points. */
  error: number;
}

export interface WindowOptions {
  /** The version whose share is judged (the new one). */
  version: string;
  /** Left out after each recorded change: the gateway applies a route change a moment after the Stage's status records it, or before. */
  marginMs: number;
  /** A window with fewer answered requests is not judged. */
  minRequests: number;
  /** Where the last window ends (default: the last request). */
  end?: number;
}

/**
 * The share `version` answered in each window between two recorded weights (less a margin on either
 * side, since the gateway and the Stage's status each follow a route change after their own delay),
 * for every window with at least `minRequests` answered requests.
 */
export function weightWindows(
  sent: readonly Sent[],
  timeline: readonly RecordedWeight[],
  o: WindowOptions,
): WindowVerdict[] {
  const answered = [...sent].filter((s) => s.version !== undefined).sort((a, b) => a.at - b.at);
  const end = o.end ?? answered.at(-1)?.at ?? 0;
  const verdicts: WindowVerdict[] = [];
  timeline.forEach((weight, i) => {
    const from = weight.at + o.marginMs;
    // The last window runs to the end, its last request included: no change follows it.
    const next = timeline[i + 1];
    const to = next ? next.at - o.marginMs : end + 1;
    const inWindow = answered.filter((s) => s.at >= from && s.at < to);
    if (inWindow.length < o.minRequests) return;
    const recorded = weight.percent[o.version] ?? 0;
    const observed = (100 * inWindow.filter((s) => s.version === o.version).length) / inWindow.length;
    verdicts.push({ from, to, recorded, observed, requests: inWindow.length, error: Math.abs(observed - recorded) });
  });
  return verdicts;
}

/**
 * How long after `since` every request sent reached `version`: the time from `since` to the first
 * request from which on all did (undefined when the last one did not, or none was sent after `since`).
 */
export function allOnAfter(sent: readonly Sent[], version: string, since: number): number | undefined {
  const after = [...sent].filter((s) => s.at >= since).sort((a, b) => a.at - b.at);
  if (after.length === 0 || after.at(-1)!.version !== version) return undefined;
  let first = after.length - 1;
  while (first > 0 && after[first - 1]!.version === version) first--;
  return after[first]!.at - since;
}
