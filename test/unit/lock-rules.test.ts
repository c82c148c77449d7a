/**
 * The Stage lock's rules (stage-lock/rules.ts) as tables: events in, state and notices out. No
 * servers, no Temporal; test/unit/stage-lock.test.ts runs the loop around them.
 */
import type { LockRequest, LockState } from '../../stage-lock/contract.js';
import { newer, type Candidate } from '../../decisions/newer.js';
import {
  EXPECT_MS,
  grantable,
  idle,
  initialState,
  kept,
  step,
  type LockEvent,
  type LockNotice,
  type RuleState,
} from '../../stage-lock/rules.js';

const req = (id: string, revision: number): LockRequest => ({ requester: id, revision, activation: `ns/${id}` });
const ask = (id: string, revision: number): LockEvent => ({
  type: 'request',
  request: req(id, revision),
  by: 'signal',
});
const askU = (id: string, revision: number): LockEvent => ({
  type: 'request',
  request: req(id, revision),
  by: 'update',
});
const expectE = (id: string, revision: number): LockEvent => ({ type: 'expect', request: req(id, revision) });
const release = (id: string): LockEvent => ({ type: 'release', requester: id, by: 'signal' });
const releaseU = (id: string): LockEvent => ({ type: 'release', requester: id, by: 'update' });
const closed = (id: string): LockEvent => ({ type: 'closed', requester: id });
const tick: LockEvent = { type: 'tick' };
/** An event at workflow time `ms` (the events before it keep their own times; the first is at 0). */
const at = (ms: number, event: LockEvent): [number, LockEvent] => [ms, event];
type Timed = LockEvent | [number, LockEvent];

function say(n: LockNotice): string {
  switch (n.type) {
    case 'granted':
      return `granted ${n.to}`;
    case 'superseded':
      return `${n.to} superseded by ${n.by.requester}`;
    case 'newerWaits':
      return `${n.to} told ${n.newer.requester} waits`;
    case 'answer':
      return n.answer.outcome === 'superseded'
        ? `answer superseded by ${n.answer.by} (${n.answer.revision})`
        : `answer ${n.answer.outcome}`;
    case 'released':
      return n.answer.granted ? `released, granted ${n.answer.granted}` : 'released';
    case 'takenBack':
      return `taken back from ${n.holder.requester}`;
  }
}

/** The state as people read it: holder, waiting, the expected request while it is waited for. */
function show(s: RuleState, now: number): string {
  const live = s.expected && now < s.expected.until ? ` expected=${s.expected.requester}` : '';
  return `holder=${s.holder?.requester ?? '-'} waiting=${s.waiting.map((w) => w.requester).join(',') || '-'}${live}`;
}

function run(events: Timed[], from: LockState = { waiting: [] }): { state: RuleState; now: number; said: string[] } {
  let state = initialState(from);
  let now = 0;
  const said: string[] = [];
  for (const e of events) {
    const [t, event] = Array.isArray(e) ? e : [now, e];
    now = t;
    const next = step(state, event, now);
    state = next.state;
    said.push(...next.notices.map(say));
  }
  return { state, now, said };
}

/** The first holder, granted by a turn of the loop. */
const held = (id: string, revision: number): Timed[] => [ask(id, revision), tick];

