/** Which Events tell an activation's story (decisions/events.ts) and how they are named (k8s/events.ts). No servers. */
import type { StepProgress } from '../../decisions/activation.js';
import {
  activationEvents,
  activeChangedEvents,
  cleanedUpEvents,
  requestEvent,
  type StatusView,
} from '../../decisions/events.js';
import {
  clipNote,
  eventName,
  eventWord,
  flushEvents,
  microTime,
  nowMicros,
  saysTheSame,
  sendEvents,
  SERIES_WINDOW_MS,
  SeriesCache,
  type EventRecorder,
} from '../../k8s/events.js';

const DNS_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const facts = { name: 'shop-to-3', stage: 'shop', stageVersion: 'shop-3' };
const step = (
  name: string,
  phase: StepProgress['phase'],
  tasks: StepProgress['tasks'] = [{ registration: `${name}-reg`, phase: 'Pending' }],
): StepProgress => ({ name, phase, tasks });
const report = (phase: string, reason: string, message: string, extra: Partial<StatusView> = {}) => ({
  phase,
  reason,
  message,
  attempt: 1,
  ...extra,
});
/** reason@kind: what kubectl describe of each object shows, in order. */
const story = (before: StatusView, after: ReturnType<typeof report>, holder?: string) =>
  activationEvents({ ...facts, ...(holder ? { holder } : {}) }, before, after).map(
    (e) => `${e.reason}@${e.kind}${e.type === 'Warning' ? '!' : ''}`,
  );

