/** The circuit breaker's and token bucket's rules (decisions/breaker.ts), a row per rule. No servers. */
import {
  countsOnBreakers,
  applyRequest,
  applySleepWindow,
  askAgainSeconds,
  breakersFor,
  recordFailure,
  secondsUntilClose,
  settle,
  takeToken,
  type Breaker,
  type BreakerSpec,
} from '../../decisions/breaker.js';
import type { CircuitBreakerStatus } from '../../api/circuit-breaker.js';
import { activationEvents, type StatusView } from '../../decisions/events.js';

const T0 = new Date('2026-01-01T00:00:00Z');
const at = (s: number) => new Date(T0.getTime() + s * 1000);
const iso = (s: number) =>
  at(s)
    .toISOString()
    .replace(/\.\d+Z$/, 'Z');
const spec = (o: Partial<BreakerSpec> = {}): BreakerSpec => ({ failureThreshold: 3, windowSeconds: 60, ...o });
const breaker = (s: Partial<BreakerSpec> = {}, status: CircuitBreakerStatus = {}): Breaker => ({
  name: 'b',
  spec: spec(s),
  status,
});
const failure = (n: number, s: number) => ({ activation: `ns/a${n}`, key: `uid${n}/1`, time: iso(s) });

describe("breakersFor: the all-namespaces breakers and the namespace's own guard it", () => {
  const all = { name: 'all', spec: spec() };
  const teamA = { name: 'a', spec: spec({ scope: { namespace: 'team-a' } }) };
  const teamB = { name: 'b', spec: spec({ scope: { namespace: 'team-b' } }) };
  const noScope = { name: 'n', spec: { ...spec(), scope: {} } };
  it.each([
    ['team-a', ['all', 'a', 'n']],
    ['team-b', ['all', 'b', 'n']],
    ['team-c', ['all', 'n']],
  ])('%s → %j', (ns, names) => expect(breakersFor([all, teamA, teamB, noScope], ns).map((b) => b.name)).toEqual(names));
});

describe('recordFailure: K failures within W open the breaker', () => {
  it.each<[string, Breaker, ReturnType<typeof failure>, number, string | undefined, number]>([
    ['the first failure is recorded, still closed', breaker(), failure(1, 0), 0, undefined, 1],
    [
      'K-1 failures in the window: closed',
      breaker({}, { recentFailures: [failure(1, 0)] }),
      failure(2, 10),
      10,
      undefined,
      2,
    ],
    [
      'the K-th failure in the window opens it',
      breaker({}, { recentFailures: [failure(1, 0), failure(2, 10)] }),
      failure(3, 20),
      20,
      'Open',
      3,
    ],
    [
      'failures older than W are pruned and do not count',
      breaker({}, { recentFailures: [failure(1, 0), failure(2, 10)] }),
      failure(3, 65),
      65,
      undefined,
      2,
    ],
    [
      'the same attempt failing twice counts once',
      breaker({}, { recentFailures: [failure(1, 0), failure(2, 10)] }),
      failure(2, 11),
      11,
      undefined,
      2,
    ],
    ['K = 1: the first failure opens it', breaker({ failureThreshold: 1 }), failure(1, 0), 0, 'Open', 1],
    [
      'an Open breaker only records',
      breaker(
        {},
        {
          phase: 'Open',
          reason: 'OpenedByHand',
          lastTransitionTime: iso(0),
          recentFailures: [failure(1, 0), failure(2, 1)],
        },
      ),
      failure(3, 2),
      2,
      'Open',
      3,
    ],
  ])('%s', (_n, b, f, now, phase, count) => {
    const s = recordFailure(b, f, at(now));
    expect(s.phase).toBe(phase ?? b.status.phase);
    expect(s.recentFailures).toHaveLength(count);
  });

  it('opening says why, names the activations and sets lastTransitionTime', () => {
    const s = recordFailure(breaker({}, { recentFailures: [failure(1, 0), failure(2, 10)] }), failure(3, 20), at(20));
    expect(s).toMatchObject({
      phase: 'Open',
      reason: 'TooManyFailures',
      lastTransitionTime: iso(20),
      message: expect.stringContaining('3 activations failed within 60s (ns/a1, ns/a2, ns/a3)'),
    });
  });
});

