/**
 * The activation controller's decisions (controllers/activation/decide-pass.ts, decide-object.ts), one table row
 * per rule: what a namespace's pass starts, supersedes, holds and remembers, with bursts arriving
 * in pieces, the Stage limit, a takeover and a reshard; what one activation's requests ask for;
 * what the sweep looks at. No servers, no Temporal.
 */
import { FINALIZER_CLOSE_OUT } from '../../api/group.js';
import { BURST_QUIET_MS, BURST_SETTLE_MS } from '../../decisions/supersede.js';
import { NAMESPACE_LIMIT_REASON } from '../../decisions/fair-share.js';
import { PassStates } from '../../controllers/activation/pass-states.js';
import { snapshot } from '../../controllers/activation/observe.js';
import {
  emptyPassState,
  decidePass,
  type NamespacePassState,
  type PassSnapshot,
} from '../../controllers/activation/decide-pass.js';
import {
  fullSweep,
  handOver,
  decideDeleted,
  decideObject,
  decideStageEvent,
  STANDBY_DELETIONS_KEPT_MS,
  sweepStep,
} from '../../controllers/activation/decide-object.js';
import { activationWorkflowId } from '../../shared/activation.js';
import type { CachedActivation } from '../../shared/cached-activation.js';

const NS = 'shop';
interface Opts {
  ns?: string;
  phase?: string;
  reason?: string;
  workflowId?: boolean;
  sv?: string;
  deleting?: boolean;
  finalizers?: string[];
  annotations?: Record<string, string>;
  requests?: { action: 'cancel' | 'retry' | 'approve' | 'promote' | 'abort'; token: string }[];
  gate?: boolean;
}
/** `name` on `stage`, created at second `at`. */
function va(name: string, stage: string, at: number, o: Opts = {}): CachedActivation {
  const ns = o.ns ?? NS;
  const status = {
    ...(o.phase ? { phase: o.phase } : {}),
    ...(o.reason ? { reason: o.reason } : {}),
    ...(o.workflowId ? { workflowId: activationWorkflowId({ namespace: ns, name, uid: `uid-${name}` }) } : {}),
    ...(o.requests ? { requests: o.requests.map((r) => ({ ...r, outcome: 'Accepted', message: '', time: '' })) } : {}),
    ...(o.gate ? { progression: { weight: 10, gate: { type: 'Approval' } } } : {}),
  };
  return {
    metadata: {
      name,
      namespace: ns,
      uid: `uid-${name}`,
      creationTimestamp: `2030-01-01T00:00:${String(at).padStart(2, '0')}Z`,
      ...(o.deleting ? { deletionTimestamp: '2030-01-01T00:01:00Z' } : {}),
      ...(o.finalizers ? { finalizers: o.finalizers } : {}),
      ...(o.annotations ? { annotations: o.annotations } : {}),
    },
    spec: { stage, stageVersion: o.sv ?? `${stage}-${name}` },
    ...(Object.keys(status).length ? { status } : {}),
  };
}
const id = (o: CachedActivation) =>
  activationWorkflowId({ namespace: o.metadata!.namespace!, name: o.metadata!.name!, uid: o.metadata!.uid! });
const snap = (activations: CachedActivation[], o: Partial<PassSnapshot> = {}): PassSnapshot => ({
  namespace: NS,
  activations,
  seenAt: 1000,
  settleMs: BURST_SETTLE_MS,
  quietMs: BURST_QUIET_MS,
  ...o,
});
const passState = (state: Partial<NamespacePassState> = {}): NamespacePassState => ({ ...emptyPassState(), ...state });
const names = (os: readonly CachedActivation[]) => os.map((o) => o.metadata!.name).sort();
/** Stage `s` exists; StageVersion `s-<name>` of revision `r` for each [name, r]. */
const supersession = (stages: string[], revisions: [string, string, number][]) => ({
  stages: new Set(stages),
  stageVersions: new Map(revisions.map(([stage, name, revision]) => [`${stage}-${name}`, { stage, revision }])),
});

