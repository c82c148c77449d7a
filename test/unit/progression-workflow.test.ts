/**
 * A progressive activation (workflows/progression.ts) on the time-skipping test server, with the
 * in-memory fake of the Kubernetes side (test/unit/support/fake-cluster.ts), its fake executor and
 * its fake Prometheus and HTTP checks, and the real Stage lock. Days of gates pass in milliseconds
 * while the test awaits a result; while it polls, workflow time runs at wall-clock speed, so an
 * answer given at a gate meets the gate still waiting.
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import type { ProgressionReport } from '../../decisions/activation.js';
import type { AnalysisRules } from '../../decisions/analysis.js';
import { leaseSecondsOver, type ProgressionSpec } from '../../decisions/progression.js';
import { pollUntil } from '../../scripts/env/process.js';
import {
  abortUpdate,
  activationWorkflowId,
  approveUpdate,
  cancelSignal,
  promoteUpdate,
  retryUpdate,
  stageDeletedSignal,
  type ActivationRef,
} from '../../shared/activation.js';
import { vectorActivation, type ActivationOptions } from '../../workflows/activation/workflow.js';
import { FakeCluster } from './support/fake-cluster.js';
import { terminateAtRest } from './support/at-rest.js';
import { startFakeWorkers, type FakeWorkers } from './support/fake-workers.js';

const ns = 'unit';
const taskQueue = `progression-workflow-${process.pid}`;
const queueSuffix = `-progression-${process.pid}`;
const DAY = 86_400_000;

let env: TestWorkflowEnvironment;
let fake: FakeWorkers | undefined;
let cluster: FakeCluster;
let started: WorkflowHandle[] = [];

beforeAll(async () => {
  fake = await startFakeWorkers(taskQueue, queueSuffix, () => cluster);
  env = fake.env;
});

afterAll(async () => {
  await fake?.stop();
});

beforeEach(() => {
  cluster = new FakeCluster();
  started = [];
});

afterEach(async () => {
  // The workflow's record of the status it wrote is never wrong, with writes beside each other too.
  expect(cluster.wronglyKnown()).toEqual({});
  for (const handle of started) {
    if ((await handle.describe()).status.name !== 'RUNNING') continue;
    // It may have closed since the describe: then there is nothing to close.
    const closed = await handle.signal(cancelSignal, { deleted: true, reason: 'test over' }).then(
      () => false,
      (err: unknown) => {
        if (err instanceof WorkflowNotFoundError) return true;
        throw err;
      },
    );
    if (closed) continue;
    await pollUntil(
      async () => (await handle.describe()).status.name !== 'RUNNING',
      10_000,
      `${handle.workflowId} to close`,
      50,
    ).catch(() => terminateAtRest(handle, 'test over'));
  }
});

// --- helpers ---------------------------------------------------------------------------------

const errors: AnalysisRules = {
  name: 'errors',
  query: 'errors{version="{{stageVersion}}"}',
  intervalSeconds: 60,
  count: 3,
  failureLimit: 0,
  inconclusiveLimit: 0,
  consecutiveErrorLimit: 2,
  noData: 'Inconclusive',
  successCondition: 'result < 0.05',
};

/** Stage `stage` with shop-1 active and shop-2 to activate through `progression` (one routing step, two tasks). */
function canary(
  stage: string,
  progression: ProgressionSpec,
  analyses: AnalysisRules[] = [errors],
  onFailure: 'Stop' | 'Revert' = 'Stop',
): ActivationRef {
  cluster.addStage(ns, stage, { [`${stage}-1`]: 1, [`${stage}-2`]: 2, [`${stage}-3`]: 3 }, `${stage}-1`);
  cluster.addPlan(`${stage}-plan`, {
    onFailure,
    steps: [
      { name: 'rules', tasks: [`${stage}-dr`] },
      { name: 'routes', tasks: [`${stage}-vs`] },
    ],
    progression,
    analyses,
  });
  return cluster.addActivation(ns, `${stage}-to-2`, {
    stage,
    stageVersion: `${stage}-2`,
    executionPlan: `${stage}-plan`,
  });
}