describe('applySleepWindow: a breaker opened by failures closes by itself after the sleep window', () => {
  const open = (reason: string) => ({
    phase: 'Open' as const,
    reason,
    lastTransitionTime: iso(0),
    recentFailures: [failure(1, 0)],
  });
  it.each([
    ['before the window: still Open', { sleepWindowSeconds: 30 }, open('TooManyFailures'), 29, 'Open'],
    ['at the window: Closed', { sleepWindowSeconds: 30 }, open('TooManyFailures'), 30, 'Closed'],
    ['no sleep window: only by hand', {}, open('TooManyFailures'), 9999, 'Open'],
    ['opened by hand: only by hand', { sleepWindowSeconds: 30 }, open('OpenedByHand'), 9999, 'Open'],
    ['a Closed one stays Closed', { sleepWindowSeconds: 30 }, { phase: 'Closed' as const }, 50, 'Closed'],
  ])('%s', (_n, s, status, now, phase) => expect(applySleepWindow(breaker(s, status), at(now)).phase).toBe(phase));

  it('closing clears the failures (they must not reopen it at once) and says why', () => {
    expect(applySleepWindow(breaker({ sleepWindowSeconds: 30 }, open('TooManyFailures')), at(31))).toMatchObject({
      phase: 'Closed',
      reason: 'SleepWindowElapsed',
      lastTransitionTime: iso(31),
      recentFailures: [],
    });
  });

  it.each([
    [{ sleepWindowSeconds: 30 }, 10, 20],
    [{}, 10, undefined],
  ])('secondsUntilClose %j at %ss → %s', (s, now, left) =>
    expect(secondsUntilClose(breaker(s, open('TooManyFailures')), at(now))).toBe(left),
  );
});

describe('applyRequest: close or open by hand, once per token', () => {
  const opened: CircuitBreakerStatus = {
    phase: 'Open',
    reason: 'TooManyFailures',
    lastTransitionTime: iso(0),
    recentFailures: [failure(1, 0)],
  };
  it.each([
    ['close of an Open breaker', opened, 'close', 'Closed', 'ClosedByHand', 'Closed now'],
    [
      'close of a Closed breaker',
      { phase: 'Closed' as const, reason: 'Closed' },
      'close',
      'Closed',
      'Closed',
      'already Closed',
    ],
    ['open of a Closed breaker', {}, 'open', 'Open', 'OpenedByHand', 'Open now'],
  ] as const)('%s', (_n, status, action, phase, reason, answer) => {
    const s = applyRequest(breaker({}, status), action, 't=1', at(5));
    expect(s).toMatchObject({ phase, reason, lastRequest: { token: 't=1', outcome: 'Accepted', message: answer } });
  });

  it('a token already answered changes nothing', () => {
    const answered: CircuitBreakerStatus = {
      ...opened,
      lastRequest: { token: 't=1', outcome: 'Accepted', message: 'Closed now', time: iso(1) },
    };
    expect(applyRequest(breaker({}, answered), 'close', 't=1', at(5))).toBe(answered);
  });
});

describe('takeToken: a token bucket of R routing changes per interval', () => {
  const limited = (status: CircuitBreakerStatus = {}) =>
    breaker({ rateLimit: { routingChanges: 2, intervalSeconds: 10 } }, status);
  it.each<[string, Breaker, string, number, boolean, number | undefined, number | undefined]>([
    ['no rate limit: always admitted', breaker(), 'k', 0, true, undefined, undefined],
    ['a new bucket is full: take one of R', limited(), 'k', 0, true, 1, undefined],
    ['the last token', limited({ tokens: 1, lastRefill: at(0).toISOString() }), 'k', 0, true, 0, undefined],
    [
      'empty: wait until one refills (interval/R)',
      limited({ tokens: 0, lastRefill: at(0).toISOString() }),
      'k',
      0,
      false,
      0,
      5,
    ],
    ['half refilled: wait the rest', limited({ tokens: 0, lastRefill: at(0).toISOString() }), 'k', 2.5, false, 0.5, 3],
    [
      'refilled by the time elapsed',
      limited({ tokens: 0, lastRefill: at(0).toISOString() }),
      'k',
      5,
      true,
      0,
      undefined,
    ],
    [
      'never above R however long it rested',
      limited({ tokens: 0, lastRefill: at(0).toISOString() }),
      'k',
      1000,
      true,
      1,
      undefined,
    ],
    [
      'a key that took a token is admitted again without taking',
      limited({ tokens: 0, lastRefill: at(0).toISOString(), admissions: ['k'] }),
      'k',
      0,
      true,
      0,
      undefined,
    ],
  ])('%s', (_n, b, key, now, ok, tokens, wait) => {
    const t = takeToken(b, key, at(now));
    expect(t.ok).toBe(ok);
    expect(t.status.tokens).toBe(tokens);
    expect(t.ok ? undefined : t.waitSeconds).toBe(wait);
  });

  it('a burst takes at most R + elapsed·R/interval tokens', () => {
    let b = limited();
    // 20 activations ask every 100 ms for 10 s: R at once, then R per interval.
    for (let ms = 0; ms <= 10_000; ms += 100) {
      for (let k = 0; k < 20; k++) b = { ...b, status: takeToken(b, `k${k}`, new Date(T0.getTime() + ms)).status };
    }
    const admitted = new Set(b.status.admissions).size;
    expect(admitted).toBe(2 + 2);
  });

  it.each([
    [0.2, 30, 1],
    [5, 30, 5],
    [120, 30, 30],
    [4.1, 3, 3],
  ])('askAgainSeconds(%s, max %s) = %s', (wait, max, s) => expect(askAgainSeconds(wait, max)).toBe(s));
});