describe('a pass: who starts', () => {
  it.each<[string, CachedActivation[], Partial<NamespacePassState>, string[]]>([
    ['a new activation starts', [va('a', 's1', 1)], {}, ['a']],
    [
      'an InProgress one whose workflow is known to run is asked again (USE_EXISTING costs no second run)',
      [va('a', 's1', 1, { phase: 'InProgress', workflowId: true })],
      {},
      ['a'],
    ],
    ['a finished one does not', [va('a', 's1', 1, { phase: 'Succeeded' })], {}, []],
    ['a deleting one does not', [va('a', 's1', 1, { deleting: true })], {}, []],
    ['one being ended before its start does not', [va('a', 's1', 1)], { skipping: new Set(['uid-a']) }, []],
  ])('%s', (_n, activations, m, starts) => {
    const decision = decidePass(snap(activations), passState(m), 1000);
    expect(decision.read).toEqual([]);
    expect(names(decision.starts)).toEqual(starts);
  });

  it('a takeover: memory empty, the statuses tell what runs; nothing is held or skipped', () => {
    const running = [
      va('a', 's1', 1, { phase: 'InProgress', workflowId: true }),
      va('b', 's2', 2, { phase: 'Waiting', workflowId: true }),
      va('c', 's3', 3, { phase: 'Succeeded' }),
    ];
    const decision = decidePass(snap(running, { limit: 1 }), emptyPassState(), 1000);
    expect(names(decision.starts)).toEqual(['a', 'b']);
    expect(decision.holds).toEqual([]);
    expect(decision.skips).toEqual([]);
  });
});

describe('a pass: the Stage limit (fair share)', () => {
  it('holds the newer Stages, marking only those not marked yet', () => {
    const as = [
      va('a', 's1', 1),
      va('b', 's2', 2),
      va('c', 's3', 3, { phase: 'Waiting', reason: NAMESPACE_LIMIT_REASON }),
    ];
    const decision = decidePass(snap(as, { limit: 1 }), emptyPassState(), 1000);
    expect(names(decision.starts)).toEqual(['a']);
    expect(names(decision.holds)).toEqual(['b']);
    expect(decision.heldMessage).toMatch(/^queued: 1 Stage of namespace shop already activate/);
  });
  it('a Stage whose burst is being waited for keeps its place', () => {
    const as = [va('b', 's2', 1), va('a', 's1', 2)];
    const decision = decidePass(
      snap(as, { limit: 1 }),
      passState({ lastArrival: new Map([['s1', 990]]), settling: new Map([['s1', { since: 900, until: 1100 }]]) }),
      1000,
    );
    expect(names(decision.holds)).toEqual(['b']);
    expect(names(decision.starts)).toEqual([]); // a is held for the rest of its burst
  });
  it("one namespace's pass sees its own activations only: another namespace's burst holds nothing here", () => {
    const cache = [
      va('x1', 's1', 1, { ns: 'other' }),
      va('x2', 's2', 2, { ns: 'other' }),
      va('x3', 's3', 3, { ns: 'other' }),
      va('a', 's9', 4),
    ];
    const decision = decidePass(
      snapshot(cache, NS, 1000, { limit: 1, settleMs: BURST_SETTLE_MS, quietMs: BURST_QUIET_MS }),
      emptyPassState(),
      1000,
    );
    expect(names(decision.starts)).toEqual(['a']);
    expect(decision.holds).toEqual([]);
  });
});