async function start(ref: ActivationRef, options: ActivationOptions = {}) {
  const handle = await env.client.workflow.start(vectorActivation, {
    taskQueue,
    workflowId: activationWorkflowId(ref),
    args: [ref, { queueSuffix, lockAskAgainSeconds: 5, ...options }],
  });
  started.push(handle);
  return handle;
}

const progression = (ref: ActivationRef) => cluster.activation(ref).status.progression as ProgressionReport | undefined;

/** Polls (real time) until the activation waits at a gate of `type`. */
function atGate(ref: ActivationRef, type: string) {
  return pollUntil(
    () => (progression(ref)?.gate?.type === type ? progression(ref) : undefined),
    15_000,
    `${ref.name} to wait at a ${type} gate`,
    20,
  );
}

/** The weights each Apply call gave the target, in order, per registration. */
const weights = (ref: ActivationRef, registration: string) =>
  cluster
    .callsOf(ref)
    .filter((c) => c.registration === registration && c.action === 'Apply')
    .map((c) => c.assignment?.[`${ref.name.replace(/-to-2$/, '')}-2`] ?? 0);

async function refusal(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!err) throw new Error('the Update was accepted');
  return err instanceof WorkflowUpdateFailedError ? (err.cause as Error).message : (err as Error).message;
}

// --- the tests ---------------------------------------------------------------------------------

test('10 % → analysis → 50 % → approval → 100 %: every weight runs the plan steps in order; promoted at the approval, an approval after it is refused', async () => {
  const ref = canary('canary', {
    steps: [{ setWeight: 10 }, { analysis: { name: 'errors' } }, { setWeight: 50, name: 'half' }, { pause: {} }],
  });
  cluster.metrics.set('errors{version="canary-2"}', [{ value: 0.01 }]);
  // The switch to 100 % takes a few seconds, so the approval after the promotion meets a running workflow.
  cluster.behave('canary-dr', { kind: 'succeed' }, { kind: 'succeed' }, { kind: 'work', seconds: 3 });
  const handle = await start(ref);
  // Three measurements a minute apart: time skips them.
  await env.sleep(5 * 60_000);

  const gate = await atGate(ref, 'Approval');
  expect(gate).toMatchObject({ step: 3, weight: 50 });
  expect(gate!.analysisRuns).toEqual([
    expect.objectContaining({
      name: 'errors',
      phase: 'Successful',
      successful: 3,
      query: 'errors{version="canary-2"}',
    }),
  ]);
  expect(
    await refusal(
      handle
        .executeUpdate(promoteUpdate, { args: [{}] })
        .then(() => handle.executeUpdate(approveUpdate, { args: [{ by: 'bob' }] })),
    ),
  ).toMatch(/^refused: /);

  const result = await handle.result();
  expect(result.phase).toBe('Succeeded');
  // Each weight went through both plan steps in order (rules, then routes), then 100 %.
  expect(weights(ref, 'canary-dr')).toEqual([10, 50, 100]);
  expect(weights(ref, 'canary-vs')).toEqual([10, 50, 100]);
  const calls = cluster.callsOf(ref).filter((c) => c.action === 'Apply');
  expect(calls.map((c) => c.execution)).toEqual([
    'canary-to-2-0-canary-dr',
    'canary-to-2-1-canary-vs',
    'canary-to-2-0-w1-canary-dr',
    'canary-to-2-1-w1-canary-vs',
    'canary-to-2-0-w2-canary-dr',
    'canary-to-2-1-w2-canary-vs',
  ]);
  // Each round keeps the record of the round before: a revert would put back what was there before the activation.
  expect(calls.slice(2).map((c) => c.earlier)).toEqual(calls.slice(0, 4).map((c) => c.execution));
  expect(cluster.queries).toEqual([
    'errors{version="canary-2"}',
    'errors{version="canary-2"}',
    'errors{version="canary-2"}',
  ]);
  const done = progression(ref)!;
  expect(done).toMatchObject({ step: 4, weight: 100, gate: null });
  expect(done.log).toEqual([expect.objectContaining({ action: 'Promoted', step: 3 })]);
  expect(cluster.activeUsage(ns, 'canary')).toBe('canary-2');
});

