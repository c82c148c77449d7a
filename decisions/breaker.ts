/**
 * The rules of the circuit breaker and its token bucket, as pure functions of a breaker's spec,
 * status and the time: which breakers guard a namespace, whether a failure opens one, whether the
 * sleep window or a request by hand closes it, and whether a routing change may go now. The
 * activities (activities/breaker.ts) read, ask these, and write the result once.
 */
import type { CircuitBreakerPhase, CircuitBreakerStatus, RecentFailure } from '../api/circuit-breaker.js';
import { ANNOTATION_CLOSE, MAX_ADMISSIONS, MAX_RECENT_FAILURES } from '../api/circuit-breaker-limits.js';
import { kubeTime } from '../shared/format.js';

export interface BreakerSpec {
  scope?: { namespace?: string | undefined } | undefined;
  failureThreshold: number;
  windowSeconds: number;
  sleepWindowSeconds?: number | undefined;
  rateLimit?: { routingChanges: number; intervalSeconds: number } | undefined;
}

export interface Breaker {
  name: string;
  spec: BreakerSpec;
  status: CircuitBreakerStatus;
}

/** Reasons a breaker's status carries. */
export const BREAKER_REASONS = {
  closed: 'Closed',
  tooManyFailures: 'TooManyFailures',
  sleepWindowElapsed: 'SleepWindowElapsed',
  closedByHand: 'ClosedByHand',
  openedByHand: 'OpenedByHand',
} as const;

const ms = (t: string | undefined) => (t ? new Date(t).getTime() : NaN);

/** The breakers that guard activations of `namespace`: the all-namespaces ones and its own. */
export function breakersFor<B extends { spec: BreakerSpec }>(breakers: readonly B[], namespace: string): B[] {
  return breakers.filter((b) => b.spec.scope?.namespace === undefined || b.spec.scope.namespace === namespace);
}

export const phaseOf = (status: CircuitBreakerStatus): CircuitBreakerPhase => status.phase ?? 'Closed';

/**
 * Whether an attempt that ended in `phase` counts on the CircuitBreakers of its namespace: a Failed
 * one that changed, or tried to change, routing. One that failed before any route (its Stage or
 * plan not found, a name taken) says nothing of the routing the breakers guard, and would let one
 * tenant's bad objects open a breaker every namespace shares.
 */
export const countsOnBreakers = (phase: string, touchedRouting: boolean): boolean =>
  phase === 'Failed' && touchedRouting;

/** A phase change: reason, message and the transition time; the same phase keeps its time. */
export function transition(
  status: CircuitBreakerStatus,
  phase: CircuitBreakerPhase,
  reason: string,
  message: string,
  now: Date,
): CircuitBreakerStatus {
  const changed = phaseOf(status) !== phase || !status.lastTransitionTime;
  return {
    ...status,
    phase,
    reason,
    message,
    lastTransitionTime: changed ? kubeTime(now) : status.lastTransitionTime!,
    // A closed breaker starts counting afresh: the failures that opened it must not reopen it at once.
    ...(phase === 'Closed' && changed ? { recentFailures: [] } : {}),
  };
}

/**
 * Records a failed activation: the failures within the window (the new one included, each
 * attempt once) and, at K of them, the breaker opens. An Open breaker only records.
 */
export function recordFailure(b: Breaker, failure: RecentFailure, now: Date): CircuitBreakerStatus {
  const since = now.getTime() - b.spec.windowSeconds * 1000;
  const known = (b.status.recentFailures ?? []).some((f) => f.key === failure.key);
  const recent = [...(b.status.recentFailures ?? []), ...(known ? [] : [failure])]
    .filter((f) => ms(f.time) > since)
    .slice(-MAX_RECENT_FAILURES);
  const status = { ...b.status, recentFailures: recent };
  if (phaseOf(b.status) === 'Open' || recent.length < b.spec.failureThreshold) return status;
  const names = recent
    .slice(-b.spec.failureThreshold)
    .map((f) => f.activation)
    .join(', ');
  return transition(
    status,
    'Open',
    BREAKER_REASONS.tooManyFailures,
    `${recent.length} activations failed within ${b.spec.windowSeconds}s (${names}): new activations wait until the breaker closes`,
    now,
  );
}

/** When an Open breaker opened by failures closes by itself; undefined: only by hand. */
export function closesAt(b: Breaker): number | undefined {
  if (phaseOf(b.status) !== 'Open' || b.status.reason !== BREAKER_REASONS.tooManyFailures || !b.spec.sleepWindowSeconds)
    return undefined;
  return ms(b.status.lastTransitionTime) + b.spec.sleepWindowSeconds * 1000;
}