describe('a pass: a burst arriving in pieces', () => {
  const burst = [va('a1', 's1', 1), va('a2', 's1', 2), va('a3', 's1', 3)];
  const revisions: [string, string, number][] = [
    ['s1', 'a1', 1],
    ['s1', 'a2', 2],
    ['s1', 'a3', 3],
  ];

  it('a crowd asks for its Stage and StageVersions first, starting nothing', () => {
    const decision = decidePass(snap(burst), emptyPassState(), 1000);
    expect(decision).toMatchObject({ read: ['s1'], starts: [], skips: [], expectations: [] });
  });
  it('then the newest wins: the others are skipped and remembered, the lock expects the newest, which waits for the quiet', () => {
    const m = passState({ lastArrival: new Map([['s1', 990]]) });
    const decision = decidePass(snap(burst, { supersession: supersession(['s1'], revisions) }), m, 1000);
    expect(decision.skips.map((s) => [s.activation.metadata!.name, s.by.name])).toEqual([
      ['a1', 'a3'],
      ['a2', 'a3'],
    ]);
    expect(decision.expectations.map((w) => w.name)).toEqual(['a3']);
    expect(decision.starts).toEqual([]);
    expect(decision.wakeAt).toBe(990 + BURST_QUIET_MS);
    expect([...decision.nextState.skipping].sort()).toEqual(['uid-a1', 'uid-a2']);
    expect([...decision.nextState.expectSent]).toEqual(['uid-a3']);
    expect(decision.nextState.settling.get('s1')).toEqual({ since: 1000, until: 990 + BURST_QUIET_MS });
  });
  it('a newer piece arrives during the wait: it supersedes the earlier newest, which is skipped too; the expectation is not sent twice', () => {
    const later = [...burst.map((o, i) => (i < 2 ? { ...o, status: { phase: 'Skipped' } } : o)), va('a4', 's1', 4)];
    const m = passState({
      lastArrival: new Map([['s1', 1040]]),
      settling: new Map([['s1', { since: 1000, until: 1065 }]]),
      skipping: new Set(['uid-a1', 'uid-a2']),
      expectSent: new Set(['uid-a3']),
    });
    const decision = decidePass(
      snap(later, { seenAt: 1050, supersession: supersession(['s1'], [...revisions, ['s1', 'a4', 4]]) }),
      m,
      1050,
    );
    expect(decision.skips.map((s) => [s.activation.metadata!.name, s.by.name])).toEqual([['a3', 'a4']]);
    expect(decision.expectations.map((w) => w.name)).toEqual(['a4']);
    expect(decision.starts).toEqual([]);
    // The ended ones are forgotten once the snapshot has them final.
    expect([...decision.nextState.skipping]).toEqual(['uid-a3']);
    expect([...decision.nextState.expectSent].sort()).toEqual(['uid-a3', 'uid-a4']);
    expect(decision.nextState.settling.get('s1')).toEqual({ since: 1000, until: 1040 + BURST_QUIET_MS });
  });
  it('the Stage is quiet: the newest starts, the wait ends', () => {
    const quiet = [va('a4', 's1', 4)];
    const m = passState({
      lastArrival: new Map([['s1', 1040]]),
      settling: new Map([['s1', { since: 1000, until: 1115 }]]),
      skipping: new Set(['uid-a3']),
      expectSent: new Set(['uid-a4']),
    });
    const decision = decidePass(snap(quiet, { seenAt: 1116 }), m, 1116);
    expect(names(decision.starts)).toEqual(['a4']);
    expect(decision.wakeAt).toBeUndefined();
    expect(decision.nextState.settling.size).toBe(0);
  });
  it('a wait never runs past the settle, however long the burst goes on', () => {
    const m = passState({
      lastArrival: new Map([['s1', 1240]]),
      settling: new Map([['s1', { since: 1000, until: 1250 }]]),
    });
    const decision = decidePass(snap([va('a9', 's1', 9)], { seenAt: 1250 }), m, 1250);
    expect(names(decision.starts)).toEqual(['a9']);
  });
  it('an arrival the snapshot missed (during the reads) holds its Stage for the next pass', () => {
    const m = passState({ lastArrival: new Map([['s1', 1005]]) });
    const decision = decidePass(snap([va('a1', 's1', 1)], { seenAt: 1000 }), m, 1010);
    expect(decision.starts).toEqual([]);
    expect(decision.wakeAt).toBe(1005 + BURST_QUIET_MS);
  });
  it('Stage and StageVersions unreadable: every activation starts, and the lock supersedes', () => {
    const decision = decidePass(snap(burst, { supersession: 'unreadable' }), emptyPassState(), 1000);
    expect(names(decision.starts)).toEqual(['a1', 'a2', 'a3']);
    expect(decision.skips).toEqual([]);
  });
  it('a burst on a Stage that does not exist: no one supersedes, each workflow says what is wrong', () => {
    const decision = decidePass(snap(burst, { supersession: supersession([], revisions) }), emptyPassState(), 1000);
    expect(names(decision.starts)).toEqual(['a1', 'a2', 'a3']);
  });
});

