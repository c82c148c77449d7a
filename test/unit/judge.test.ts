/** What recorded requests prove (scripts/apps/judge.ts), by tables. No servers. */
import { allOnAfter, unexpectedFailures, weightWindows, type RecordedWeight } from '../../scripts/apps/judge.js';
import type { Sent } from '../../scripts/apps/load.js';

const ok = (at: number, version: string): Sent => ({
  at,
  status: 200,
  latencyMs: 1,
  version,
  injected: false,
  connection: 'kept',
});
const failed = (at: number, status: number, extra: Partial<Sent> = {}): Sent => ({
  at,
  status,
  latencyMs: 1,
  version: undefined,
  injected: false,
  connection: 'fresh',
  ...extra,
});

describe('unexpectedFailures: a request fails by us unless its app was told to fail it', () => {
  it.each<[string, Sent[], number[]]>([
    ['all answered 200', [ok(1, 'v1'), ok(2, 'v2')], []],
    ['a 503 the app was told to return is allowed', [failed(1, 503, { injected: true, version: 'v2' })], []],
    ['a 502 of the gateway (a stopped server) is ours', [failed(1, 502)], [1]],
    [
      'no answer at all (refused, reset, timed out) is ours',
      [failed(3, 0, { error: 'ECONNRESET' }), failed(2, 500)],
      [2, 3],
    ],
    ['a 404 (the route not there yet) is ours too', [failed(1, 404)], [1]],
  ])('%s', (_n, sent, ats) => expect(unexpectedFailures(sent).map((s) => s.at)).toEqual(ats));
});

/** `n` requests from `from`, one per ms, each `share` % of them (spread evenly) answered by v2. */
function split(from: number, n: number, share: number): Sent[] {
  let v2 = 0;
  return Array.from({ length: n }, (_, i) => {
    const toV2 = v2 < (share / 100) * (i + 1);
    if (toV2) v2++;
    return ok(from + i, toV2 ? 'v2' : 'v1');
  });
}

describe('weightWindows: the share of each window between two recorded weights, less the margins', () => {
  const timeline: RecordedWeight[] = [
    { at: 0, percent: { v1: 100 } },
    { at: 1000, percent: { v1: 90, v2: 10 } },
    { at: 2000, percent: { v1: 50, v2: 50 } },
  ];
  const o = { version: 'v2', marginMs: 100, minRequests: 400 };

  it('judges each long enough window against its recorded weight', () => {
    const sent = [...split(0, 1000, 0), ...split(1000, 1000, 10), ...split(2000, 1000, 50)];
    expect(weightWindows(sent, timeline, o).map((w) => [w.recorded, Math.round(w.observed), w.requests])).toEqual([
      [0, 0, 800],
      [10, 10, 800],
      [50, 50, 900],
    ]);
  });

  it('leaves out the margins around a change, where either weight may hold', () => {
    // The gateway applied 10 % late and 50 % early: only the margins hold the other weight.
    const sent = [...split(0, 1050, 0), ...split(1050, 900, 10), ...split(1950, 1050, 50)];
    expect(weightWindows(sent, timeline, o).every((w) => w.error < 1)).toBe(true);
  });

  it('a split that is off shows as its error in points', () => {
    const sent = [...split(0, 1000, 0), ...split(1000, 1000, 30)];
    expect(weightWindows(sent, timeline.slice(0, 2), o).map((w) => Math.round(w.error))).toEqual([0, 20]);
  });

  it('does not judge a window of fewer answered requests than asked, nor count the unanswered', () => {
    const sent = [
      ...split(0, 1000, 0),
      ...split(1000, 300, 10),
      ...Array.from({ length: 500 }, (_, i) => failed(1300 + i, 502)),
    ];
    expect(weightWindows(sent, timeline.slice(0, 2), o).map((w) => w.recorded)).toEqual([0]);
  });
});

describe('allOnAfter: from when on every request reached one version', () => {
  it.each<[string, Sent[], number | undefined]>([
    ['at once', [ok(10, 'v2'), ok(11, 'v2')], 0],
    ['after the last old answer', [ok(10, 'v1'), ok(40, 'v1'), ok(45, 'v2'), ok(50, 'v2')], 35],
    ['never: the last request went elsewhere', [ok(10, 'v2'), ok(20, 'v1')], undefined],
    ['never: a failure last', [ok(10, 'v2'), failed(20, 502)], undefined],
    ['nothing sent after the moment', [ok(5, 'v2')], undefined],
  ])('%s', (_n, sent, ms) => expect(allOnAfter(sent, 'v2', 10)).toBe(ms));
});
