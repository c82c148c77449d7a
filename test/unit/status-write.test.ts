/**
 * A status write over what the workflow knows (decisions/status-write.ts): the JSON patch it
 * sends, the conditions it carries from one write to the next, and that the patch makes of the
 * object what the workflow records. No servers: the patch is applied here as RFC 6902 says, for
 * the operations it uses (test, add and remove of object members).
 */
import type { ActivationReport, StepProgress } from '../../decisions/activation.js';
import { kubeTime } from '../../shared/format.js';
import {
  carriedConditions,
  knownStatus,
  mergePatched,
  sameJson,
  statusPatch,
  statusWrite,
  type KnownStatus,
  type PatchOp,
} from '../../decisions/status-write.js';

const UID = 'va-uid';
const T0 = new Date('2026-01-01T10:00:00Z');
const T1 = new Date('2026-01-01T10:00:05Z');
const T2 = new Date('2026-01-01T10:00:09Z');
const step = (name: string, phase: StepProgress['phase']): StepProgress => ({
  name,
  phase,
  tasks: [{ registration: `${name}-reg`, phase: phase === 'InProgress' ? 'InProgress' : 'Pending' }],
});
const report = (
  phase: ActivationReport['phase'],
  reason: string,
  message: string,
  extra: Partial<ActivationReport> = {},
): ActivationReport => ({
  phase,
  reason,
  message,
  workflowId: 'wf',
  attempt: 1,
  steps: [step('gateway', 'Pending')],
  ...extra,
});

/** RFC 6902 over plain JSON, for the operations statusPatch makes: a failed test throws (the apiserver's 422). */
function applied(doc: unknown, ops: PatchOp[]): any {
  const out = structuredClone(doc) as Record<string, any>;
  for (const op of ops) {
    const keys = op.path
      .split('/')
      .slice(1)
      .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'));
    const last = keys.pop()!;
    const parent = keys.reduce<any>((o, k) => (o === undefined ? undefined : o[k]), out);
    if (op.op === 'test') {
      if (!sameJson(parent?.[last] ?? null, op.value)) throw new Error(`test ${op.path} failed`);
    } else if (parent === undefined || typeof parent !== 'object') {
      throw new Error(`${op.op} ${op.path}: no parent`);
    } else if (op.op === 'add') {
      parent[last] = structuredClone(op.value);
    } else {
      if (!(last in parent)) throw new Error(`remove ${op.path}: missing`);
      delete parent[last];
    }
  }
  return out;
}

const object = (known: KnownStatus, status = known.status, more: Record<string, unknown> = {}) => ({
  metadata: { uid: UID, generation: known.generation },
  ...(status ? { status: { ...status, ...more } } : {}),
});

