/** What the CLI prints (cli/views.ts, cli/table.ts), built from objects as the apiserver returns them. No servers. */
import type { StageResource } from '../../api/stage.js';
import type { VectorActivationResource } from '../../api/vector-activation.js';
import { between, formatDuration, formatTable, formatTime } from '../../cli/table.js';
import {
  historyRows,
  measuredShares,
  phaseEvent,
  renderHistory,
  renderPhaseEvent,
  renderStatus,
  stageStatusView,
  withNote,
  withProgress,
  type Seen,
} from '../../cli/views.js';

const NS = 'team';
const stage = (status: StageResource['status'] = {}): StageResource => ({
  apiVersion: 'landscape.konfidence.cloud/v1alpha1',
  kind: 'Stage',
  metadata: { name: 'shop', namespace: NS },
  spec: { vector: 'example/vector:0.0.3', stageVersionHistoryLimit: 3, drainSeconds: 30 },
  status,
});
const va = (
  name: string,
  created: string,
  status?: VectorActivationResource['status'],
  stageName = 'shop',
): VectorActivationResource => ({
  apiVersion: 'landscape.konfidence.cloud/v1alpha1',
  kind: 'VectorActivation',
  metadata: { name, namespace: NS, uid: `uid-${name}`, creationTimestamp: created },
  spec: { stage: stageName, stageVersion: `${stageName}-${name.slice(-1)}` },
  ...(status ? { status } : {}),
});
const step = (name: string, phase: 'Pending' | 'InProgress' | 'Succeeded') => ({
  name,
  phase,
  tasks: [
    { registration: `${name}-reg`, phase: phase === 'Succeeded' ? ('Succeeded' as const) : ('Pending' as const) },
  ],
});

const activations = [
  va('to-1', '2026-01-01T10:00:00Z', {
    phase: 'Succeeded',
    reason: 'Activated',
    startTime: '2026-01-01T10:00:01Z',
    completionTime: '2026-01-01T10:01:06Z',
    attempt: 1,
  }),
  va('to-2', '2026-01-01T11:00:00Z', {
    phase: 'InProgress',
    startTime: '2026-01-01T11:00:01Z',
    attempt: 2,
    steps: [step('gateway', 'Succeeded'), step('mesh', 'InProgress')],
  }),
  va('to-4', '2026-01-01T11:00:07Z', { phase: 'Waiting' }),
  va('to-3', '2026-01-01T11:00:05Z'),
  va('to-9', '2026-01-01T12:00:00Z', { phase: 'Failed' }, 'other'),
];

