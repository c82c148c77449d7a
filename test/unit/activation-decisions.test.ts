/** The activation's decisions, a table row per rule (decisions/activation.ts). No servers. */
import {
  activationConditions,
  activationStatus,
  answerRequest,
  clip,
  closedOutProgress,
  failureEnding,
  initialProgress,
  lastRanStep,
  mayMoveActive,
  orderVerdict,
  reasonOf,
  releasesUsage,
  stageLoss,
  stageReadDue,
  stepOutcome,
  stepsToRun,
  stoppedEnding,
  type StepProgress,
} from '../../decisions/activation.js';
import type { StageVersionInfo } from '../../executors/types.js';

const sv = (r: number): StageVersionInfo => ({ name: `dev-${r}`, revision: r, vector: `v${r}` });
const all = [sv(1), sv(2), sv(3)];

describe('orderVerdict: an older version never overwrites a newer one, decided on fresh state', () => {
  it.each([
    ['first activation of a Stage runs', { target: sv(2), activeName: undefined, retry: false }, { run: true }],
    [
      'newer than the active one runs, previous = active',
      { target: sv(3), activeName: 'dev-2', retry: false },
      { run: true, previous: sv(2) },
    ],
    [
      'older than the active one is Skipped',
      { target: sv(1), activeName: 'dev-2', retry: false },
      { run: false, phase: 'Skipped', reason: 'OlderThanActive' },
    ],
    [
      'the active one itself is Skipped',
      { target: sv(2), activeName: 'dev-2', retry: false },
      { run: false, phase: 'Skipped', reason: 'AlreadyActive' },
    ],
    [
      'a retry onto the active one runs again (an earlier attempt switched it)',
      { target: sv(2), activeName: 'dev-2', retry: true },
      { run: true },
    ],
    [
      'a retry after a newer activation: previous is what is active now',
      { target: sv(3), activeName: 'dev-2', retry: true },
      { run: true, previous: sv(2) },
    ],
    [
      'an older one is Skipped on a retry too',
      { target: sv(1), activeName: 'dev-3', retry: true },
      { run: false, phase: 'Skipped', reason: 'OlderThanActive' },
    ],
    [
      'fails closed when the active StageVersion cannot be identified',
      { target: sv(3), activeName: 'dev-9', retry: false },
      { run: false, phase: 'Failed', reason: 'ActiveStageVersionUnknown' },
    ],
  ])('%s', (_name, input, expected) => {
    const verdict = orderVerdict({ stage: 'dev', stageVersions: all, ...input });
    expect(verdict).toMatchObject(expected);
    if (!expected.run) expect((verdict as { message: string }).message).toMatch(/dev-\d/);
    if (expected.run && !('previous' in expected)) expect(verdict).not.toHaveProperty('previous');
  });
});

describe('stageLoss: an activation acts only for the Stage it validated, by uid, while it is not being deleted', () => {
  const here = { uid: 'u1', deleting: false };
  it.each([
    ['validation: present', here, undefined, undefined],
    [
      'validation: missing: it never was there',
      undefined,
      undefined,
      { reason: 'StageNotFound', message: 'Stage dev/shop does not exist' },
    ],
    [
      'validation: being deleted',
      { uid: 'u1', deleting: true },
      undefined,
      { reason: 'StageDeleted', message: 'Stage dev/shop is being deleted' },
    ],
    ['later: the same Stage', here, 'u1', undefined],
    [
      'later: missing: it was deleted',
      undefined,
      'u1',
      { reason: 'StageDeleted', message: 'Stage dev/shop was deleted' },
    ],
    [
      'later: being deleted',
      { uid: 'u1', deleting: true },
      'u1',
      { reason: 'StageDeleted', message: 'Stage dev/shop is being deleted' },
    ],
    [
      'later: a new Stage of the same name: the one validated was deleted',
      { uid: 'u2', deleting: false },
      'u1',
      {
        reason: 'StageDeleted',
        message: 'Stage dev/shop was deleted (the Stage of that name now is another one, uid u2)',
      },
    ],
  ] as const)('%s', (_n, seen, validatedUid, loss) =>
    expect(stageLoss('dev', 'shop', seen, validatedUid)).toEqual(loss),
  );
});

