/** supersededBeforeStart (decisions/supersede.ts): which activations of a burst never need a workflow. */
import {
  BURST_QUIET_MS,
  BURST_SETTLE_MS,
  holdBurstWinners,
  type BurstWait,
  supersededBeforeStart,
  supersededMessage,
  type KnownStageVersion,
  type StartCandidate,
  type StartingNow,
} from '../../decisions/supersede.js';

/** `name` switching `stage` to `sv`, created at second `at`. */
const va = (name: string, stage: string, sv: string, at: number): StartCandidate => ({
  uid: `uid-${name}`,
  name,
  stage,
  stageVersion: sv,
  created: `2026-11-30T10:00:${String(at).padStart(2, '0')}Z`,
});
const svs = new Map<string, KnownStageVersion>([
  ['s1-v1', { stage: 's1', revision: 1 }],
  ['s1-v2', { stage: 's1', revision: 2 }],
  ['s1-v3', { stage: 's1', revision: 3 }],
  ['s2-v1', { stage: 's2', revision: 1 }],
  ['s2-v2', { stage: 's2', revision: 2 }],
]);
const both = new Set(['s1', 's2']);
/** loser → winner, by name. */
const outcome = (m: Map<string, StartCandidate>) =>
  Object.fromEntries([...m].map(([uid, by]) => [uid.replace('uid-', ''), by.name]).sort());

describe('supersededBeforeStart', () => {
  it.each<[string, StartCandidate[], Set<string>, Record<string, string>]>([
    [
      'one activation per Stage: nothing to supersede',
      [va('a', 's1', 's1-v1', 1), va('b', 's2', 's2-v1', 1)],
      both,
      {},
    ],
    [
      'the highest revision wins, whatever the creation order',
      [va('new', 's1', 's1-v3', 1), va('mid', 's1', 's1-v2', 2), va('old', 's1', 's1-v1', 3)],
      both,
      { mid: 'new', old: 'new' },
    ],
    [
      'equal revisions: the later activation wins, as a later kubectl apply would',
      [va('first', 's1', 's1-v2', 1), va('second', 's1', 's1-v2', 2)],
      both,
      { first: 'second' },
    ],
    [
      'equal revisions in the same second: the name decides',
      [va('b', 's1', 's1-v2', 1), va('a', 's1', 's1-v2', 1)],
      both,
      { a: 'b' },
    ],
    [
      'Stages apart',
      [va('a1', 's1', 's1-v1', 1), va('a2', 's1', 's1-v2', 2), va('b1', 's2', 's2-v2', 1), va('b2', 's2', 's2-v1', 2)],
      both,
      { a1: 'a2', b2: 'b1' },
    ],
    [
      'a StageVersion that does not exist takes no part (its workflow fails and says so)',
      [va('ok', 's1', 's1-v1', 1), va('ghost', 's1', 's1-v9', 2)],
      both,
      {},
    ],
    [
      'a StageVersion of another Stage takes no part, however high its revision',
      [va('ok', 's1', 's1-v1', 1), va('wrong', 's1', 's2-v2', 2), va('ok2', 's1', 's1-v2', 3)],
      both,
      { ok: 'ok2' },
    ],
    [
      'no such Stage: nobody is superseded (every workflow fails and says so)',
      [va('a', 's3', 's1-v1', 1), va('b', 's3', 's1-v2', 2)],
      both,
      {},
    ],
    [
      'a Stage that is gone: nobody is superseded',
      [va('a', 's1', 's1-v1', 1), va('b', 's1', 's1-v2', 2)],
      new Set(['s2']),
      {},
    ],
  ])('%s', (_n, candidates, stages, expected) => {
    expect(outcome(supersededBeforeStart(candidates, stages, svs))).toEqual(expected);
  });

  it('the decision does not depend on the order the watcher saw the objects in', () => {
    const burst = [
      va('a', 's1', 's1-v1', 1),
      va('b', 's1', 's1-v3', 2),
      va('c', 's1', 's1-v2', 3),
      va('d', 's1', 's1-v3', 4),
    ];
    const expected = { a: 'd', b: 'd', c: 'd' };
    expect(outcome(supersededBeforeStart(burst, both, svs))).toEqual(expected);
    expect(outcome(supersededBeforeStart([...burst].reverse(), both, svs))).toEqual(expected);
  });

  it("says who superseded it, like the lock's message", () => {
    expect(supersededMessage('team-a', { name: 'to-v3', revision: 3 })).toBe(
      'superseded before it started by the newer activation team-a/to-v3 (revision 3)',
    );
  });
});