describe('activationEvents: one status write, the transitions it makes', () => {
  const gw = (phase: StepProgress['phase'], task: StepProgress['tasks'][number]['phase'] = 'Pending') =>
    step('gateway', phase, [{ registration: 'gw', execution: 'shop-to-3-0-gw', phase: task }]);
  it.each([
    ['the workflow picks it up', {}, report('Pending', 'Validating', 'checking'), ['Started@VectorActivation']],
    [
      'a retry attempt starts again',
      { phase: 'Failed', attempt: 1 },
      report('Pending', 'Validating', 'checking', { attempt: 2 }),
      ['Started@VectorActivation'],
    ],
    [
      'queued at the Stage',
      { phase: 'Pending' },
      report('Waiting', 'WaitingForStage', 'waiting'),
      ['Waiting@VectorActivation'],
    ],
    [
      'the first step starts: the Stage hears of it',
      { phase: 'Waiting' },
      report('InProgress', 'RunningPlan', 'step 1/2', { steps: [gw('InProgress'), step('mesh', 'Pending')] }),
      ['ActivationStarted@Stage'],
    ],
    [
      'a step ends, the next starts',
      { phase: 'InProgress', steps: [gw('InProgress'), step('mesh', 'Pending')] },
      report('InProgress', 'RunningPlan', 'step 2/2', {
        steps: [gw('Succeeded', 'Succeeded'), step('mesh', 'InProgress')],
      }),
      ['StepSucceeded@VectorActivation'],
    ],
    [
      'a failed step, then the revert',
      { phase: 'InProgress', steps: [gw('Succeeded', 'Succeeded'), step('mesh', 'InProgress')] },
      report('InProgress', 'Reverting', 'reverting step gateway', {
        steps: [
          gw('Succeeded', 'Succeeded'),
          step('mesh', 'Failed', [{ registration: 'm', phase: 'Error', message: 'boom' }]),
        ],
      }),
      ['StepFailed@VectorActivation!', 'Reverting@VectorActivation!'],
    ],
    [
      'reverted, then Failed: the Stage hears of it',
      { phase: 'InProgress', reason: 'Reverting', steps: [gw('Succeeded', 'Succeeded')] },
      report('Failed', 'TaskFailed', 'boom; every task that ran was reverted', {
        steps: [gw('Reverted', 'Succeeded')],
      }),
      ['Reverted@VectorActivation', 'Failed@VectorActivation!', 'ActivationFailed@Stage!'],
    ],
    [
      'a revert that failed',
      { phase: 'InProgress', reason: 'Reverting', steps: [gw('Succeeded', 'Succeeded')] },
      report('Failed', 'TaskFailed', 'x', { steps: [gw('Failed', 'Succeeded')] }),
      ['RevertFailed@VectorActivation!', 'Failed@VectorActivation!', 'ActivationFailed@Stage!'],
    ],
    [
      'Succeeded',
      { phase: 'InProgress', steps: [gw('InProgress')] },
      report('Succeeded', 'Activated', 'now serves shop-3', { steps: [gw('Succeeded', 'Succeeded')] }),
      ['Succeeded@VectorActivation'],
    ],
    [
      "a new activation's first write, the Stage free: it started, and the Stage hears of it",
      {},
      report('InProgress', 'RunningPlan', 'step 1/2', { steps: [gw('InProgress'), step('mesh', 'Pending')] }),
      ['Started@VectorActivation', 'ActivationStarted@Stage'],
    ],
    [
      "a new activation's first write, the Stage held: it started, and waits",
      {},
      report('Waiting', 'WaitingForStage', 'waiting'),
      ['Started@VectorActivation', 'Waiting@VectorActivation'],
    ],
    [
      "a new activation's first write is its end: no start told",
      {},
      report('Skipped', 'OlderThanActive', 'older'),
      ['Skipped@VectorActivation'],
    ],
    ['Skipped', { phase: 'Waiting' }, report('Skipped', 'OlderThanActive', 'older'), ['Skipped@VectorActivation']],
    [
      'Cancelled while waiting',
      { phase: 'Waiting' },
      report('Cancelled', 'Cancelled', 'cancelled while waiting'),
      ['Cancelled@VectorActivation'],
    ],
    [
      'the same write again says nothing',
      { phase: 'InProgress', reason: 'RunningPlan', message: 'step 1/2', attempt: 1, steps: [gw('InProgress')] },
      report('InProgress', 'RunningPlan', 'step 1/2', { steps: [gw('InProgress')] }),
      [],
    ],
    [
      'a final phase written again says nothing',
      { phase: 'Failed', reason: 'TaskFailed', message: 'x' },
      report('Failed', 'TaskFailed', 'x'),
      [],
    ],
  ])('%s', (_n, before, after, expected) => expect(story(before, after)).toEqual(expected));

  it('notes say what a person needs: the holder, the executions, the reason, the first error', () => {
    const note = (before: StatusView, after: ReturnType<typeof report>, holder?: string) =>
      activationEvents({ ...facts, ...(holder ? { holder } : {}) }, before, after).map((e) => e.note);
    expect(note({ phase: 'Pending' }, report('Waiting', 'WaitingForStage', 'w'), 'ns/shop-to-2')).toEqual([
      'queued for Stage shop (held by ns/shop-to-2)',
    ]);
    expect(
      note(
        { phase: 'InProgress', steps: [step('gateway', 'InProgress')] },
        report('InProgress', 'RunningPlan', 's', {
          steps: [step('gateway', 'Succeeded', [{ registration: 'gw', phase: 'Succeeded' }])],
          attempt: 2,
        }),
      )[0],
    ).toBe('step 1/1 gateway (attempt 2) succeeded: execution shop-to-3-0-gw-r2');
    expect(
      note(
        { phase: 'InProgress', steps: [step('gateway', 'InProgress')] },
        report('Succeeded', 'Activated', 'Stage shop now serves shop-3 (was shop-2)', {
          steps: [step('gateway', 'Succeeded', [{ registration: 'gw', phase: 'Succeeded' }])],
        }),
      ),
    ).toEqual([
      'Activated: Stage shop now serves shop-3 (was shop-2); step 1/1 gateway succeeded: execution shop-to-3-0-gw',
    ]);
    expect(note({ phase: 'Waiting' }, report('Skipped', 'Superseded', 'superseded by ns/shop-to-4'))).toEqual([
      'Superseded: superseded by ns/shop-to-4',
    ]);
    expect(
      note(
        { phase: 'InProgress' },
        report('Failed', 'Forbidden', 'patching refused', { firstError: 'executor: 403' }),
      )[0],
    ).toBe('Forbidden: patching refused; first error: executor: 403');
    const reverted = note(
      { phase: 'InProgress', steps: [step('gateway', 'Succeeded', [{ registration: 'gw', phase: 'Succeeded' }])] },
      report('Failed', 'TaskFailed', 'x', {
        previousStageVersion: 'shop-2',
        steps: [step('gateway', 'Reverted', [{ registration: 'gw', phase: 'Succeeded' }])],
      }),
    );
    expect(reverted[0]).toBe('step 1/1 gateway reverted: traffic back on shop-2 (execution shop-to-3-0-gw-revert)');
  });

  it('the Stage and StageVersions: active moved, cleanup, requests', () => {
    expect(activeChangedEvents('shop', 'shop-3', 'shop-2').map((e) => `${e.reason}@${e.kind}/${e.name}`)).toEqual([
      'ActiveStageVersionChanged@Stage/shop',
      'Activated@StageVersion/shop-3',
      'Superseded@StageVersion/shop-2',
    ]);
    expect(activeChangedEvents('shop', 'shop-1', undefined).map((e) => e.reason)).toEqual([
      'ActiveStageVersionChanged',
      'Activated',
    ]);
    expect(
      cleanedUpEvents({ name: 'shop-1', stage: 'shop' }, 'StageVersion shop-1 is unused').map(
        (e) => `${e.reason}@${e.kind}`,
      ),
    ).toEqual(['StageVersionCleanedUp@Stage', 'CleanedUp@StageVersion']);
    expect(
      requestEvent('a', 'retry', 'konfidence.cloud/retry=1', 'Refused', 'refused: it is InProgress'),
    ).toMatchObject({ type: 'Warning', reason: 'RetryRefused', action: 'Retry' });
  });
});