test('approve by Update: who asked is in the status; approve while nothing waits and abort after the switch are refused, saying why', async () => {
  const ref = canary('approve', { steps: [{ setWeight: 20 }, { pause: { timeoutSeconds: 3600 } }] });
  const handle = await start(ref);
  await atGate(ref, 'Approval');
  const answer = await handle.executeUpdate(approveUpdate, { args: [{ by: 'alice' }] });
  expect(answer.message).toMatch(/approve accepted while InProgress \(asked by alice\)/);
  expect((await handle.result()).phase).toBe('Succeeded');
  expect(progression(ref)!.log).toEqual([
    expect.objectContaining({ action: 'Approved', by: 'alice', step: 1, message: 'approved at step 2/2' }),
  ]);
  expect(weights(ref, 'approve-vs')).toEqual([20, 100]);
});

test('a failed analysis goes back down the abort weights, then puts the record back, and ends Failed with the query, the values and the condition', async () => {
  const ref = canary('bad', {
    steps: [{ setWeight: 50 }, { analysis: { name: 'errors' } }],
    abort: { weights: [25, 10], intervalSeconds: 30 },
  });
  cluster.metrics.set('errors{version="bad-2"}', [{ value: 0.01 }, { value: 0.3 }]);
  const result = await (await start(ref)).result();
  expect(result.phase).toBe('Failed');
  const status = cluster.activation(ref).status;
  expect(status.reason).toBe('AnalysisFailed');
  expect(status.message).toBe(
    'analysis errors (success: result < 0.05) measured 0.01, 0.3; query: errors{version="bad-2"}: 1 failed measurements, more than the failureLimit 0; the traffic is back as recorded before the activation',
  );
  // Down the ramp with the steps in reverse order, then each task's record put back, newest step first.
  const calls = cluster
    .callsOf(ref)
    .map((c) => `${c.action} ${c.registration} ${c.assignment?.['bad-2'] ?? c.revertOf}`);
  expect(calls).toEqual([
    'Apply bad-dr 50',
    'Apply bad-vs 50',
    'Apply bad-vs 25',
    'Apply bad-dr 25',
    'Apply bad-vs 10',
    'Apply bad-dr 10',
    'Revert bad-vs bad-to-2-1-w2-bad-vs',
    'Revert bad-dr bad-to-2-0-w2-bad-dr',
  ]);
  expect(progression(ref)).toMatchObject({ weight: 0 });
  expect(cluster.activeUsage(ns, 'bad')).toBe('bad-1');
});

test('a 3-day approval with onTimeout Abort waits three days to the second, with a bounded history, then aborts at once', async () => {
  const ref = canary('days', { steps: [{ setWeight: 10 }, { pause: { timeoutSeconds: 3 * 86400 } }] });
  const handle = await start(ref);
  const { gate } = (await atGate(ref, 'Approval'))!;
  expect(Date.parse(gate!.until!) - Date.parse(gate!.since)).toBe(3 * DAY);
  await env.sleep(3 * DAY + 60_000);
  await pollUntil(
    () => (cluster.activation(ref).status.phase === 'Failed' ? true : undefined),
    15_000,
    'the approval to time out',
    20,
  );
  expect(cluster.activation(ref).status).toMatchObject({
    reason: 'TimedOut',
    message: 'step 2/2: the approval timed out after 259200s; the traffic is back as recorded before the activation',
  });
  // It ended when the timer fired, to the second (the log entry's time, in workflow time).
  const timedOut = Date.parse(progression(ref)!.log!.find((e) => e.action === 'TimedOut')!.time);
  expect(timedOut - Date.parse(gate!.until!)).toBeGreaterThanOrEqual(0);
  expect(timedOut - Date.parse(gate!.until!)).toBeLessThan(2_000);
  // The wait is one timer: the history does not grow with the time waited.
  const events = (await handle.fetchHistory()).events ?? [];
  expect(events.length).toBeLessThan(200);
  // The Lease was taken once for the gate's length instead of renewed.
  expect(cluster.journal).toContain(`lease days held ${3 * 86400 + 300}s by unit/days-to-2`);
});

