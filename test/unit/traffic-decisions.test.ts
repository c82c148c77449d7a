/** Traffic as absolute assignments, and what a revert puts back (decisions/traffic.ts). No servers. */
import type { StepProgress } from '../../decisions/activation.js';
import type { RuleRecord } from '../../api/activation-execution.js';
import {
  applyAssignment,
  inheritedRecord,
  percentOf,
  reportedRules,
  restoreOrder,
  unmovedRules,
  weightOf,
  type ReportedExecution,
} from '../../decisions/traffic.js';

describe('applyAssignment: what an Apply task sets, whatever the rules held before', () => {
  it.each([
    ['a first activation sends everything to the target', ['shop-2', undefined, 10], { 'shop-2': 100 }],
    ['weight 100 sends everything to the target', ['shop-2', 'shop-1', 100], { 'shop-2': 100 }],
    ['weight 10 leaves 90 % on the version active now', ['shop-2', 'shop-1', 10], { 'shop-2': 10, 'shop-1': 90 }],
    ['weight 50 halves it', ['shop-2', 'shop-1', 50], { 'shop-2': 50, 'shop-1': 50 }],
    ['weight 0 leaves everything on the active version', ['shop-2', 'shop-1', 0], { 'shop-1': 100 }],
    ['onto the active version itself: all of it', ['shop-2', 'shop-2', 10], { 'shop-2': 100 }],
  ] as const)('%s', (_n, [target, active, weight], expected) => {
    const a = applyAssignment(target, active, weight);
    expect(a).toEqual(expected);
    expect(Object.values(a).reduce((x, y) => x + y, 0)).toBe(100);
  });
});

describe("weightOf: a registration's spec.weight, 100 without a valid one", () => {
  it.each([
    [{ weight: 10 }, 10],
    [{ weight: 0 }, 0],
    [{}, 100],
    [undefined, 100],
    [{ weight: '10' }, 100],
    [{ weight: 10.5 }, 100],
    [{ weight: 101 }, 100],
  ])('%j → %i', (config, expected) => expect(weightOf(config)).toBe(expected));
});

describe('percentOf: relative weights as the routes hold them, as percents', () => {
  it.each([
    [{ 'shop-1': 1 }, { 'shop-1': 100 }],
    [
      { 'shop-2': 1, 'shop-1': 3 },
      { 'shop-2': 25, 'shop-1': 75 },
    ],
    [
      { 'shop-2': 10, 'shop-1': 90 },
      { 'shop-2': 10, 'shop-1': 90 },
    ],
    [{ 'shop-2': 0, 'shop-1': 5 }, { 'shop-1': 100 }],
    [{ 'shop-1': 0 }, {}],
  ])('%j → %j', (weights, expected) => expect(percentOf(weights)).toEqual(expected));
});

describe('restoreOrder: every task that ran is put back, newest step first', () => {
  const step = (name: string, phase: StepProgress['phase'], tasks: StepProgress['tasks']): StepProgress => ({
    name,
    phase,
    tasks,
  });
  it.each([
    [
      'succeeded and refused tasks alike, pending ones not',
      [
        step('gateway', 'Succeeded', [{ registration: 'gw', execution: 'va-0-gw', phase: 'Succeeded' }]),
        step('mesh', 'Failed', [
          { registration: 'mesh', execution: 'va-1-mesh', phase: 'Error' },
          { registration: 'dr', execution: 'va-1-dr', phase: 'Succeeded' },
        ]),
        step('check', 'Pending', [{ registration: 'check', phase: 'Pending' }]),
      ],
      2,
      [
        {
          step: 1,
          tasks: [
            { registration: 'mesh', execution: 'va-1-mesh' },
            { registration: 'dr', execution: 'va-1-dr' },
          ],
        },
        { step: 0, tasks: [{ registration: 'gw', execution: 'va-0-gw' }] },
      ],
    ],
    [
      'a task that never got an execution changed nothing',
      [step('gateway', 'Failed', [{ registration: 'gw', phase: 'Error' }])],
      0,
      [],
    ],
    [
      'a step succeeded in an earlier attempt is put back from that attempt’s execution',
      [
        step('gateway', 'Succeeded', [{ registration: 'gw', execution: 'va-0-gw', phase: 'Succeeded' }]),
        step('mesh', 'Failed', [{ registration: 'mesh', execution: 'va-1-mesh-r2', phase: 'Error' }]),
      ],
      1,
      [
        { step: 1, tasks: [{ registration: 'mesh', execution: 'va-1-mesh-r2' }] },
        { step: 0, tasks: [{ registration: 'gw', execution: 'va-0-gw' }] },
      ],
    ],
  ])('%s', (_n, progress, failed, expected) => expect(restoreOrder(progress, failed)).toEqual(expected));
});