describe("stageReadDue: a later step's route write reads the Stage unless it was read within the last second", () => {
  it.each([
    ['never read', undefined, 10_000, true],
    ['read at the Lease 150 ms before (a quick first step)', 9_850, 10_000, false],
    ['read 999 ms before', 9_001, 10_000, false],
    ['read a second before (a slow step)', 9_000, 10_000, true],
    ['read before a gate of an hour', 10_000, 3_610_000, true],
  ])('%s', (_case, readAt, now, due) => {
    expect(stageReadDue(readAt, now)).toBe(due);
  });
});

describe('stoppedEnding: a stopped activation ends Cancelled, StageDeleted when its Stage went', () => {
  it.each([
    [
      'a cancel while waiting',
      'while waiting for Stage shop',
      { reason: 'changed my mind' },
      undefined,
      'Cancelled',
      'cancelled while waiting for Stage shop (changed my mind)',
    ],
    [
      'a cancel in a step, with what stayed',
      'in step mesh',
      {},
      'steps left applied: gateway',
      'Cancelled',
      'cancelled in step mesh; steps left applied: gateway',
    ],
    [
      'the Stage went while waiting: nothing was changed',
      'while waiting for Stage shop',
      { stageLost: 'Stage dev/shop was deleted' },
      undefined,
      'StageDeleted',
      'Stage dev/shop was deleted: the activation stopped while waiting for Stage shop; no route was changed',
    ],
    [
      'the Stage went, and a cancel too (the VectorActivation went with it): the Stage is why',
      'before step mesh',
      { reason: 'the VectorActivation was deleted', stageLost: 'Stage dev/shop is being deleted' },
      'steps left applied: gateway',
      'StageDeleted',
      'Stage dev/shop is being deleted: the activation stopped before step mesh; steps left applied: gateway',
    ],
  ] as const)('%s', (_n, where, stop, state, reason, message) =>
    expect(stoppedEnding(where, stop, state)).toEqual({ phase: 'Cancelled', reason, message }),
  );
});

describe('mayMoveActive: a switch never moves the active usage onto an older revision than it names', () => {
  it.each([
    ['onto a newer revision', 3, 2, true],
    ['where it points already', 2, 2, true],
    ['not onto an older revision (a later activation moved it)', 2, 3, false],
    ['from a StageVersion whose revision is unknown (gone)', 2, undefined, true],
    ['with the target revision unknown', undefined, 3, true],
  ])('%s', (_n, target, current, expected) => expect(mayMoveActive(target, current)).toBe(expected));
});

const plan = {
  steps: [
    { name: 'gateway', tasks: [{ registration: 'gw' }] },
    { name: 'mesh', tasks: [{ registration: 'mesh' }, { registration: 'dr' }] },
  ],
};
const progressWith = (...phases: StepProgress['phase'][]): StepProgress[] =>
  initialProgress(plan).map((s, i) => ({ ...s, phase: phases[i] ?? 'Pending' }));

describe('stepsToRun: a retry runs every step again', () => {
  it.each([
    ['first attempt runs every step', [], { run: [0, 1] }],
    [
      'a retry runs the succeeded steps again too: another activation may have moved their routes',
      progressWith('Succeeded', 'Failed'),
      { run: [0, 1] },
    ],
    ['a retry after a revert runs everything again', progressWith('Reverted', 'Failed'), { run: [0, 1] }],
  ])('%s', (_n, progress, expected) => expect(stepsToRun(plan, progress)).toEqual(expected));

  it('refuses to resume when the plan changed its steps', () => {
    const changed = { steps: [{ name: 'other', tasks: [{ registration: 'x' }] }] };
    expect(stepsToRun(changed, progressWith('Succeeded', 'Failed'))).toEqual({
      error: expect.stringContaining('create a new VectorActivation'),
    });
  });
});