test('promote at a timed pause skips the remaining steps and gates: straight to 100 %', async () => {
  const ref = canary('promo', {
    steps: [{ setWeight: 10 }, { pause: { durationSeconds: 3600 } }, { setWeight: 50 }, { pause: {} }],
  });
  const handle = await start(ref);
  await atGate(ref, 'Pause');
  await handle.executeUpdate(promoteUpdate, { args: [{ by: 'carol' }] });
  expect((await handle.result()).phase).toBe('Succeeded');
  expect(weights(ref, 'promo-vs')).toEqual([10, 100]);
  expect(progression(ref)!.log).toEqual([expect.objectContaining({ action: 'Promoted', by: 'carol', step: 1 })]);
});

test('abort by Update at an approval puts the traffic back at once and ends Failed; a second abort is refused', async () => {
  const ref = canary('abort', { steps: [{ setWeight: 30 }, { pause: {} }] });
  const handle = await start(ref);
  await atGate(ref, 'Approval');
  await handle.executeUpdate(abortUpdate, { args: [{ by: 'dave' }] });
  await pollUntil(
    () => (cluster.activation(ref).status.phase === 'Failed' ? true : undefined),
    15_000,
    'the abort to end it',
    20,
  );
  const status = cluster.activation(ref).status;
  expect(status).toMatchObject({
    reason: 'Aborted',
    message: 'aborted at step 2/2 by dave; the traffic is back as recorded before the activation',
  });
  expect(
    cluster
      .callsOf(ref)
      .filter((c) => c.action === 'Revert')
      .map((c) => c.registration),
  ).toEqual(['abort-vs', 'abort-dr']);
  expect(await refusal(handle.executeUpdate(abortUpdate, { args: [{}] }))).toMatch(
    /the activation is Failed; nothing waits/,
  );
});

test('no data is inconclusive: the activation waits for a person, and approve goes on', async () => {
  const ref = canary('silent', { steps: [{ setWeight: 10 }, { analysis: { name: 'errors' } }] }, [
    { ...errors, count: 1 },
  ]);
  const handle = await start(ref);
  const gate = await atGate(ref, 'Inconclusive');
  expect(gate!.analysisRuns?.[0]).toMatchObject({ phase: 'Inconclusive', inconclusive: 1 });
  expect(gate!.gate?.message).toMatch(/the query returned no series/);
  await handle.executeUpdate(approveUpdate, { args: [{ by: 'erin' }] });
  expect((await handle.result()).phase).toBe('Succeeded');
});

test('an HTTP check: 2xx goes on; a 4xx fails the activation at once and the traffic goes back', async () => {
  const ok = canary('hook', {
    steps: [{ setWeight: 10 }, { webhook: { url: 'http://checks/ok', timeoutSeconds: 5, retries: 2 } }],
  });
  cluster.webhooks.set('http://checks/ok', [503, 200]);
  expect((await (await start(ok)).result()).phase).toBe('Succeeded');
  expect(cluster.journal.filter((j) => j.startsWith('webhook'))).toEqual([
    'webhook http://checks/ok 503',
    'webhook http://checks/ok 200',
  ]);

  const refused = canary('nohook', {
    steps: [{ setWeight: 10 }, { webhook: { url: 'http://checks/no', timeoutSeconds: 5, retries: 2 } }],
  });
  cluster.webhooks.set('http://checks/no', [403]);
  expect((await (await start(refused)).result()).phase).toBe('Failed');
  expect(cluster.activation(refused).status).toMatchObject({
    reason: 'CheckFailed',
    message: expect.stringContaining('the HTTP check failed: http://checks/no answered 403'),
  });
  expect(cluster.journal.filter((j) => j.startsWith('webhook http://checks/no'))).toHaveLength(1);
});