describe('step', () => {
  // [name, events, state after, notices in order]
  it.each<[string, Timed[], string, string[]]>([
    // Grant and queue.
    [
      'a free Stage goes to the first in line at the turn of the loop',
      [ask('a', 1), tick],
      'holder=a waiting=-',
      ['granted a'],
    ],
    ['asked by signal, a request is queued; only the turn grants it', [ask('a', 1)], 'holder=- waiting=a', []],
    [
      'asked by Update, a free Stage is granted in the answer',
      [askU('a', 1)],
      'holder=a waiting=-',
      ['answer granted'],
    ],
    [
      'a busy Stage queues the request',
      [...held('h', 1), askU('b', 1)],
      'holder=h waiting=b',
      ['granted h', 'answer queued'],
    ],
    [
      'nothing is granted while the Stage is held',
      [...held('h', 1), ask('b', 1), tick],
      'holder=h waiting=b',
      ['granted h'],
    ],
    ['an empty turn says nothing', [tick], 'holder=- waiting=-', []],

    // Supersede.
    [
      'the newest revision supersedes the older waiters',
      [...held('h', 10), ask('a', 5), ask('b', 7)],
      'holder=h waiting=b',
      ['granted h', 'a superseded by b'],
    ],
    [
      'an older revision arriving later never supersedes a newer one',
      [...held('h', 10), ask('b', 7), ask('c', 6)],
      'holder=h waiting=b',
      ['granted h', 'c superseded by b'],
    ],
    [
      'equal revisions: the later arrival wins',
      [...held('h', 10), ask('b', 7), ask('d', 7)],
      'holder=h waiting=d',
      ['granted h', 'b superseded by d'],
    ],
    [
      'asked by Update, an older request is told in the answer',
      [askU('r1', 1), askU('r3', 3), askU('r2', 2)],
      'holder=r1 waiting=r3',
      ['answer granted', 'r1 told r3 waits', 'answer queued', 'answer superseded by ns/r3 (3)'],
    ],
    [
      'a superseded requester asking again stays superseded, by the one that superseded it',
      [...held('h', 10), ask('b', 7), ask('d', 7), ask('b', 7)],
      'holder=h waiting=d',
      ['granted h', 'b superseded by d', 'b superseded by d'],
    ],
    [
      'a superseded requester expected afterwards is not waited for',
      [...held('h', 10), ask('b', 7), ask('d', 7), expectE('b', 7)],
      'holder=h waiting=d',
      ['granted h', 'b superseded by d'],
    ],
    [
      'the holder is never superseded',
      [...held('h', 1), ask('b', 9), tick],
      'holder=h waiting=b',
      ['granted h', 'h told b waits'],
    ],

    // The holder told of a newer StageVersion.
    [
      'the holder is told once that a newer StageVersion waits',
      [...held('h', 1), ask('b', 2), ask('c', 3)],
      'holder=h waiting=c',
      ['granted h', 'h told b waits', 'b superseded by c'],
    ],
    [
      'a request of the holder’s own revision does not tell it',
      [...held('h', 2), ask('b', 2)],
      'holder=h waiting=b',
      ['granted h'],
    ],
    ['an older request does not tell it', [...held('h', 2), ask('b', 1)], 'holder=h waiting=b', ['granted h']],
    [
      'holding again after a release, it is told again',
      [...held('h', 1), ask('b', 2), release('b'), release('h'), ask('h', 1), tick, ask('c', 2)],
      'holder=h waiting=c',
      ['granted h', 'h told b waits', 'granted h', 'h told c waits'],
    ],

    // Expect.
    [
      'an expected newer request holds an older one back on a free Stage',
      [expectE('x', 9), ask('old', 3), tick],
      'holder=- waiting=old expected=x',
      [],
    ],
    [
      'the expected request asks: it supersedes the older one and is granted',
      [expectE('x', 9), ask('old', 3), tick, ask('x', 9), tick],
      'holder=x waiting=-',
      ['old superseded by x', 'granted x'],
    ],
    [
      'the expectation runs out after EXPECT_MS: the older one is granted',
      [expectE('x', 9), ask('old', 3), at(EXPECT_MS - 1, tick), at(EXPECT_MS, tick)],
      'holder=old waiting=-',
      ['granted old'],
    ],
    [
      'a queued request newer than the expected one ends the expectation',
      [expectE('x', 2), ask('a', 5), tick],
      'holder=a waiting=-',
      ['granted a'],
    ],
    [
      'a request of the expected revision heard after it ends it: the later arrival wins',
      [expectE('x', 5), ask('a', 5), tick],
      'holder=a waiting=-',
      ['granted a'],
    ],
    [
      'an expectation heard after a waiter of its revision holds that waiter back',
      [ask('a', 5), expectE('x', 5), tick],
      'holder=- waiting=a expected=x',
      [],
    ],
    [
      '... and does not hold back a waiter of a higher revision (it stays expected until it asks or runs out)',
      [ask('a', 6), expectE('x', 5), tick],
      'holder=a waiting=- expected=x',
      ['granted a'],
    ],
    [
      'told again, the expectation keeps its end',
      [expectE('x', 9), at(10_000, expectE('x', 9)), ask('old', 3), at(EXPECT_MS, tick)],
      'holder=old waiting=-',
      ['granted old'],
    ],
    [
      'an older expectation does not replace a newer one',
      [expectE('x', 5), expectE('y', 4), ask('old', 3), tick],
      'holder=- waiting=old expected=x',
      [],
    ],
    [
      'a newer expectation replaces an older one, with an end of its own',
      [expectE('x', 5), at(10_000, expectE('y', 6)), ask('old', 3), at(EXPECT_MS, tick)],
      'holder=- waiting=old expected=y',
      [],
    ],
    [
      'an expectation of the holder or a waiter is no news',
      [...held('h', 1), ask('b', 2), expectE('h', 9), expectE('b', 9)],
      'holder=h waiting=b',
      ['granted h', 'h told b waits'],
    ],
    [
      'asked by Update while a newer request is expected: queued',
      [expectE('x', 9), askU('old', 3)],
      'holder=- waiting=old expected=x',
      ['answer queued'],
    ],
    [
      'an expectation while the Stage is held keeps nothing from the holder',
      [...held('h', 1), expectE('x', 9), at(EXPECT_MS, tick)],
      'holder=h waiting=-',
      ['granted h'],
    ],

    // Release.
    [
      'a release by signal frees the Stage; the turn grants the next',
      [...held('a', 1), ask('b', 1), release('a'), tick],
      'holder=b waiting=-',
      ['granted a', 'granted b'],
    ],
    [
      'a release by Update grants the next in the answer, for the releaser to tell',
      [...held('a', 1), ask('b', 1), releaseU('a'), tick],
      'holder=b waiting=-',
      ['granted a', 'released, granted b'],
    ],
    [
      'released again by Update (a retry), the answer is the same',
      [...held('a', 1), ask('b', 1), releaseU('a'), releaseU('a')],
      'holder=b waiting=-',
      ['granted a', 'released, granted b', 'released, granted b'],
    ],
    [
      'released again by signal (the answer unheard), the lock tells the new holder itself',
      [...held('a', 1), ask('b', 1), releaseU('a'), release('a')],
      'holder=b waiting=-',
      ['granted a', 'released, granted b', 'granted b'],
    ],
    [
      'once the new holder released, a late retry names nobody',
      [...held('a', 1), ask('b', 1), releaseU('a'), release('b'), releaseU('a')],
      'holder=- waiting=-',
      ['granted a', 'released, granted b', 'released'],
    ],
    [
      'a release by Update of one that holds nothing grants nothing; the turn does',
      [ask('a', 1), releaseU('x'), tick],
      'holder=a waiting=-',
      ['released', 'granted a'],
    ],
    [
      'a release by Update while a newer request is expected hands nothing on',
      [...held('a', 1), ask('b', 1), expectE('x', 9), releaseU('a')],
      'holder=- waiting=b expected=x',
      ['granted a', 'released'],
    ],
    [
      'a waiting requester that gives up leaves the queue',
      [...held('a', 1), ask('b', 1), release('b')],
      'holder=a waiting=-',
      ['granted a'],
    ],
    [
      'a release repeated changes nothing',
      [...held('a', 1), release('a'), release('a'), tick],
      'holder=- waiting=-',
      ['granted a'],
    ],

    // Idempotent requests.
    [
      'the holder asking again is confirmed, by signal',
      [...held('a', 1), ask('a', 1)],
      'holder=a waiting=-',
      ['granted a', 'granted a'],
    ],
    [
      'the holder asking again is confirmed, by Update',
      [askU('a', 1), askU('a', 1)],
      'holder=a waiting=-',
      ['answer granted', 'answer granted'],
    ],
    [
      'a waiter asking again is queued once and told nothing',
      [...held('h', 1), ask('a', 1), ask('a', 1)],
      'holder=h waiting=a',
      ['granted h'],
    ],
    [
      'queued by signal, then granted by Update: told by signal too, as the answer may be lost',
      [ask('a', 1), askU('a', 1)],
      'holder=a waiting=-',
      ['granted a', 'answer granted'],
    ],

    // Holder found closed.
    [
      'a holder found closed is taken back; the turn grants the next',
      [...held('a', 1), ask('b', 2), closed('a'), tick],
      'holder=b waiting=-',
      ['granted a', 'a told b waits', 'taken back from a', 'granted b'],
    ],
    [
      'a closed requester that is not the holder takes nothing back',
      [...held('a', 1), ask('b', 1), closed('b')],
      'holder=a waiting=b',
      ['granted a'],
    ],
    [
      'found closed twice, it is taken back once',
      [...held('a', 1), closed('a'), closed('a')],
      'holder=- waiting=-',
      ['granted a', 'taken back from a'],
    ],
  ])('%s', (_n, events, state, notices) => {
    const r = run(events);
    expect({ state: show(r.state, r.now), notices: r.said }).toEqual({ state, notices });
  });

  it('a continued run keeps the holder, the waiters, the expectation and the hand-on', () => {
    const from: LockState = {
      holder: req('b', 2),
      waiting: [req('c', 3)],
      expected: { ...req('x', 9), until: 5_000 },
      handedOn: { by: 'a', to: 'b' },
      toldNewer: 'b',
    };
    const r = run([releaseU('a'), ask('d', 4)], from);
    expect(r.said).toEqual(['released, granted b', 'c superseded by d']);
    expect(kept(r.state)).toEqual({
      holder: req('b', 2),
      waiting: [req('d', 4)],
      expected: { ...req('x', 9), until: 5_000 },
      handedOn: { by: 'a', to: 'b' },
      toldNewer: 'b',
    });
  });

  it('a continued run forgets whom it superseded: kept state has no memory of it', () => {
    const r = run([...held('h', 9), ask('b', 1), ask('c', 1)]);
    expect(r.state.superseded.map(([who, by]) => [who, by.requester])).toEqual([['b', 'c']]);
    expect(kept(r.state)).not.toHaveProperty('superseded');
    expect(run([ask('b', 1)], kept(r.state)).said).toEqual(['c superseded by b']);
  });

  it('remembers the last 256 superseded requesters', () => {
    // w0 … w257, each superseded by the next: 257 superseded, the first of them forgotten.
    const r = run([...held('h', 9), ...Array.from({ length: 258 }, (_, i) => ask(`w${i}`, 1))]);
    expect(r.state.superseded).toHaveLength(256);
    // w0 asks again: forgotten, it is the later of equal revisions and supersedes the waiter.
    expect(step(r.state, ask('w0', 1), 0).notices.map(say)).toEqual(['w257 superseded by w0']);
    // w1 is remembered: superseded again, by the one that superseded it.
    expect(step(r.state, ask('w1', 1), 0).notices.map(say)).toEqual(['w1 superseded by w2']);
  });

  it('changes nothing it is given', () => {
    const { state } = run([...held('h', 1), ask('a', 2), expectE('x', 9), ...held('b', 1)]);
    const before = JSON.stringify(state);
    const freeze = (o: unknown): void => {
      if (typeof o !== 'object' || o === null) return;
      Object.freeze(o);
      Object.values(o).forEach(freeze);
    };
    freeze(state);
    for (const e of [
      ask('c', 3),
      askU('d', 3),
      ask('h', 1),
      release('h'),
      releaseU('h'),
      closed('h'),
      expectE('y', 10),
      tick,
    ]) {
      for (const now of [0, EXPECT_MS + 1]) step(state, e, now);
    }
    expect(JSON.stringify(state)).toBe(before);
  });
});