describe('memory: a takeover and a reshard', () => {
  const w = 'vectoractivation/shop/a/uid-a';
  function remembered(): PassStates {
    const m = new PassStates();
    m.running(NS, w, true);
    m.arrived(NS, 's1', 5);
    m.apply(NS, {
      settling: new Map([['s1', { since: 1, until: 9 }]]),
      skipping: new Set(['uid-b']),
      expectSent: new Set(['uid-c']),
    });
    return m;
  }
  it('a takeover forgets what ran and the waits, keeps the arrivals (a burst may be arriving)', () => {
    const m = remembered();
    m.takeover();
    expect(m.of(NS)).toMatchObject({ running: new Set(), settling: new Map(), lastArrival: new Map([['s1', 5]]) });
  });
  it('a dropped namespace is asked again by whoever serves it next', () => {
    const m = remembered();
    m.dropped(NS);
    expect(m.of(NS)).toMatchObject({ running: new Set(), settling: new Map(), skipping: new Set(['uid-b']) });
  });
  it('a namespace no longer watched is forgotten whole; served again, it starts from the statuses', () => {
    const m = remembered();
    m.forget(NS);
    expect(m.of(NS)).toEqual(emptyPassState());
    const decision = decidePass(
      snap([va('a', 's1', 1, { phase: 'InProgress', workflowId: true }), va('b', 's2', 2)]),
      m.of(NS),
      1000,
    );
    expect(names(decision.starts)).toEqual(['a', 'b']);
  });
  it('a deletion forgets the activation', () => {
    const m = remembered();
    m.deleted(NS, 'uid-b', 'x');
    m.deleted(NS, 'uid-a', w);
    expect(m.of(NS)).toMatchObject({ running: new Set(), skipping: new Set() });
  });
});