test('a canary waiting at a gate gives the Stage to a newer activation: its traffic back at once, Cancelled (Superseded), then the newer one runs', async () => {
  const ref = canary('newer', {
    steps: [{ setWeight: 10 }, { pause: {} }],
    abort: { weights: [5], intervalSeconds: 600 },
  });
  await start(ref);
  await atGate(ref, 'Approval');
  const fix = cluster.addActivation(ns, 'newer-to-3', {
    stage: 'newer',
    stageVersion: 'newer-3',
    executionPlan: 'newer-plan',
  });
  const fixed = await start(fix);
  await pollUntil(
    () => (cluster.activation(ref).status.phase === 'Cancelled' ? true : undefined),
    15_000,
    'the canary to give up',
    20,
  );
  expect(cluster.activation(ref).status).toMatchObject({
    reason: 'Superseded',
    message: expect.stringMatching(
      /^superseded at step 2\/2 by the newer activation unit\/newer-to-3 \(revision 3\), which waits for the Stage; the traffic is back/,
    ),
  });
  // At once: no ramp, straight to the record.
  expect(cluster.callsOf(ref).map((c) => c.action)).toEqual(['Apply', 'Apply', 'Revert', 'Revert']);
  await pollUntil(
    () => (progression(fix)?.gate?.type === 'Approval' ? true : undefined),
    15_000,
    'the newer one to run',
    20,
  );
  await fixed.executeUpdate(approveUpdate, { args: [{}] });
  expect((await fixed.result()).phase).toBe('Succeeded');
  expect(cluster.activeUsage(ns, 'newer')).toBe('newer-3');
});

test('a background analysis that fails while the canary waits at its approval cuts the wait short and aborts', async () => {
  const ref = canary(
    'watched',
    {
      steps: [
        { setWeight: 10, name: 'ten' },
        { pause: {}, name: 'approval' },
      ],
      background: [{ analysis: 'errors', from: 'ten' }],
    },
    [{ ...errors, intervalSeconds: 60 }],
  );
  cluster.metrics.set('errors{version="watched-2"}', [{ value: 0.01 }, { value: 0.01 }, { value: 0.4 }]);
  await start(ref);
  await atGate(ref, 'Approval');
  // Minutes pass at the gate: the background run measures every minute, the third fails.
  await env.sleep(5 * 60_000);
  await pollUntil(
    () => (cluster.activation(ref).status.phase === 'Failed' ? true : undefined),
    15_000,
    'the background analysis to abort it',
    20,
  );
  expect(cluster.activation(ref).status).toMatchObject({
    reason: 'AnalysisFailed',
    message: expect.stringContaining('measured 0.01, 0.01, 0.4'),
  });
  expect(progression(ref)!.analysisRuns).toEqual([
    expect.objectContaining({ name: 'errors', background: true, phase: 'Failed', failed: 1, successful: 2 }),
  ]);
  expect(
    cluster
      .callsOf(ref)
      .filter((c) => c.action === 'Revert')
      .map((c) => c.registration),
  ).toEqual(['watched-vs', 'watched-dr']);
});