describe('settle: what every reader applies first', () => {
  const opened: CircuitBreakerStatus = {
    phase: 'Open',
    reason: 'TooManyFailures',
    lastTransitionTime: iso(0),
    recentFailures: [failure(1, 0)],
  };
  it.each<[string, Partial<BreakerSpec>, CircuitBreakerStatus, string | undefined, number, string, string]>([
    ['a new breaker is Closed', {}, {}, undefined, 0, 'Closed', 'Closed'],
    ['the close annotation closes it', {}, opened, 'x', 1, 'Closed', 'ClosedByHand'],
    [
      'an annotation value applied once does not close it again',
      {},
      { ...opened, handledClose: 'x' },
      'x',
      1,
      'Open',
      'TooManyFailures',
    ],
    ['the sleep window closes it', { sleepWindowSeconds: 10 }, opened, undefined, 10, 'Closed', 'SleepWindowElapsed'],
  ])('%s', (_n, s, status, annotation, now, phase, reason) => {
    expect(settle(breaker(s, status), annotation, at(now))).toMatchObject({ phase, reason });
  });

  it('an unchanged breaker comes back as the same object (nothing to write)', () => {
    const closed: CircuitBreakerStatus = { phase: 'Closed', reason: 'Closed', lastTransitionTime: iso(0) };
    expect(settle(breaker({}, closed), undefined, at(5))).toBe(closed);
  });
});

describe('the Events of an activation held back by a breaker (decisions/events.ts)', () => {
  const facts = { name: 'shop-to-3', stage: 'shop', stageVersion: 'shop-3' };
  const after = (phase: string, reason: string, message = 'CircuitBreaker team is Open') => ({
    phase,
    reason,
    message,
  });
  it.each<[string, StatusView, ReturnType<typeof after>, string[]]>([
    [
      'Pending → Waiting (CircuitOpen): one Event, the message, not "queued for Stage"',
      { phase: 'Pending', reason: 'Validating' },
      after('Waiting', 'CircuitOpen'),
      ['CircuitOpen: CircuitBreaker team is Open'],
    ],
    [
      'asked again, a new message: nothing new',
      { phase: 'Waiting', reason: 'CircuitOpen', message: 'a' },
      after('Waiting', 'CircuitOpen', 'b'),
      [],
    ],
    [
      'CircuitOpen → RateLimited: one Event',
      { phase: 'Waiting', reason: 'CircuitOpen' },
      after('Waiting', 'RateLimited', 'no token'),
      ['RateLimited: no token'],
    ],
    [
      'a later step rate-limited while InProgress: one Event',
      { phase: 'InProgress', reason: 'RunningPlan' },
      after('InProgress', 'RateLimited', 'no token'),
      ['RateLimited: no token'],
    ],
    [
      'waiting for the Stage still says so',
      { phase: 'Pending' },
      after('Waiting', 'WaitingForStage', 'waiting for Stage shop'),
      ['Waiting: queued for Stage shop (nobody holds it now)'],
    ],
  ])('%s', (_n, before, next, events) => {
    expect(activationEvents(facts, before, next).map((e) => `${e.reason}: ${e.note}`)).toEqual(events);
  });
});

describe('countsOnBreakers: which ended attempts count as failures', () => {
  it.each([
    ['Failed after a step ran (or a close-out of a run that changed routes)', 'Failed', true, true],
    ['Failed before any route (StageNotFound, InvalidPlan, NameTaken)', 'Failed', false, false],
    ['Cancelled after a step ran', 'Cancelled', true, false],
    ['Succeeded', 'Succeeded', true, false],
  ] as const)('%s', (_n, phase, touched, counts) => expect(countsOnBreakers(phase, touched)).toBe(counts));
});