describe('one activation: requests by annotation', () => {
  const CANCEL = 'konfidence.cloud/cancel';
  const RETRY = 'konfidence.cloud/retry';
  const APPROVE = 'konfidence.cloud/approve';
  it.each<[string, CachedActivation, boolean, unknown[], boolean]>([
    ["a new one asks for its namespace's pass", va('a', 's1', 1), false, [], true],
    ['one known to run asks for nothing', va('a', 's1', 1, { phase: 'InProgress' }), true, [], false],
    [
      'a cancel before the start is answered without Temporal',
      va('a', 's1', 1, { annotations: { [CANCEL]: 'x' } }),
      false,
      [{ action: { kind: 'relay', action: 'cancel' }, beforeStart: true }],
      true,
    ],
    [
      'a cancel after the start goes to the workflow',
      va('a', 's1', 1, { phase: 'InProgress', workflowId: true, annotations: { [CANCEL]: 'x' } }),
      false,
      [{ action: { kind: 'relay', action: 'cancel' }, beforeStart: false }],
      true,
    ],
    [
      'an approve before the start is answered there (refused)',
      va('a', 's1', 1, { annotations: { [APPROVE]: 'alice ok' } }),
      false,
      [{ action: { kind: 'relay', action: 'approve', by: 'alice' }, beforeStart: true }],
      true,
    ],
    [
      'a promote of a running one goes to the workflow',
      va('a', 's1', 1, { phase: 'InProgress', annotations: { 'konfidence.cloud/promote': 'bob 1' } }),
      true,
      [{ action: { kind: 'relay', action: 'promote', by: 'bob' }, beforeStart: false }],
      false,
    ],
    [
      'an abort of a Succeeded one is refused by its phase',
      va('a', 's1', 1, { phase: 'Succeeded', annotations: { 'konfidence.cloud/abort': 'bob 1' } }),
      false,
      [{ action: { kind: 'refuse', action: 'abort' }, beforeStart: false }],
      false,
    ],
    [
      'a retry of a Failed one goes to its workflow',
      va('a', 's1', 1, { phase: 'Failed', workflowId: true, annotations: { [RETRY]: '2' } }),
      false,
      [{ action: { kind: 'relay', action: 'retry' }, beforeStart: false }],
      false,
    ],
    [
      'an answered request is not asked again',
      va('a', 's1', 1, {
        phase: 'Failed',
        annotations: { [RETRY]: '2' },
        requests: [{ action: 'retry', token: `${RETRY}=2` }],
      }),
      false,
      [],
      false,
    ],
    [
      'deleted with the close-out finalizer: the deletion goes to the workflow, or a close-out',
      va('a', 's1', 1, { phase: 'InProgress', deleting: true, finalizers: [FINALIZER_CLOSE_OUT] }),
      true,
      [{ action: { kind: 'deleted' } }],
      false,
    ],
  ])('%s', (_n, o, knownToRun, requests, pass) => {
    const decision = decideObject(o, new Set(knownToRun ? [id(o)] : []));
    expect(decision.pass).toBe(pass);
    expect(decision.requests).toEqual(
      requests.map((r) =>
        expect.objectContaining({
          ...(r as object),
          action: expect.objectContaining((r as { action: object }).action),
        }),
      ),
    );
  });
  it('each request has its own key: a new value is a new request', () => {
    const [one] = decideObject(
      va('a', 's1', 1, { phase: 'Failed', annotations: { [RETRY]: '1' } }),
      new Set(),
    ).requests;
    const [two] = decideObject(
      va('a', 's1', 1, { phase: 'Failed', annotations: { [RETRY]: '2' } }),
      new Set(),
    ).requests;
    expect(one!.key).not.toBe(two!.key);
  });
});

describe('deletions', () => {
  it.each<[string, string | undefined, boolean, string]>([
    ['a Succeeded one: nothing runs', 'Succeeded', true, 'nothing'],
    ['a Skipped one: nothing runs', 'Skipped', true, 'nothing'],
    ['an InProgress one, acting: its workflow is told', 'InProgress', true, 'signal'],
    ['an InProgress one, standby or not served: told by whoever acts next', 'InProgress', false, 'later'],
  ])('%s', (_n, phase, acting, decision) =>
    expect(decideDeleted(va('a', 's1', 1, phase ? { phase } : {}), acting)).toBe(decision),
  );

  it('a takeover hands over the recent deletions of the namespaces it serves; old ones go', () => {
    const seen = new Map([
      ['vectoractivation/shop/a/u1', { at: 100 }],
      ['vectoractivation/other/b/u2', { at: 100 }],
      ['vectoractivation/shop/c/u3', { at: 0 }],
    ]);
    const { signal, keep } = handOver(seen, STANDBY_DELETIONS_KEPT_MS + 50, (ns) => ns === NS);
    expect(signal).toEqual([['vectoractivation/shop/a/u1', { at: 100 }]]);
    expect([...keep.keys()]).toEqual(['vectoractivation/other/b/u2']);
  });
});