test('superseded at its gate, then retried once the newer one failed: the retry waits at its gate again, not superseded by old news', async () => {
  const ref = canary('again', { steps: [{ setWeight: 10 }, { pause: {} }] });
  cluster.addPlan('again-broken', { onFailure: 'Stop', steps: [{ name: 'boom', tasks: ['again-boom'] }] });
  cluster.behave('again-boom', { kind: 'fail', message: 'the newer version does not start' });
  const handle = await start(ref);
  await atGate(ref, 'Approval');
  const fix = cluster.addActivation(ns, 'again-to-3', {
    stage: 'again',
    stageVersion: 'again-3',
    executionPlan: 'again-broken',
  });
  await start(fix);
  await pollUntil(
    () => (cluster.activation(fix).status.phase === 'Failed' ? true : undefined),
    15_000,
    'the newer one to fail',
    20,
  );
  expect(cluster.activation(ref).status).toMatchObject({ phase: 'Cancelled', reason: 'Superseded' });

  await handle.executeUpdate(retryUpdate, { args: [{}] });
  await pollUntil(
    () =>
      cluster.activation(ref).status.attempt === 2 && progression(ref)?.gate?.type === 'Approval' ? true : undefined,
    15_000,
    'the retry to wait at its gate',
    20,
  );
  expect(cluster.activation(ref).status.phase).toBe('InProgress');
});

// Last in this file: a run terminated with work in flight can leave the time-skipping test server
// unable to skip time for the rest of its life (https://github.com/temporalio/sdk-java/issues/1138),
// which would stall the timers of every test after it at wall-clock speed.
test('a progression terminated at its gate is closed out under Revert: the latest round of each task is put back, whichever round its rules hold', async () => {
  const ref = canary(
    'closed',
    { steps: [{ setWeight: 10 }, { setWeight: 50 }, { pause: {} }], abort: { weights: [20], intervalSeconds: 30 } },
    [],
    'Revert',
  );
  const handle = await start(ref);
  await atGate(ref, 'Approval');
  await terminateAtRest(handle, 'an operator terminated it');
  const why = {
    reason: 'WorkflowTerminated',
    message: `the activation's workflow ${handle.workflowId} was terminated`,
  };
  expect((await (await start(ref, { resume: 'close-out', closeOut: why })).result()).phase).toBe('Failed');
  expect(cluster.activation(ref).status).toMatchObject({
    reason: 'WorkflowTerminated',
    message: `${why.message}; every task that ran was reverted: its routes are back as it found them`,
  });
  const reverts = cluster.callsOf(ref).filter((c) => c.action === 'Revert');
  expect(reverts.map((c) => c.revertOf)).toEqual(['closed-to-2-1-w1-closed-vs', 'closed-to-2-0-w1-closed-dr']);
  // A rule a round cut short left at an earlier round's weight is put back too.
  const at = (w: number) => (w === 100 ? { 'closed-2': 100 } : { 'closed-2': w, 'closed-1': 100 - w });
  for (const c of reverts)
    expect(c).toMatchObject({ unmovedOnly: true, unmovedAlso: [at(10), at(50), at(100), at(20)] });
  expect(cluster.activeUsage(ns, 'closed')).toBe('closed-1');
});