describe('holdBurstWinners', () => {
  const T = 1_000_000;
  const Q = BURST_QUIET_MS;
  const S = BURST_SETTLE_MS;
  const start = (uid: string, stage: string, crowd = false): StartingNow => ({ uid, stage, crowd });
  const wait = (since: number, until: number): BurstWait => ({ since, until });
  // [name, starts, last arrival per Stage, waits before, now, held, waits after, wakeAt]
  type Row = [
    string,
    StartingNow[],
    [string, number][],
    [string, BurstWait][],
    number,
    string[],
    [string, BurstWait][],
    number | undefined,
  ];
  it.each<Row>([
    ['an activation alone on its Stage never waits', [start('a', 's1')], [['s1', T]], [], T, [], [], undefined],
    [
      "a burst's newest waits a quiet period after the last arrival",
      [start('w', 's1', true)],
      [['s1', T]],
      [],
      T,
      ['w'],
      [['s1', wait(T, T + Q)]],
      T + Q,
    ],
    [
      'the quiet counts from the arrival, not from a pass that runs late',
      [start('w', 's1', true)],
      [['s1', T - 30]],
      [],
      T,
      ['w'],
      [['s1', wait(T, T + Q - 30)]],
      T + Q - 30,
    ],
    [
      'a crowd that arrived a quiet period ago starts at once',
      [start('w', 's1', true)],
      [['s1', T - Q]],
      [],
      T,
      [],
      [],
      undefined,
    ],
    [
      'an arrival moves the wait to a quiet period after it',
      [start('w2', 's1', true)],
      [['s1', T - 5]],
      [['s1', wait(T - 50, T + Q - 50)]],
      T,
      ['w2'],
      [['s1', wait(T - 50, T + Q - 5)]],
      T + Q - 5,
    ],
    [
      'an arrival seen after the wait ran out still moves it (the pass ran late)',
      [start('w', 's1')],
      [['s1', T - 5]],
      [['s1', wait(T - 100, T - 10)]],
      T,
      ['w'],
      [['s1', wait(T - 100, T + Q - 5)]],
      T + Q - 5,
    ],
    [
      'never past the settle from the first crowd',
      [start('w3', 's1', true)],
      [['s1', T]],
      [['s1', wait(T - S + 10, T + 5)]],
      T,
      ['w3'],
      [['s1', wait(T - S + 10, T + 10)]],
      T + 10,
    ],
    [
      'no arrival: the wait stays as it was',
      [start('w', 's1')],
      [['s1', T + 40 - Q]],
      [['s1', wait(T - 10, T + 40)]],
      T,
      ['w'],
      [['s1', wait(T - 10, T + 40)]],
      T + 40,
    ],
    [
      'its time come, the newest starts and the wait is over',
      [start('w', 's1')],
      [['s1', T - Q]],
      [['s1', wait(T - Q, T)]],
      T,
      [],
      [],
      undefined,
    ],
    [
      'its time come, a crowd starts at once too',
      [start('w', 's1', true)],
      [['s1', T - 80]],
      [['s1', wait(T - 100, T - 5)]],
      T,
      [],
      [],
      undefined,
    ],
    [
      'the settle reached, the newest starts though arrivals go on',
      [start('w', 's1', true)],
      [['s1', T]],
      [['s1', wait(T - S, T + 5)]],
      T,
      [],
      [],
      undefined,
    ],
    [
      'a crowd on a Stage with no arrival on record starts at once',
      [start('w', 's1', true)],
      [],
      [],
      T,
      [],
      [],
      undefined,
    ],
    [
      'an activation alone, no wait running, starts though its Stage had an arrival just now',
      [start('a', 's1')],
      [['s1', T - 1]],
      [],
      T,
      [],
      [],
      undefined,
    ],
    [
      'an arrival the snapshot missed holds its Stage for the next pass',
      [{ ...start('a', 's1'), missed: true }],
      [['s1', T - 5]],
      [],
      T,
      ['a'],
      [['s1', wait(T, T + Q - 5)]],
      T + Q - 5,
    ],
    [
      '... even when it came more than a quiet period ago (slow reads): until the next pass',
      [{ ...start('a', 's1'), missed: true }],
      [['s1', T - Q - 30]],
      [],
      T,
      ['a'],
      [['s1', wait(T, T + 1)]],
      T + 1,
    ],
    [
      '... and never past the settle',
      [{ ...start('a', 's1'), missed: true }],
      [['s1', T - 5]],
      [['s1', wait(T - S, T - 1)]],
      T,
      [],
      [],
      undefined,
    ],
    [
      'two held together wait for the same moment',
      [start('a', 's1'), start('b', 's1')],
      [['s1', T - 10]],
      [['s1', wait(T - 20, T + 5)]],
      T,
      ['a', 'b'],
      [['s1', wait(T - 20, T + Q - 10)]],
      T + Q - 10,
    ],
    [
      'two Stages waiting: the pass wakes for the earlier',
      [start('w', 's1', true), start('v', 's2', true)],
      [
        ['s1', T - 40],
        ['s2', T - 10],
      ],
      [],
      T,
      ['v', 'w'],
      [
        ['s1', wait(T, T + Q - 40)],
        ['s2', wait(T, T + Q - 10)],
      ],
      T + Q - 40,
    ],
    [
      'Stages apart: only the crowded one waits',
      [start('w', 's1', true), start('b', 's2')],
      [
        ['s1', T],
        ['s2', T],
      ],
      [],
      T,
      ['w'],
      [['s1', wait(T, T + Q)]],
      T + Q,
    ],
    [
      'a wait of a Stage with nothing left to start is forgotten once over',
      [],
      [],
      [
        ['s1', wait(T - 100, T - 1)],
        ['s2', wait(T - 10, T + 50)],
      ],
      T,
      [],
      [['s2', wait(T - 10, T + 50)]],
      undefined,
    ],
  ])('%s', (_n, starts, lastArrival, settling, now, held, next, wakeAt) => {
    const r = holdBurstWinners(starts, new Map(lastArrival), new Map(settling), now);
    expect({ held: [...r.held].sort(), settling: [...r.settling], wakeAt: r.wakeAt }).toEqual({
      held,
      settling: next,
      wakeAt,
    });
  });
});