describe('stageStatusView', () => {
  it('active and target from the Stage status; running with its steps; waiting in queue order; the last finished', () => {
    const view = stageStatusView(
      stage({ activeStageVersion: 'shop-1', targetStageVersion: 'shop-3', phase: 'Progressing' }),
      {},
      activations,
    );
    expect(view).toEqual({
      stage: 'shop',
      namespace: NS,
      vector: 'example/vector:0.0.3',
      phase: 'Progressing',
      active: 'shop-1',
      target: 'shop-3',
      running: {
        name: 'to-2',
        stageVersion: 'shop-2',
        phase: 'InProgress',
        attempt: 2,
        startTime: '2026-01-01T11:00:01Z',
        progressFrom: 'kubernetes',
        steps: [step('gateway', 'Succeeded'), step('mesh', 'InProgress')],
      },
      waiting: [
        { name: 'to-3', stageVersion: 'shop-3', phase: 'Pending', created: '2026-01-01T11:00:05Z' },
        { name: 'to-4', stageVersion: 'shop-4', phase: 'Waiting', created: '2026-01-01T11:00:07Z' },
      ],
      last: {
        name: 'to-1',
        stageVersion: 'shop-1',
        phase: 'Succeeded',
        reason: 'Activated',
        completionTime: '2026-01-01T10:01:06Z',
      },
    });
  });

  it('the usages are the record; the Stage status (a copy, written later) fills in without them', () => {
    expect(
      stageStatusView(stage({ activeStageVersion: 'shop-1' }), { active: 'shop-2', target: 'shop-3' }, []),
    ).toMatchObject({ active: 'shop-2', target: 'shop-3', waiting: [] });
    expect(stageStatusView(stage({ activeStageVersion: 'shop-1' }), {}, [])).toMatchObject({ active: 'shop-1' });
  });

  it("the workflow's progress replaces the steps; a note says when it could not be had", () => {
    const { running } = stageStatusView(stage(), {}, activations);
    const live = withProgress(withNote(running!, 'stale'), {
      phase: 'InProgress',
      attempt: 2,
      steps: [{ name: 'gateway', phase: 'Succeeded', tasks: [] }],
    });
    expect(live).toMatchObject({ progressFrom: 'workflow', steps: [{ name: 'gateway', phase: 'Succeeded' }] });
    expect(live.note).toBeUndefined();
    expect(withNote(running!, 'Temporal at x is unreachable')).toMatchObject({
      progressFrom: 'kubernetes',
      note: 'Temporal at x is unreachable',
    });
  });

  it('prints the traffic as the managed routes hold it, one line a rule', () => {
    const weights = { 'shop-2': 10, 'shop-1': 90 };
    const traffic = [
      {
        route: { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: NS, name: 'shop' },
        rule: 0,
        weights,
      },
      {
        route: { group: 'networking.istio.io', kind: 'VirtualService', namespace: NS, name: 'shop' },
        rule: 0,
        name: 'primary',
        weights: { 'shop-2': 100 },
      },
    ];
    const text = renderStatus(
      [stageStatusView(stage({ activeStageVersion: 'shop-2', traffic }), {}, [])],
      new Date('2026-01-01T11:02:01Z'),
    );
    expect(text.split('\n').slice(4, 7)).toEqual([
      '  traffic:',
      `    HTTPRoute ${NS}/shop rule 0: shop-2 10%, shop-1 90%`,
      `    VirtualService ${NS}/shop rule primary: shop-2 100%`,
    ]);
    expect(renderStatus([stageStatusView(stage({ traffic: [] }), {}, [])], new Date())).toContain(
      '  traffic:  (no managed route sends this Stage traffic)',
    );
  });

  it("names the Landscape whose cluster holds a Stage's routes", () => {
    const traffic = [
      {
        route: { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: NS, name: 'shop' },
        rule: 0,
        weights: { 'shop-2': 100 },
      },
    ];
    const remote = { ...stage({ traffic }), spec: { ...stage().spec, landscape: 'eu-west' } };
    const view = stageStatusView(remote, {}, []);
    expect(view.traffic).toEqual([
      expect.objectContaining({ landscape: 'eu-west', route: `HTTPRoute ${NS}/shop rule 0 in Landscape eu-west` }),
    ]);
    expect(renderStatus([view], new Date())).toContain(
      `    HTTPRoute ${NS}/shop rule 0 in Landscape eu-west: shop-2 100%`,
    );
  });

  it.each([
    [
      'a split of the measured rates, to a tenth of a percent',
      { 'shop-1': 18, 'shop-2': 2 },
      { windowSeconds: 10, requestsPerSecond: 20, percent: { 'shop-1': 90, 'shop-2': 10 } },
    ],
    [
      'a version the gateway has no series for counts 0 %',
      { 'shop-1': 3, 'shop-2': undefined },
      { windowSeconds: 10, requestsPerSecond: 3, percent: { 'shop-1': 100, 'shop-2': 0 } },
    ],
    ['no request at all is no measurement, not 0 % each', { 'shop-1': 0, 'shop-2': undefined }, undefined],
  ])('measured shares: %s', (_what, rates, expected) => {
    expect(measuredShares(rates, 10)).toEqual(expected);
  });

  it('prints what the gateway measured under the recorded weights of a route', () => {
    const traffic = [
      {
        route: { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: NS, name: 'shop' },
        rule: 0,
        weights: { 'shop-2': 10, 'shop-1': 90 },
      },
    ];
    const view = stageStatusView(stage({ activeStageVersion: 'shop-1', traffic }), {}, []);
    const measured = measuredShares({ 'shop-2': 1.9, 'shop-1': 18.1 }, 10)!;
    const text = renderStatus(
      [{ ...view, traffic: view.traffic!.map((t) => ({ ...t, measured })) }],
      new Date('2026-01-01T11:02:01Z'),
    );
    expect(text.split('\n').slice(5, 7)).toEqual([
      `    HTTPRoute ${NS}/shop rule 0: shop-2 10%, shop-1 90%`,
      '      measured at the gateway, last 10s: shop-2 9.5%, shop-1 90.5% (20 req/s)',
    ]);
  });

  it('renders what a person asks first: active, target, running step by step, waiting', () => {
    const text = renderStatus(
      [stageStatusView(stage({ activeStageVersion: 'shop-1' }), {}, activations)],
      new Date('2026-01-01T11:02:01Z'),
    );
    expect(text).toBe(
      [
        'Stage team/shop',
        '  vector:   example/vector:0.0.3',
        '  active:   shop-1',
        '  target:   (none)',
        '  running:  to-2 → shop-2 (InProgress, attempt 2, started 2m00s ago)',
        '    steps (from the VectorActivation status):',
        '      1. gateway: Succeeded',
        '         - gateway-reg: Succeeded',
        '      2. mesh: InProgress',
        '         - mesh-reg: Pending',
        '  waiting:',
        '    to-3 → shop-3 (Pending)',
        '    to-4 → shop-4 (Waiting)',
        '  last:     to-1 → shop-1 (Succeeded, Activated, 2026-01-01T10:01:06Z)',
      ].join('\n'),
    );
  });
});