describe('statusPatch: the JSON patch of one write over the known status', () => {
  it('an object with no status yet: one add of the whole status, only while it has none (nulls left out)', () => {
    const r = report('Pending', 'Validating', 'checking', {
      progression: { step: 0, steps: 2, stepName: null, weight: 0, gate: null },
    });
    const { conditions } = statusWrite({ generation: 1 }, r, T0);
    const ops = statusPatch(UID, { generation: 1 }, r, conditions);
    expect(ops.slice(0, 3)).toEqual([
      { op: 'test', path: '/metadata/uid', value: UID },
      { op: 'test', path: '/metadata/generation', value: 1 },
      { op: 'test', path: '/status', value: null },
    ]);
    expect(ops[3]).toMatchObject({ op: 'add', path: '/status', value: { phase: 'Pending', observedGeneration: 1 } });
    expect((ops[3] as { value: { progression: unknown } }).value.progression).toEqual({ step: 0, steps: 2, weight: 0 });
    expect(ops).toHaveLength(4);
  });

  const known: KnownStatus = {
    generation: 3,
    status: {
      phase: 'InProgress',
      reason: 'RunningPlan',
      message: 'step 1/2',
      workflowId: 'wf',
      attempt: 1,
      steps: [step('gateway', 'InProgress')],
      progression: {
        step: 0,
        steps: 2,
        stepName: 'a',
        weight: 10,
        gate: { type: 'Approval', since: 'x', message: 'approve' },
      },
      conditions: [],
      observedGeneration: 3,
    },
  };

  it('tests every field the Events compare, as known (null: absent), before it sets any', () => {
    const ops = statusPatch(
      UID,
      known,
      report('InProgress', 'RunningPlan', 'step 2/2', { steps: [step('gateway', 'InProgress')] }),
      known.status!.conditions!,
    );
    const tests = ops.filter((o) => o.op === 'test');
    expect(tests.map((o) => o.path)).toEqual([
      '/metadata/uid',
      '/metadata/generation',
      '/status/phase',
      '/status/reason',
      '/status/message',
      '/status/attempt',
      '/status/steps',
      '/status/progression',
    ]);
    for (const t of tests.slice(2))
      expect(t).toMatchObject({ value: (known.status as Record<string, unknown>)[t.path.slice('/status/'.length)] });
    expect(ops.findIndex((o) => o.op !== 'test')).toBe(tests.length);
    const bare = statusPatch(
      UID,
      { generation: 1, status: { requests: [] } as never },
      report('Pending', 'Validating', 'checking'),
      [],
    );
    expect(
      bare
        .filter((o) => o.op === 'test')
        .slice(2)
        .map((o) => (o as { value: unknown }).value),
    ).toEqual([null, null, null, null, null, null]);
  });

  it('each field on its own: the progression merged key by key (a null removes one the status has), fields it does not write left as they are', () => {
    const r = report('InProgress', 'Approving', 'waiting', {
      steps: [step('gateway', 'InProgress')],
      progression: { step: 1, steps: 2, stepName: null, weight: 50, gate: null },
    });
    const ops = statusPatch(UID, known, r, [], { coreBuildId: 'b1' });
    expect(ops.filter((o) => o.op !== 'test').map((o) => `${o.op} ${o.path}`)).toEqual([
      'add /status/phase',
      'add /status/reason',
      'add /status/message',
      'add /status/workflowId',
      'add /status/attempt',
      'add /status/steps',
      'add /status/progression/step',
      'add /status/progression/steps',
      'remove /status/progression/stepName',
      'add /status/progression/weight',
      'remove /status/progression/gate',
      'add /status/observedGeneration',
      'add /status/conditions',
      'add /status/coreBuildId',
    ]);
    const after = applied(object(known, known.status, { requests: [{ action: 'cancel' }] }), ops);
    expect(after.status.requests).toEqual([{ action: 'cancel' }]);
    expect(after.status.progression).toEqual({ step: 1, steps: 2, weight: 50 });
  });

  it('applies only to the object of its uid, at its generation, while every field the Events compare holds its known value', () => {
    const r = report('Succeeded', 'Activated', 'done', { steps: [step('gateway', 'Succeeded')] });
    const ops = statusPatch(UID, known, r, []);
    expect(() => applied(object(known), ops)).not.toThrow();
    expect(() => applied({ ...object(known), metadata: { uid: 'other', generation: 3 } }, ops)).toThrow(
      '/metadata/uid',
    );
    expect(() => applied({ ...object(known), metadata: { uid: UID, generation: 4 } }, ops)).toThrow(
      '/metadata/generation',
    );
    // The same write made already (a repeat whose answer was lost): it fails, and says nothing twice.
    expect(() => applied(applied(object(known), ops), ops)).toThrow('test /status/phase failed');
    // Someone else moved a field the Events compare, even one this write does not change.
    expect(() =>
      applied(
        object(known, { ...known.status, reason: 'Other' }),
        statusPatch(
          UID,
          known,
          report('InProgress', 'RunningPlan', 'step 1/2', { steps: [step('gateway', 'InProgress')] }),
          [],
        ),
      ),
    ).toThrow('test /status/reason failed');
    // No status where one was known: its tests fail.
    expect(() =>
      applied(
        { metadata: { uid: UID, generation: 3 } },
        statusPatch(
          UID,
          known,
          report('InProgress', 'RunningPlan', 'step 1/2', { steps: [step('gateway', 'InProgress')] }),
          [],
        ),
      ),
    ).toThrow('test /status/phase failed');
  });
});

describe('statusWrite: what the object holds after each write', () => {
  it('the patch makes of the object what the workflow records, write after write', () => {
    const writes = [
      report('Pending', 'Validating', 'checking'),
      report('Waiting', 'WaitingForStage', 'waiting', {
        progression: {
          step: 0,
          steps: 1,
          stepName: 'a',
          weight: 0,
          gate: { type: 'Approval', since: 's', message: 'm' },
        },
      }),
      report('InProgress', 'RunningPlan', 'step 1/1', {
        steps: [step('gateway', 'InProgress')],
        progression: { step: 0, steps: 1, stepName: null, weight: 100, gate: null },
      }),
      report('Succeeded', 'Activated', 'done', { steps: [step('gateway', 'Succeeded')], completionTime: 'c' }),
    ];
    let known: KnownStatus = { generation: 2 };
    let obj: any = { metadata: { uid: UID, generation: 2 } };
    for (const [i, r] of writes.entries()) {
      const { conditions, after } = statusWrite(known, r, new Date(T0.getTime() + i * 1000));
      obj = applied(obj, statusPatch(UID, known, r, conditions, { coreBuildId: 'b' }));
      const { coreBuildId, ...held } = obj.status;
      expect(coreBuildId).toBe('b');
      expect(held).toEqual(after.status);
      expect(knownStatus(2, obj.status)).toEqual(after);
      known = after;
    }
  });
});