/** Closes the breaker when its sleep window has passed; the status unchanged otherwise. */
export function applySleepWindow(b: Breaker, now: Date): CircuitBreakerStatus {
  const at = closesAt(b);
  if (at === undefined || now.getTime() < at) return b.status;
  return transition(
    b.status,
    'Closed',
    BREAKER_REASONS.sleepWindowElapsed,
    `closed by itself after the sleep window of ${b.spec.sleepWindowSeconds}s`,
    now,
  );
}

/** A close or open asked by hand (annotation or CLI), answered once per token. */
export function applyRequest(b: Breaker, action: 'close' | 'open', token: string, now: Date): CircuitBreakerStatus {
  if (b.status.lastRequest?.token === token) return b.status;
  const phase: CircuitBreakerPhase = action === 'close' ? 'Closed' : 'Open';
  const already = phaseOf(b.status) === phase;
  const next = already
    ? b.status
    : transition(
        b.status,
        phase,
        action === 'close' ? BREAKER_REASONS.closedByHand : BREAKER_REASONS.openedByHand,
        action === 'close'
          ? `closed by hand (${token})`
          : `opened by hand (${token}): new activations wait until it is closed by hand`,
        now,
      );
  const message = already ? `already ${phase}` : `${phase} now`;
  return { ...next, lastRequest: { token, outcome: 'Accepted', message, time: kubeTime(now) } };
}

export type Take =
  { ok: true; status: CircuitBreakerStatus } | { ok: false; status: CircuitBreakerStatus; waitSeconds: number };

/**
 * Takes one token for admission `key` (uid/attempt/step): refills by the time elapsed (R per
 * interval, at most R), then takes one or says how long until one is there. A key that took a
 * token already is admitted again without taking. No rate limit: always admitted.
 */
export function takeToken(b: Breaker, key: string, now: Date): Take {
  const limit = b.spec.rateLimit;
  if (!limit) return { ok: true, status: b.status };
  const admissions = b.status.admissions ?? [];
  if (admissions.includes(key)) return { ok: true, status: b.status };
  const perMs = limit.routingChanges / (limit.intervalSeconds * 1000);
  const last = ms(b.status.lastRefill);
  const elapsed = Number.isNaN(last) ? Infinity : Math.max(0, now.getTime() - last);
  const tokens = Math.min(limit.routingChanges, (b.status.tokens ?? limit.routingChanges) + elapsed * perMs);
  // Milliseconds kept: a refill time rounded to the second would refill more than the time gone by.
  const refilled = { ...b.status, tokens: round(tokens), lastRefill: now.toISOString() };
  if (tokens < 1)
    return { ok: false, status: refilled, waitSeconds: Math.max(1, Math.ceil((1 - tokens) / perMs / 1000)) };
  return {
    ok: true,
    status: { ...refilled, tokens: round(tokens - 1), admissions: [...admissions, key].slice(-MAX_ADMISSIONS) },
  };
}

/** Token counts are kept to 1/10⁶ (readable status); nearest, so that a bucket neither drifts down nor up. */
const round = (n: number) => Math.round(n * 1e6) / 1e6;

/** How long a waiting activation sleeps before asking again: the wait, at least 1 s and at most `max`. */
export function askAgainSeconds(waitSeconds: number, max: number): number {
  return Math.max(1, Math.min(max, Math.ceil(waitSeconds)));
}

/** Seconds until an Open breaker closes by itself, for the waiting activation's message; undefined: by hand only. */
export function secondsUntilClose(b: Breaker, now: Date): number | undefined {
  const at = closesAt(b);
  return at === undefined ? undefined : Math.max(0, Math.ceil((at - now.getTime()) / 1000));
}

/**
 * What any reader of a breaker applies before deciding (lazily: no controller owns breakers): a
 * first status, a close asked by annotation (each value once), and the sleep window. The same
 * status object back when nothing changes, so nothing is written.
 */
export function settle(b: Breaker, closeAnnotation: string | undefined, now: Date): CircuitBreakerStatus {
  let status = b.status;
  if (!status.phase) status = transition(status, 'Closed', BREAKER_REASONS.closed, 'no failures recorded', now);
  if (closeAnnotation !== undefined && status.handledClose !== closeAnnotation) {
    status = {
      ...applyRequest({ ...b, status }, 'close', `${ANNOTATION_CLOSE}=${closeAnnotation}`, now),
      handledClose: closeAnnotation,
    };
  }
  return applySleepWindow({ ...b, status }, now);
}
