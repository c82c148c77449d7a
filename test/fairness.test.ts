/**
 * Fairness between namespaces (decisions/fair-share.ts, docs/scale.md): the watcher lets at most
 * `stagesPerNamespace` Stages of a namespace activate at once. Here the limit is 2, one watcher
 * serves namespaces A and B, and every activation runs a one-step plan of the sleepy executor.
 */
import { isFinal } from '../decisions/activation.js';
import { pollUntil } from '../scripts/env/process.js';
import { ActivationController } from '../controllers/activation/controller.js';
import { freshNamespace, kubectl } from './support/cluster.js';
import { activate, seedActive, seedSleepyPlan, seedStage } from './support/scenario.js';
import { quickDefaultPlan } from './support/stages.js';
import { create, object, phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';
import type { CustomObject } from '../k8s/custom-objects.js';

const LIMIT = 2;
let a: TestSystem;
let b: TestSystem;
let watcher: ActivationController;

beforeAll(async () => {
  a = await startTestSystem('fair-a', { watcher: false, stageController: false });
  b = { ...a, ns: await freshNamespace('fair-b') };
  watcher = new ActivationController({
    kubeConfig: a.kc,
    client: a.client,
    taskQueue: a.coreTaskQueue,
    queueSuffix: `-${a.ns}`,
    namespaces: [a.ns, b.ns],
    systemNamespace: a.systemNs,
    stagesPerNamespace: LIMIT,
    checkIntervalMs: 2_000,
    log: () => undefined,
  });
  await watcher.start();
  await quickDefaultPlan(a, 2);
  await seedSleepyPlan(a, 'long', 30);
}, 120_000);

afterAll(async () => {
  await watcher?.stop();
  await a?.stop();
  await kubectl('delete', 'namespace', b.ns, '--wait=false').catch(() => undefined);
});

const activations = (t: TestSystem) => t.objects.list('VectorActivation', t.ns);
const unfinished = (vas: CustomObject[]) => vas.filter((v) => !isFinal(v.status?.phase));
const held = (v: CustomObject) => v.status?.phase === 'Waiting' && v.status?.reason === 'NamespaceLimit';

async function stagesWith(t: TestSystem, count: number, prefix: string): Promise<string[]> {
  const stages = Array.from({ length: count }, (_, i) => `${prefix}${i}`);
  for (const stage of stages) {
    await seedStage(t, stage, [1, 2, 3, 4, 5]);
    await seedActive(t, stage, 1);
  }
  return stages;
}

it('a burst in one namespace runs two Stages at a time, the rest wait visibly, and another namespace is not queued behind it', async () => {
  const stages = await stagesWith(a, 7, 'burst');
  await stagesWith(b, 1, 'other');
  await Promise.all(stages.map((stage) => activate(a, `${stage}-to-2`, stage, 2)));
  await activate(b, 'other0-to-2', 'other0', 2);

  // Sampled until A's burst is done: never more than LIMIT Stages of A with a workflow at once.
  let most = 0;
  let sawHeld: CustomObject | undefined;
  let bDoneWhileAWaited = false;
  await pollUntil(
    async () => {
      const vas = await activations(a);
      const open = unfinished(vas);
      most = Math.max(most, open.filter((v) => v.status?.workflowId).length);
      sawHeld ??= open.find(held);
      if (!bDoneWhileAWaited && open.length > 0)
        bDoneWhileAWaited =
          (await b.objects.get('VectorActivation', b.ns, 'other0-to-2'))?.status?.phase === 'Succeeded';
      return vas.length === stages.length && open.length === 0;
    },
    90_000,
    `the ${stages.length} activations of the burst to finish`,
    100,
  );

  expect(most).toBe(LIMIT);
  expect(sawHeld?.status?.message).toContain(`namespace ${a.ns}`);
  expect(sawHeld?.status?.conditions).toEqual(
    expect.arrayContaining([
      expect.objectContaining({ type: 'Progressing', status: 'True', reason: 'NamespaceLimit' }),
    ]),
  );
  expect(sawHeld?.status?.workflowId).toBeUndefined();
  expect(bDoneWhileAWaited).toBe(true);
  expect((await activations(a)).map((v) => v.status?.phase)).toEqual(stages.map(() => 'Succeeded'));
});

it('a burst on one Stage counts as one Stage: every activation reaches the lock and the newest supersedes the rest', async () => {
  const [stage] = await stagesWith(a, 1, 'one');
  await Promise.all([2, 3, 4, 5].map((r) => activate(a, `${stage}-to-${r}`, stage!, r)));
  const finals = await Promise.all(
    [2, 3, 4, 5].map((r) =>
      waitFor(a, 'VectorActivation', `${stage}-to-${r}`, (o) => isFinal(o.status?.phase), 60_000),
    ),
  );
  const phases = finals.map((v) => v.status?.phase);
  expect(phases[3]).toBe('Succeeded');
  // One at a time they would all run in turn (four Succeeded): at most the first and the newest run.
  expect(phases.filter((p) => p === 'Succeeded').length).toBeLessThanOrEqual(2);
  expect(phases.filter((p) => p !== 'Succeeded')).toEqual(phases.filter((p) => p !== 'Succeeded').map(() => 'Skipped'));
});

it('a held activation is cancelled at once, without waiting for its place and without a workflow; its other requests wait their turn with it', async () => {
  const stages = await stagesWith(a, 4, 'cancel');
  for (const stage of stages.slice(0, 2)) await activate(a, `${stage}-to-2`, stage, 2, { executionPlan: 'long-plan' });
  // Running: their workflows said InProgress (the workflowId comes a write before).
  await Promise.all(
    stages
      .slice(0, 2)
      .map((stage) =>
        waitFor(
          a,
          'VectorActivation',
          `${stage}-to-2`,
          (o) => Boolean(o.status?.workflowId) && o.status?.phase === 'InProgress',
        ),
      ),
  );
  await activate(a, 'cancel2-to-2', 'cancel2', 2);
  await waitFor(a, 'VectorActivation', 'cancel2-to-2', held);

  await kubectl('annotate', 'va', 'cancel2-to-2', '-n', a.ns, 'konfidence.cloud/cancel=not-now');
  // The final phase and the watcher's answer to the request are two writes: wait for both.
  const cancelled = await waitFor(
    a,
    'VectorActivation',
    'cancel2-to-2',
    (o) => phaseIs('Cancelled', 'Succeeded', 'Failed')(o) && (o.status?.requests ?? []).length > 0,
    20_000,
  );
  expect(cancelled.status?.phase).toBe('Cancelled');
  expect(cancelled.status?.requests).toEqual([expect.objectContaining({ action: 'cancel', outcome: 'Accepted' })]);
  // Ended where it waited: no workflow started for it, the limit held.
  expect(cancelled.status).toMatchObject({
    reason: 'Cancelled',
    message: expect.stringContaining('cancelled before it started'),
  });
  expect(cancelled.status?.workflowId).toBeUndefined();

  // Created carrying a request, it still waits its turn: the retry is refused, no workflow starts.
  await create(
    a,
    object(
      'VectorActivation',
      a.ns,
      'cancel3-to-2',
      { stage: 'cancel3', stageVersion: 'cancel3-2' },
      { annotations: { 'konfidence.cloud/retry': 'early' } },
    ),
  );
  const early = await waitFor(
    a,
    'VectorActivation',
    'cancel3-to-2',
    (o) => held(o) && (o.status?.requests ?? []).length > 0,
    20_000,
  );
  expect(early.status?.requests).toEqual([
    expect.objectContaining({
      action: 'retry',
      outcome: 'Refused',
      message: expect.stringContaining('has not started yet'),
    }),
  ]);
  expect(early.status?.workflowId).toBeUndefined();
  // The two long ones still run: the cancel did not wait for either of them.
  expect(
    (await activations(a))
      .filter(
        (v) => v.metadata.name.startsWith('cancel') && !['cancel2-to-2', 'cancel3-to-2'].includes(v.metadata.name),
      )
      .map((v) => v.status?.phase),
  ).toEqual(['InProgress', 'InProgress']);
  await kubectl('annotate', 'va', 'cancel3-to-2', '-n', a.ns, 'konfidence.cloud/cancel=done');
  for (const stage of stages.slice(0, 2))
    await kubectl('annotate', 'va', `${stage}-to-2`, '-n', a.ns, 'konfidence.cloud/cancel=done');
});