describe('carriedConditions: a condition moves its lastTransitionTime only when its status changes', () => {
  const time = (c: { lastTransitionTime: string }[], type: string) =>
    (c as { type: string; lastTransitionTime: string }[]).find((x) => x.type === type)!.lastTransitionTime;
  it.each<
    [
      string,
      ActivationReport['phase'],
      string,
      ActivationReport['phase'],
      string,
      { Progressing: Date; Succeeded: Date },
    ]
  >([
    [
      'Pending → Waiting: both stay (Progressing True, Succeeded Unknown)',
      'Pending',
      'Validating',
      'Waiting',
      'WaitingForStage',
      { Progressing: T0, Succeeded: T0 },
    ],
    [
      'InProgress → Succeeded: both move',
      'InProgress',
      'RunningPlan',
      'Succeeded',
      'Activated',
      { Progressing: T1, Succeeded: T1 },
    ],
    [
      'InProgress → Failed: both move',
      'InProgress',
      'RunningPlan',
      'Failed',
      'TaskFailed',
      { Progressing: T1, Succeeded: T1 },
    ],
    [
      'Failed → Cancelled: both stay',
      'Failed',
      'TaskFailed',
      'Cancelled',
      'Cancelled',
      { Progressing: T0, Succeeded: T0 },
    ],
    [
      'Failed → Pending (a retry): both move',
      'Failed',
      'TaskFailed',
      'Pending',
      'Validating',
      { Progressing: T1, Succeeded: T1 },
    ],
  ])('%s', (_n, p0, r0, p1, r1, expected) => {
    const first = carriedConditions(undefined, 1, p0, r0, 'm0', T0);
    const second = carriedConditions(first, 2, p1, r1, 'm1', T1);
    expect(second.map((c) => [c.type, c.reason, c.message, c.observedGeneration])).toEqual([
      ['Progressing', r1, 'm1', 2],
      ['Succeeded', r1, 'm1', 2],
    ]);
    expect({ Progressing: time(second, 'Progressing'), Succeeded: time(second, 'Succeeded') }).toEqual({
      Progressing: kubeTime(expected.Progressing),
      Succeeded: kubeTime(expected.Succeeded),
    });
  });

  it("carried across the workflow's writes: a condition another writer added stays", () => {
    const theirs = {
      type: 'Other',
      status: 'True' as const,
      reason: 'X',
      message: 'x',
      lastTransitionTime: '2020-01-01T00:00:00Z',
    };
    let known: KnownStatus = knownStatus(1, { conditions: [theirs] });
    for (const [r, at] of [
      [report('Pending', 'Validating', 'c'), T0],
      [report('InProgress', 'RunningPlan', 's'), T1],
      [report('InProgress', 'RunningPlan', 's2'), T2],
    ] as const)
      known = statusWrite(known, r, at).after;
    expect(known.status!.conditions!.map((c) => [c.type, c.lastTransitionTime])).toEqual([
      ['Other', '2020-01-01T00:00:00Z'],
      ['Progressing', '2026-01-01T10:00:00Z'],
      ['Succeeded', '2026-01-01T10:00:00Z'],
    ]);
  });
});

describe('mergePatched (RFC 7386) and knownStatus', () => {
  it.each([
    [
      { a: 1, b: { c: 1, d: 2 } },
      { b: { c: null, e: 3 }, f: [1] },
      { a: 1, b: { d: 2, e: 3 }, f: [1] },
    ],
    [{ a: [1, 2] }, { a: [3] }, { a: [3] }],
    [undefined, { a: null, b: 1 }, { b: 1 }],
  ])('%j merged with %j', (target, patch, expected) => expect(mergePatched(target, patch)).toEqual(expected));

  it('keeps only the fields the workflow writes', () => {
    expect(knownStatus(4, { phase: 'Pending', requests: [{}], coreBuildId: 'b', conditions: [] })).toEqual({
      generation: 4,
      status: { phase: 'Pending', conditions: [] },
    });
    expect(knownStatus(4, undefined)).toEqual({ generation: 4 });
  });
});