describe('event names and fields: valid for every valid object, in time order', () => {
  const long = `${'l'.repeat(120)}.${'n'.repeat(132)}`;
  it.each([
    ['a plain name', 'shop-to-3'],
    ['a name with dots', 'a.b.c'],
    ['a 253-character name', long],
    ['a name whose cut ends on a dot', `${'a'.repeat(235)}.${'b'.repeat(17)}`],
    ['a name whose cut ends on a dash', `${'a'.repeat(234)}-${'b'.repeat(18)}`],
  ])('%s gives a valid name', (_n, name) => {
    const e = eventName(name, nowMicros());
    expect(e.length).toBeLessThanOrEqual(253);
    expect(e).toMatch(DNS_SUBDOMAIN);
  });

  it('name order is time order (kubectl describe shows Events in name order)', () => {
    const times = [1, 2, 15, 16, 255, 256, Date.now() * 1000, Date.now() * 1000 + 1];
    const names = times.map((t) => eventName(long, t));
    expect([...names].sort()).toEqual(names);
    expect(new Set(names).size).toBe(names.length);
  });

  it('the clock never repeats and keeps microseconds', () => {
    const a = nowMicros(1_000);
    const b = nowMicros(1_000);
    expect(b).toBeGreaterThan(a);
    expect(microTime(1_700_000_000_123_456)).toBe('2023-11-14T22:13:20.123456Z');
  });

  it.each([
    ['ascii within the limit', 'a'.repeat(1024), 1024],
    ['ascii over it', 'a'.repeat(2000), 1024],
    ['multi-byte characters count as bytes', 'é'.repeat(1000), 1024],
  ])('notes fit the apiserver’s 1 KiB: %s', (_n, note, max) =>
    expect(Buffer.byteLength(clipNote(note))).toBeLessThanOrEqual(max),
  );

  it('reasons and actions are CamelCase words', () => {
    expect(eventWord('Workflow-Terminated!')).toBe('WorkflowTerminated');
    expect(eventWord('')).toBe('Unknown');
    expect(eventWord('x'.repeat(300))).toHaveLength(128);
  });

  it('a repeat is what says the same about the same object', () => {
    const regarding = {
      apiVersion: 'konfidence.cloud/v1alpha1',
      kind: 'Stage',
      namespace: 'ns',
      name: 'shop',
      uid: 'u1',
    };
    const existing = {
      type: 'Normal',
      reason: 'Started',
      action: 'Start',
      note: 'n',
      regarding: { kind: 'Stage', name: 'shop', uid: 'u1' },
    };
    expect(saysTheSame(existing, 'Normal', 'Started', 'Start', 'n', regarding)).toBe(true);
    expect(saysTheSame(existing, 'Normal', 'Started', 'Start', 'other note', regarding)).toBe(false);
    expect(saysTheSame(existing, 'Warning', 'Started', 'Start', 'n', regarding)).toBe(false);
    expect(saysTheSame(existing, 'Normal', 'Started', 'Start', 'n', { ...regarding, uid: 'u2' })).toBe(false);
  });
});

describe('sendEvents: in the background, in order per namespace, bounded', () => {
  const spec = (reason: string) => ({
    kind: 'VectorActivation' as const,
    name: 'shop-to-3',
    type: 'Normal' as const,
    reason,
    action: reason,
    note: reason,
  });
  /** A recorder whose writes wait for `open()`; `written` in the order they happened. */
  function slowRecorder() {
    const written: string[] = [];
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const record = (async (regarding, _type, reason) => {
      await gate;
      written.push(`${regarding.namespace}:${reason}`);
    }) as EventRecorder;
    return { record, written, open };
  }

  it("returns at once and writes each namespace's Events in the order sent", async () => {
    const r = slowRecorder();
    sendEvents(r.record, 'a', [spec('Started'), spec('Waiting')]);
    sendEvents(r.record, 'b', [spec('Started')]);
    sendEvents(r.record, 'a', [spec('Succeeded')]);
    expect(r.written).toEqual([]);
    r.open();
    await flushEvents(5_000);
    expect(r.written.filter((w) => w.startsWith('a:'))).toEqual(['a:Started', 'a:Waiting', 'a:Succeeded']);
    expect(r.written).toContain('b:Started');
  });

  it('a flush that runs out of time drops what still waits; Events sent afterwards are written', async () => {
    const stuck = slowRecorder();
    sendEvents(stuck.record, 'a', [spec('Started')]);
    sendEvents(stuck.record, 'a', [spec('Waiting')]);
    await flushEvents(50);
    stuck.open();
    const later = slowRecorder();
    later.open();
    sendEvents(later.record, 'a', [spec('Succeeded')]);
    await flushEvents(5_000);
    // The write in flight at the deadline finishes; the one queued behind it is dropped.
    expect(stuck.written).toEqual(['a:Started']);
    expect(later.written).toEqual(['a:Succeeded']);
  });

  it('drops, and says so, past 1000 waiting', async () => {
    const r = slowRecorder();
    const said: string[] = [];
    for (let i = 0; i < 1001; i++) sendEvents(r.record, 'a', [spec(`E${i}`)], {}, (m) => said.push(m));
    expect(said).toEqual(['1 Event(s) in namespace a dropped: 1000 are waiting to be written']);
    r.open();
    await flushEvents(10_000);
    expect(r.written).toHaveLength(1000);
  });
});