describe('closedOutProgress: what ran in an attempt whose run closed, as its executions say', () => {
  const names = [['va-0-gw'], ['va-1-mesh', 'va-1-dr']];
  const running: StepProgress[] = [
    { name: 'gateway', phase: 'Succeeded', tasks: [{ registration: 'gw', execution: 'va-0-gw', phase: 'Succeeded' }] },
    {
      name: 'mesh',
      phase: 'InProgress',
      tasks: [
        { registration: 'mesh', phase: 'InProgress' },
        { registration: 'dr', phase: 'InProgress' },
      ],
    },
  ];
  it('a task that recorded ran (Error unless it had succeeded); one that did not changed nothing', () => {
    const p = closedOutProgress(plan, running, names, new Set(['va-0-gw', 'va-1-mesh']));
    expect(p.map((s) => s.phase)).toEqual(['Succeeded', 'Failed']);
    expect(p[1]!.tasks).toEqual([
      { registration: 'mesh', execution: 'va-1-mesh', phase: 'Error' },
      { registration: 'dr', phase: 'Error', message: 'ended: its run closed before it changed a route' },
    ]);
    expect(lastRanStep(p)).toBe(1);
  });
  it('no status steps yet (closed before its first step was written): from the plan', () => {
    const p = closedOutProgress(plan, [], names, new Set());
    expect(p.map((s) => s.phase)).toEqual(['Pending', 'Pending']);
    expect(lastRanStep(p)).toBe(-1);
  });
});

describe('releasesUsage: the activation usage is kept only while a step may have left traffic on it', () => {
  it.each([
    ['superseded or older', 'Skipped', true, []],
    ['before any step (StageVersion being deleted, plan missing)', 'Failed', true, progressWith()],
    ['with no plan read yet', 'Failed', true, []],
    ['while waiting', 'Cancelled', true, progressWith()],
    ['in a step', 'Failed', false, progressWith('Failed')],
    ['after a revert', 'Failed', false, progressWith('Reverted', 'Failed')],
    ['in a step', 'Cancelled', false, progressWith('Succeeded', 'InProgress')],
    ['(the serving switch gives it back)', 'Succeeded', false, progressWith('Succeeded', 'Succeeded')],
  ] as const)('%s: %s → released %s', (_when, phase, released, steps) =>
    expect(releasesUsage(phase, steps)).toBe(released),
  );
});

describe('stepOutcome', () => {
  const ok = { registration: 'a', execution: 'e', ok: true, message: '' };
  const bad = { ...ok, ok: false };
  it.each([
    ['all tasks succeeded', [ok, ok], false, 'Succeeded'],
    ['one task failed', [ok, bad], false, 'Failed'],
    ['cancelled although every task finished', [ok], true, 'Failed'],
  ] as const)('%s → %s', (_n, outcomes, cancelled, phase) => expect(stepOutcome(outcomes, cancelled)).toBe(phase));
});