describe('inheritedRecord: a retried task keeps what was there before the activation, unless someone moved the rule since', () => {
  const rule = (name: string, traffic: Record<string, number>, index = 0): RuleRecord => ({
    route: { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'shop', name },
    index,
    entries: Object.entries(traffic).map(([sv, weight]) => ({ name: `svc-${sv}`, weight })),
    traffic,
  });
  const earlier = {
    record: [rule('a', { 'shop-1': 100 }), rule('b', { 'shop-1': 100 })],
    assignment: { 'shop-2': 10, 'shop-1': 90 },
  };
  it.each([
    [
      'nothing earlier: the rules as found now',
      [rule('a', { 'shop-2': 10, 'shop-1': 90 })],
      undefined,
      [rule('a', { 'shop-2': 10, 'shop-1': 90 })],
    ],
    [
      'a rule still as the earlier attempt assigned it keeps its earlier record',
      [rule('a', { 'shop-2': 1, 'shop-1': 9 })],
      earlier,
      [rule('a', { 'shop-1': 100 })],
    ],
    [
      'a rule the earlier attempt never reached, or another activation moved, is recorded as found',
      [rule('a', { 'shop-2': 10, 'shop-1': 90 }), rule('b', { 'shop-3': 100 })],
      earlier,
      [rule('a', { 'shop-1': 100 }), rule('b', { 'shop-3': 100 })],
    ],
    [
      'a rule the earlier record does not name is recorded as found',
      [rule('c', { 'shop-2': 10, 'shop-1': 90 })],
      earlier,
      [rule('c', { 'shop-2': 10, 'shop-1': 90 })],
    ],
    [
      'the same route, another rule: as found',
      [rule('a', { 'shop-2': 10, 'shop-1': 90 }, 1)],
      earlier,
      [rule('a', { 'shop-2': 10, 'shop-1': 90 }, 1)],
    ],
  ])('%s', (_n, now, before, expected) => expect(inheritedRecord(now, before)).toEqual(expected));
});

describe('unmovedRules: a close-out puts back only the rules that still hold what its execution assigned', () => {
  const rule = (name: string, traffic: Record<string, number>): RuleRecord => ({
    route: { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'shop', name },
    index: 0,
    entries: Object.entries(traffic).map(([sv, weight]) => ({ name: `svc-${sv}`, weight })),
    traffic,
  });
  const assigned = { 'shop-2': 10, 'shop-1': 90 };
  const record = [rule('a', { 'shop-1': 100 }), rule('b', { 'shop-1': 100 })];
  it.each([
    ['both still as assigned: both put back', [rule('a', { 'shop-2': 1, 'shop-1': 9 }), rule('b', assigned)], record],
    [
      'one moved by a newer activation since: only the other',
      [rule('a', { 'shop-3': 100 }), rule('b', assigned)],
      [record[1]],
    ],
    [
      'one never reached (still as recorded): left alone, nothing to put back',
      [rule('a', { 'shop-1': 100 }), rule('b', assigned)],
      [record[1]],
    ],
    ['a rule gone from its route: left alone', [rule('b', assigned)], [record[1]]],
  ])('%s', (_n, now, expected) => expect(unmovedRules(record, now, assigned)).toEqual(expected));
  it("a progression's rounds: a rule at any round's assignment is unmoved, a rule another activation set is not", () => {
    const half = { 'shop-2': 50, 'shop-1': 50 };
    expect(unmovedRules(record, [rule('a', half), rule('b', assigned)], [half, assigned])).toEqual(record);
    expect(unmovedRules(record, [rule('a', half), rule('b', { 'shop-3': 100 })], [half, assigned])).toEqual([
      record[0],
    ]);
  });
});