describe("a Stage's deletion: its unfinished activations are told, once", () => {
  const stage = (extra: { deleting?: boolean; uid?: string; ns?: string } = {}) => ({
    kind: 'Stage',
    metadata: {
      name: 's1',
      namespace: extra.ns ?? NS,
      uid: extra.uid ?? 'stage-u1',
      ...(extra.deleting ? { deletionTimestamp: '2026-12-04T00:00:00Z' } : {}),
    },
  });
  const cached = [
    va('a', 's1', 1, { phase: 'InProgress', workflowId: true }),
    va('b', 's1', 2, { phase: 'Waiting' }),
    va('c', 's1', 3),
    va('d', 's1', 1, { phase: 'Succeeded' }),
    va('e', 's2', 1, { phase: 'InProgress' }),
    va('f', 's1', 1, { ns: 'other', phase: 'InProgress' }),
  ];
  const told = (...uids: string[]) => new Set(uids);
  it.each([
    [
      'deleted: every unfinished activation of that Stage in its namespace',
      'DELETED',
      stage(),
      told(),
      ['a', 'b', 'c'],
    ],
    ['being deleted (a finalizer holds it): the same', 'MODIFIED', stage({ deleting: true }), told(), ['a', 'b', 'c']],
    ['listed while being deleted (a restart): the same', 'ADDED', stage({ deleting: true }), told(), ['a', 'b', 'c']],
    ['a change of a Stage that stays: nothing', 'MODIFIED', stage(), told(), undefined],
    ['its deletion told already: not again', 'MODIFIED', stage({ deleting: true }), told('stage-u1'), undefined],
    ['gone after it was told while being deleted: not again', 'DELETED', stage(), told('stage-u1'), undefined],
    [
      'another Stage of that name was told: this one still is',
      'DELETED',
      stage({ uid: 'stage-u2' }),
      told('stage-u1'),
      ['a', 'b', 'c'],
    ],
  ] as const)('%s', (_n, type, st, toldAlready, toldNow) => {
    const decision = decideStageEvent(type, st, cached, toldAlready);
    if (toldNow === undefined) return expect(decision).toBeUndefined();
    expect(decision!.notice).toEqual({
      namespace: NS,
      stage: 's1',
      uid: st.metadata.uid,
      ...(type === 'DELETED' ? {} : { deleting: true }),
    });
    expect(decision!.workflowIds).toEqual(toldNow.map((n) => id(cached.find((o) => o.metadata!.name === n)!)));
  });
});

describe('the sweep of unfinished activations', () => {
  it.each<[string, CachedActivation, boolean, Set<string> | undefined, string]>([
    ['finished: nothing', va('a', 's1', 1, { phase: 'Succeeded' }), false, undefined, 'skip'],
    [
      'deleted with the close-out finalizer: decided again',
      va('a', 's1', 1, { deleting: true, finalizers: [FINALIZER_CLOSE_OUT] }),
      false,
      undefined,
      'reconcile',
    ],
    ['deleted without it: nothing', va('a', 's1', 1, { deleting: true }), false, undefined, 'skip'],
    [
      'not started (held, or its start failed): the pass decides again',
      va('a', 's1', 1, { phase: 'Waiting', reason: NAMESPACE_LIMIT_REASON }),
      false,
      undefined,
      'pass',
    ],
    [
      'started: its workflow is looked at',
      va('a', 's1', 1, { phase: 'InProgress', workflowId: true }),
      false,
      undefined,
      'check',
    ],
    [
      'at a gate, not among the closed: left alone',
      va('a', 's1', 1, { phase: 'InProgress', workflowId: true, gate: true }),
      false,
      new Set(),
      'skip',
    ],
    [
      'at a gate, among the closed: looked at',
      va('a', 's1', 1, { phase: 'InProgress', workflowId: true, gate: true }),
      false,
      new Set(['vectoractivation/shop/a/uid-a']),
      'check',
    ],
    [
      'at a gate, a full sweep: looked at',
      va('a', 's1', 1, { phase: 'InProgress', workflowId: true, gate: true }),
      false,
      undefined,
      'check',
    ],
  ])('%s', (_n, o, knownToRun, closed, step) =>
    expect(sweepStep(o, new Set(knownToRun ? [id(o)] : []), closed)).toBe(step),
  );

  it.each([
    [0, 5, true],
    [1, 5, false],
    [20, 5, true],
    [3, undefined, true],
  ])('sweep %i (the one before at %s) is full: %s', (count, since, full) => expect(fullSweep(count, since)).toBe(full));
});