describe('progressionEvents: a progressive activation tells its weights, gates, verdicts and answers', () => {
  const base = { step: 1, steps: 4, weight: 10 };
  const run = (phase: 'Running' | 'Successful' | 'Failed') => ({
    name: 'errors',
    step: 1,
    phase,
    successful: 1,
    failed: phase === 'Failed' ? 1 : 0,
    inconclusive: 0,
    errors: 0,
    measurements: [],
    message: `analysis errors ${phase}`,
  });
  const said = (before: object | undefined, after: object) =>
    activationEvents(
      facts,
      { phase: 'InProgress', ...(before ? { progression: before as never } : {}) },
      report('InProgress', 'x', 'y', { progression: after as never }),
    ).map((e) => `${e.reason}${e.type === 'Warning' ? '!' : ''}: ${e.note}`);
  it.each([
    ['a weight set', undefined, base, ["WeightSet: StageVersion shop-3 receives 10 % of Stage shop's traffic"]],
    [
      'a gate entered',
      base,
      { ...base, gate: { type: 'Approval', since: 't1', until: 't2', message: 'waiting for an approval' } },
      ['WaitingForApproval: waiting for an approval (until t2)'],
    ],
    [
      'the same gate again says nothing',
      { ...base, gate: { type: 'Pause', since: 't1', message: 'm' } },
      { ...base, gate: { type: 'Pause', since: 't1', message: 'm' } },
      [],
    ],
    [
      'an analysis passed',
      { ...base, analysisRuns: [run('Running')] },
      { ...base, analysisRuns: [run('Successful')] },
      ['AnalysisPassed: analysis errors Successful'],
    ],
    [
      'an analysis failed',
      { ...base, analysisRuns: [run('Running')] },
      { ...base, analysisRuns: [run('Failed')] },
      ['AnalysisFailed!: analysis errors Failed'],
    ],
    [
      'an approval, saying who',
      base,
      { ...base, log: [{ time: 't3', step: 1, action: 'Approved', by: 'alice', message: 'approved at step 2/4' }] },
      ['Approved: approved at step 2/4 (asked by alice)'],
    ],
    [
      'an abort',
      base,
      { ...base, log: [{ time: 't3', step: 1, action: 'Aborted', message: 'aborted at step 2/4' }] },
      ['Aborted!: aborted at step 2/4'],
    ],
  ])('%s', (_n, before, after, expected) => expect(said(before, after)).toEqual(expected));
});

describe('the Events a recorder remembers (SeriesCache)', () => {
  const regarding = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'ns', name: 'cm', uid: 'u1' };
  const key = SeriesCache.key('Normal', 'Repeated', 'Repeated', 'the same thing', regarding);
  const event = { name: 'cm.0001', namespace: 'ns', count: 1, resourceVersion: '7' };

  it('finds an Event said within the window, and forgets it once the window passed since it was last said', () => {
    let now = 0;
    const cache = new SeriesCache(() => now);
    cache.remember(key, event);
    now = SERIES_WINDOW_MS;
    expect(cache.find(key)).toMatchObject(event);
    cache.remember(key, { ...event, count: 2 }); // said again: the window starts again
    now = 2 * SERIES_WINDOW_MS;
    expect(cache.find(key)?.count).toBe(2);
    now = 3 * SERIES_WINDOW_MS + 1;
    expect(cache.find(key)).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it.each([
    ['another note', SeriesCache.key('Normal', 'Repeated', 'Repeated', 'another thing', regarding)],
    ['another type', SeriesCache.key('Warning', 'Repeated', 'Repeated', 'the same thing', regarding)],
    [
      'another object of the same name',
      SeriesCache.key('Normal', 'Repeated', 'Repeated', 'the same thing', { ...regarding, uid: 'u2' }),
    ],
  ])('does not take %s for the same Event', (_what, other) => {
    const cache = new SeriesCache(() => 0);
    cache.remember(key, event);
    expect(cache.find(other)).toBeUndefined();
  });
});