describe('grantable and idle', () => {
  it.each<[string, Timed[], number, boolean, boolean]>([
    ['a new lock', [], 0, false, true],
    ['one waiting on a free Stage', [ask('a', 1)], 0, true, false],
    ['held', held('a', 1), 0, false, false],
    ['only an expectation', [expectE('x', 1)], 0, false, false],
    ['only an expectation, run out', [expectE('x', 1)], EXPECT_MS, false, true],
    ['one waiting, held back by an expectation', [expectE('x', 9), ask('a', 1)], EXPECT_MS - 1, false, false],
    ['one waiting, the expectation run out', [expectE('x', 9), ask('a', 1)], EXPECT_MS, true, false],
  ])('%s', (_n, events, now, isGrantable, isIdle) => {
    const { state } = run(events);
    expect({ grantable: grantable(state, now), idle: idle(state, now) }).toEqual({
      grantable: isGrantable,
      idle: isIdle,
    });
  });
});

describe('newer: the one rule of which activation is newer, for the lock and the watcher', () => {
  const c = (revision: number, came: string | number, name?: string): Candidate => ({
    revision,
    came,
    ...(name ? { name } : {}),
  });
  it.each<[string, Candidate, Candidate, boolean]>([
    ['a higher revision, whenever it came', c(3, 1), c(2, 2), true],
    ['a lower revision, whenever it came', c(2, 2), c(3, 1), false],
    ['equal revisions: the later arrival at the lock', c(2, 1), c(2, 0), true],
    ['equal revisions: not the earlier arrival', c(2, 0), c(2, 1), false],
    [
      'equal revisions: the later creation time',
      c(2, '2026-11-30T10:00:02Z', 'a'),
      c(2, '2026-11-30T10:00:01Z', 'b'),
      true,
    ],
    [
      'equal revisions in the same second: the name',
      c(2, '2026-11-30T10:00:01Z', 'b'),
      c(2, '2026-11-30T10:00:01Z', 'a'),
      true,
    ],
    ['the same in every way: not newer', c(2, '2026-11-30T10:00:01Z', 'a'), c(2, '2026-11-30T10:00:01Z', 'a'), false],
  ])('%s', (_n, a, b, expected) => {
    expect(newer(a, b)).toBe(expected);
  });
});