describe('historyRows: newest first, with durations', () => {
  const now = new Date('2026-01-01T11:00:31Z');
  it('lists only the Stage, newest first; a running one lasts until now; one without start has no duration', () => {
    const rows = historyRows(activations, 'shop', now);
    expect(rows.map((r) => r.name)).toEqual(['to-4', 'to-3', 'to-2', 'to-1']);
    expect(rows.find((r) => r.name === 'to-1')).toMatchObject({
      phase: 'Succeeded',
      reason: 'Activated',
      durationSeconds: 65,
    });
    expect(rows.find((r) => r.name === 'to-2')).toMatchObject({ durationSeconds: 30 });
    expect(rows.find((r) => r.name === 'to-3')!.durationSeconds).toBeUndefined();
  });
  it('a tie in creation time (seconds) is broken by start time, then name', () => {
    const same = '2026-01-01T10:00:00Z';
    const rows = historyRows(
      [
        va('b-1', same, { phase: 'Succeeded', startTime: '2026-01-01T10:00:01Z' }),
        va('a-2', same, { phase: 'Succeeded', startTime: '2026-01-01T10:00:02Z' }),
        va('c-3', same),
      ],
      'shop',
      now,
    );
    expect(rows.map((r) => r.name)).toEqual(['a-2', 'b-1', 'c-3']);
  });
  it('renders a table with a dash for what is missing', () => {
    const lines = renderHistory(historyRows(activations, 'shop', now)).split('\n');
    expect(lines[0]).toMatch(/^NAME\s+STAGEVERSION\s+PHASE\s+REASON\s+ATTEMPT\s+STARTED\s+FINISHED\s+DURATION$/);
    expect(lines[2]).toMatch(/^to-3\s+shop-3\s+Pending\s+-\s+-\s+-\s+-\s+-$/);
    expect(lines[4]).toMatch(
      /^to-1\s+shop-1\s+Succeeded\s+Activated\s+1\s+2026-01-01T10:00:01Z\s+2026-01-01T10:01:06Z\s+1m05s$/,
    );
  });
});

describe('phaseEvent: a watch prints a line per change of phase, reason or attempt', () => {
  const now = new Date('2026-01-01T12:00:00.123Z');
  it('first sight, a repeat, a change, a retry, a deletion', () => {
    const seen: Seen = new Map();
    const events = [
      phaseEvent(seen, 'ADDED', va('to-2', 'x', { phase: 'Waiting' }), now),
      phaseEvent(seen, 'MODIFIED', va('to-2', 'x', { phase: 'Waiting', message: 'other field changed' }), now),
      phaseEvent(
        seen,
        'MODIFIED',
        va('to-2', 'x', { phase: 'Failed', reason: 'TimedOut', message: 'step mesh timed out', attempt: 1 }),
        now,
      ),
      phaseEvent(seen, 'MODIFIED', va('to-2', 'x', { phase: 'InProgress', attempt: 2 }), now),
      phaseEvent(seen, 'DELETED', va('to-2', 'x', { phase: 'InProgress', attempt: 2 }), now),
    ];
    expect(events.map((e) => e && renderPhaseEvent(e))).toEqual([
      '2026-01-01T12:00:00Z  to-2  shop → shop-2  Waiting',
      undefined,
      '2026-01-01T12:00:00Z  to-2  shop → shop-2  Failed (TimedOut): step mesh timed out',
      '2026-01-01T12:00:00Z  to-2  shop → shop-2  InProgress (attempt 2)',
      '2026-01-01T12:00:00Z  to-2  shop → shop-2  Deleted (attempt 2)',
    ]);
  });
});