describe('failureEnding: a failed activation says exactly what stayed applied', () => {
  const p = progressWith('Succeeded', 'Failed');
  const refusedMesh: StepProgress[] = p.map((st, i) =>
    i === 1
      ? { ...st, tasks: [{ registration: st.tasks[0]!.registration, execution: 'va-1-mesh', phase: 'Error' }] }
      : st,
  );
  it.each([
    [
      'Stop names the steps left applied',
      { onFailure: 'Stop' as const },
      'Failed',
      /boom; steps left applied: gateway$/,
    ],
    [
      'Revert that worked says so',
      { onFailure: 'Revert' as const, revert: 'done' as const },
      'Failed',
      /every task that ran was reverted/,
    ],
    [
      'a cancel after some steps names the steps left applied',
      { onFailure: 'Stop' as const, cancelled: { reason: 'annotation' } },
      'Cancelled',
      /cancelled in step mesh \(annotation\); steps left applied: gateway/,
    ],
    [
      'the Stage deleted before a step, Stop: the steps left applied',
      { onFailure: 'Stop' as const, where: 'before step mesh', cancelled: { stageLost: 'Stage dev/shop was deleted' } },
      'Cancelled',
      /^Stage dev\/shop was deleted: the activation stopped before step mesh; steps left applied: gateway$/,
    ],
    [
      'the Stage deleted before a step, Revert: put back',
      {
        onFailure: 'Revert' as const,
        revert: 'done' as const,
        where: 'before step mesh',
        cancelled: { stageLost: 'Stage dev/shop was deleted' },
      },
      'Cancelled',
      /^Stage dev\/shop was deleted: the activation stopped before step mesh; every task that ran was reverted/,
    ],
    [
      'a refused task that recorded a rule makes its step maybe partly applied',
      { onFailure: 'Stop' as const, progress: refusedMesh, recorded: ['va-1-mesh'] },
      'Failed',
      /boom; steps left applied: gateway; maybe partly applied: mesh$/,
    ],
    [
      'a refused task that recorded nothing changed nothing',
      { onFailure: 'Stop' as const, progress: refusedMesh, recorded: [] },
      'Failed',
      /boom; steps left applied: gateway$/,
    ],
  ])('%s', (_n, extra, phase, message) => {
    const ending = failureEnding({ step: 'mesh', firstError: 'boom', progress: p, ...extra } as Parameters<
      typeof failureEnding
    >[0]);
    expect(ending.phase).toBe(phase);
    expect(ending.message).toMatch(message);
  });
});

describe('answerRequest: cancel and retry are accepted or refused with the reason', () => {
  it.each([
    ['cancel', 'Waiting', true],
    ['cancel', 'InProgress', true],
    ['cancel', 'Failed', true],
    ['cancel', 'Succeeded', false],
    ['cancel', 'Skipped', false],
    ['retry', 'Failed', true],
    ['retry', 'Cancelled', true],
    ['retry', 'InProgress', false],
    ['retry', 'Succeeded', false],
  ] as const)('%s while %s → accepted %s', (action, phase, accepted) => {
    const answer = answerRequest(action, phase);
    expect(answer.accepted).toBe(accepted);
    if (!answer.accepted) expect(answer.message).toMatch(new RegExp(`^refused: the activation is ${phase}`));
  });
});

describe('status within the schema', () => {
  it('clips long messages and turns any error type into a valid condition reason', () => {
    const long = 'x'.repeat(50_000);
    const status = activationStatus({
      phase: 'Failed',
      reason: 'my-error.type!',
      message: long,
      workflowId: 'w',
      attempt: 1,
      firstError: long,
      steps: [{ name: 's', phase: 'Failed', tasks: [{ registration: 'r', phase: 'Error', message: long }] }],
    });
    expect(status.reason).toBe('myerrortype');
    expect(status.message.length).toBeLessThanOrEqual(32768);
    expect(status.firstError!.length).toBeLessThanOrEqual(4096);
    expect(status.steps[0]!.tasks[0]!.message!.length).toBeLessThanOrEqual(4096);
    expect(reasonOf('123')).toBe('Error');
    expect(clip('short')).toBe('short');
  });

  it.each([
    ['InProgress', 'True', 'Unknown'],
    ['Succeeded', 'False', 'True'],
    ['Failed', 'False', 'False'],
  ] as const)('conditions while %s: Progressing %s, Succeeded %s', (phase, progressing, succeeded) => {
    const [p, s] = activationConditions(phase, 'R', 'm');
    expect([p!.status, s!.status]).toEqual([progressing, succeeded]);
  });
});