describe('reportedRules: what External rules hold, as their executions report it, the latest deciding rule by rule', () => {
  const edge = (name: string, traffic: Record<string, number>): RuleRecord => ({
    route: { group: 'cdn.example', kind: 'Edge', namespace: 'shop', name },
    index: 0,
    entries: [],
    traffic,
  });
  const apply = (
    name: string,
    created: string,
    phase: string,
    assignment: Record<string, number>,
    record?: RuleRecord[],
  ): ReportedExecution => ({ name, created, action: 'Apply', phase, assignment, ...(record ? { record } : {}) });
  const revert = (name: string, created: string, phase: string, revertOf: string): ReportedExecution => ({
    name,
    created,
    action: 'Revert',
    phase,
    revertOf,
  });
  const a1 = apply('a-0-cdn', '2026-12-01T10:00:00Z', 'Succeeded', { 'shop-2': 10, 'shop-1': 90 }, [
    edge('e', { 'shop-1': 100 }),
  ]);
  it.each([
    ['an Apply that succeeded: its assignment, on the rules it recorded', [a1], [{ 'shop-2': 10, 'shop-1': 90 }]],
    [
      'a later Apply decides',
      [
        a1,
        apply('b-0-cdn', '2026-12-01T11:00:00Z', 'Succeeded', { 'shop-3': 100 }, [
          edge('e', { 'shop-2': 10, 'shop-1': 90 }),
        ]),
      ],
      [{ 'shop-3': 100 }],
    ],
    [
      'a Revert that succeeded puts back the record of its Apply',
      [a1, revert('a-0-cdn-revert', '2026-12-01T10:00:00Z', 'Succeeded', 'a-0-cdn')],
      [{ 'shop-1': 100 }],
    ],
    [
      'a later Apply that failed before it recorded changed nothing',
      [a1, apply('b-0-cdn', '2026-12-01T11:00:00Z', 'Error', { 'shop-3': 100 })],
      [{ 'shop-2': 10, 'shop-1': 90 }],
    ],
    [
      'an Apply that recorded and failed: unknown',
      [a1, apply('b-0-cdn', '2026-12-01T11:00:00Z', 'Error', { 'shop-3': 100 }, [edge('e', {})])],
      undefined,
    ],
    [
      'an Apply still running after it recorded: unknown',
      [a1, apply('b-0-cdn', '2026-12-01T11:00:00Z', 'InProgress', { 'shop-3': 100 }, [edge('e', {})])],
      undefined,
    ],
    [
      'a Revert that failed: unknown',
      [a1, revert('a-0-cdn-revert', '2026-12-01T10:00:01Z', 'Error', 'a-0-cdn')],
      undefined,
    ],
    [
      'two rules of two registrations each keep their own latest',
      [a1, apply('b-0-dns', '2026-12-01T11:00:00Z', 'Succeeded', { 'shop-3': 100 }, [edge('d', {})])],
      [{ 'shop-2': 10, 'shop-1': 90 }, { 'shop-3': 100 }],
    ],
  ] as const)('%s', (_n, executions, expected) =>
    expect(reportedRules(executions as unknown as ReportedExecution[])?.map((r) => r.weights)).toEqual(expected),
  );
});