describe('table and times', () => {
  it('pads columns to the widest cell', () =>
    expect(
      formatTable(
        ['A', 'LONGER'],
        [
          ['xxxx', 1],
          [undefined, ''],
        ],
      ),
    ).toBe('A     LONGER\nxxxx  1\n-     -'));
  it.each([
    [0, '0s'],
    [59_999, '59s'],
    [65_000, '1m05s'],
    [3_600_000 + 180_000, '1h03m'],
    [3 * 86_400_000 + 3_600_000, '3d01h'],
    [-5, '0s'],
  ])('%d ms → %s', (ms, text) => expect(formatDuration(ms)).toBe(text));
  it('between and formatTime accept strings and Dates', () => {
    expect(between('2026-01-01T00:00:00Z', new Date('2026-01-01T00:00:10Z'))).toBe(10_000);
    expect(between(undefined, '2026-01-01T00:00:00Z')).toBeUndefined();
    expect(formatTime(new Date('2026-01-01T00:00:00.999Z'))).toBe('2026-01-01T00:00:00Z');
  });
});

describe('a progressive activation in status and watch', () => {
  const progression = {
    step: 3,
    steps: 4,
    weight: 50,
    gate: {
      type: 'Approval' as const,
      since: '2026-01-01T11:00:01Z',
      until: '2026-01-02T11:00:01Z',
      message: 'step 4/4: waiting for an approval',
    },
    analysisRuns: [
      {
        name: 'errors',
        phase: 'Successful' as const,
        successful: 2,
        failed: 0,
        inconclusive: 0,
        errors: 0,
        measurements: [
          { time: '2026-01-01T10:59:00Z', value: 0.01, verdict: 'Successful' as const },
          { time: '2026-01-01T10:59:30Z', value: 0.02, verdict: 'Successful' as const },
        ],
      },
    ],
    log: [
      {
        time: '2026-01-01T10:58:00Z',
        step: 1,
        action: 'Approved' as const,
        by: 'alice',
        message: 'approved at step 2/4',
      },
    ],
  };
  const canary = va('to-2', '2026-01-01T10:50:00Z', {
    phase: 'InProgress',
    reason: 'WaitingForApproval',
    message: 'step 4/4: waiting for an approval',
    startTime: '2026-01-01T10:50:01Z',
    steps: [step('gateway', 'Succeeded')],
    progression,
  });

  it('status says the weight, what it waits for since when, the analyses, the last answer and the command that approves', () => {
    const text = renderStatus(
      [stageStatusView(stage({ activeStageVersion: 'shop-1' }), {}, [canary])],
      new Date('2026-01-01T11:02:01Z'),
    );
    expect(text).toContain(
      [
        '    progression: step 4/4, 50 % to shop-2',
        '      waiting:  Approval for 2m00s, until 2026-01-02T11:00:01Z: step 4/4: waiting for an approval',
        '      approve:  konfidence approve to-2 -n team   (or promote, abort)',
        '      analysis errors: Successful (0.01, 0.02)',
        '      last answer: Approved by alice at 2026-01-01T10:58:00Z',
      ].join('\n'),
    );
  });

  it('watch prints a line when the weight or the gate changes, with what the gate waits for', () => {
    const seen: Seen = new Map();
    const at = new Date('2026-01-01T11:00:02Z');
    const line = renderPhaseEvent(phaseEvent(seen, 'MODIFIED', canary, at)!);
    expect(line).toBe(
      `${formatTime(at)}  to-2  shop → shop-2  InProgress (WaitingForApproval, 50 %): step 4/4: waiting for an approval`,
    );
    expect(phaseEvent(seen, 'MODIFIED', canary, at)).toBeUndefined();
    const later = va('to-2', '2026-01-01T10:50:00Z', {
      ...canary.status!,
      progression: { ...progression, gate: { ...progression.gate, since: '2026-01-01T11:01:00Z' } },
    });
    expect(phaseEvent(seen, 'MODIFIED', later, at)).toBeDefined();
  });
});