describe.each(['Stop', 'Revert'] as const)(
  'a canary whose Stage is deleted at its approval, with no watcher to say so (onFailure %s)',
  (onFailure) => {
    const state =
      onFailure === 'Stop'
        ? 'steps left applied: rules, routes'
        : 'every task that ran was reverted: its routes are back as it found them';

    test('an approval wakes it: it reads the Stage, never switches, ends Cancelled (StageDeleted), reverted only under Revert', async () => {
      const stage = `gate-${onFailure.toLowerCase()}`;
      const ref = canary(stage, { steps: [{ setWeight: 10 }, { setWeight: 20 }, { pause: {} }] }, [errors], onFailure);
      const handle = await start(ref);
      await atGate(ref, 'Approval');
      cluster.stages.delete(`${ns}/${stage}`);
      await handle.executeUpdate(approveUpdate, { args: [{ by: 'admin' }] });

      await pollUntil(
        () => (cluster.activation(ref).status.phase === 'Cancelled' ? true : undefined),
        15_000,
        'the canary to stop',
        20,
      );
      expect(cluster.activation(ref).status).toMatchObject({
        reason: 'StageDeleted',
        message: `Stage unit/${stage} was deleted: the activation stopped at step 3/3; ${state}`,
      });
      expect(weights(ref, `${stage}-dr`)).toEqual([10, 20]);
      expect(
        cluster
          .callsOf(ref)
          .filter((c) => c.action === 'Revert')
          .map((c) => c.registration),
      ).toEqual(onFailure === 'Revert' ? [`${stage}-vs`, `${stage}-dr`] : []);
      expect(cluster.activeUsage(ns, stage)).toBe(`${stage}-1`);
      expect(cluster.stageVersion(ns, `${stage}-2`).serving).toBeUndefined();
      expect(cluster.lease(ns, stage)?.holder).toBeUndefined();
    });

    test("a background analysis's measurement wakes it at the gate, and it stops there", async () => {
      const stage = `measured-${onFailure.toLowerCase()}`;
      const ref = canary(
        stage,
        {
          steps: [{ setWeight: 10, name: 'ten' }, { setWeight: 20 }, { pause: {}, name: 'approval' }],
          background: [{ analysis: 'errors', from: 'ten' }],
        },
        [{ ...errors, count: 100, intervalSeconds: 1 }],
        onFailure,
      );
      cluster.metrics.set(`errors{version="${stage}-2"}`, [{ value: 0.01 }]);
      await start(ref);
      await atGate(ref, 'Approval');
      cluster.stages.delete(`${ns}/${stage}`);
      // Polled in real time (time is locked): the next measurement, a second on, reads the Stage beside it.
      await pollUntil(
        () => (cluster.activation(ref).status.phase === 'Cancelled' ? true : undefined),
        15_000,
        'the canary to stop',
        20,
      );
      expect(cluster.activation(ref).status).toMatchObject({
        reason: 'StageDeleted',
        message: `Stage unit/${stage} was deleted: the activation stopped at step 3/3 (approval); ${state}`,
      });
      expect(cluster.activeUsage(ns, stage)).toBe(`${stage}-1`);
    });
  },
);

test("the Stage deleted while an abort goes back down its ramp: the ramp's wait ends, the record is put back at once, and it ends StageDeleted", async () => {
  const ref = canary('ramp', {
    steps: [{ setWeight: 20 }, { pause: {} }],
    abort: { weights: [10], intervalSeconds: 600 },
  });
  const handle = await start(ref);
  await atGate(ref, 'Approval');
  await handle.executeUpdate(abortUpdate, { args: [{ by: 'admin' }] });
  // The ramp's 10 % round over and its 600 s wait begun (the Lease taken for it), not only the
  // round's calls ended: a Stage deleted before the round is recorded stops the round instead.
  const heldForTheWait = `lease ramp held ${leaseSecondsOver(600_000)}s by ${ns}/${ref.name}`;
  await pollUntil(() => cluster.journal.includes(heldForTheWait) || undefined, 15_000, 'the ramp to wait at 10 %', 20);
  const uid = cluster.stages.get(`${ns}/ramp`)!.uid;
  cluster.stages.delete(`${ns}/ramp`);
  await handle.signal(stageDeletedSignal, { namespace: ns, stage: 'ramp', uid });

  // Time is locked while this polls: the ramp's 600 s wait ended because the Stage went.
  await pollUntil(
    () => (cluster.activation(ref).status.phase === 'Cancelled' ? true : undefined),
    15_000,
    'the canary to stop',
    20,
  );
  expect(cluster.activation(ref).status).toMatchObject({
    reason: 'StageDeleted',
    message:
      'Stage unit/ramp was deleted: the activation stopped while going back (aborted at step 2/2 by admin); the traffic is back as recorded before the activation',
  });
  expect(weights(ref, 'ramp-dr')).toEqual([20, 10]);
  expect(
    cluster
      .callsOf(ref)
      .filter((c) => c.action === 'Revert')
      .map((c) => c.registration),
  ).toEqual(['ramp-vs', 'ramp-dr']);
});
