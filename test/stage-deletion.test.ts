/**
 * A Stage deleted while its activations run, on the real servers (kube-apiserver with garbage
 * collection and the namespace controller, the Temporal dev server): the watcher's watch on Stages
 * tells their workflows at once; without it, a run reads the Stage before its next route write and
 * when a gate wakes it. Each ends Cancelled, reason StageDeleted, naming the Stage, with its routes
 * put back or left as they were under the plan's onFailure, the Stage's Lease and lock let go, and
 * its workflow closed (so nothing is written for the Stage afterwards). An activation created for a
 * Stage being deleted fails at once; `konfidence activate` makes the Stage its owner; a namespace
 * deleted mid-run goes.
 */
import { ANNOTATION_ACTIVATED_BY, ANNOTATION_SERVING } from '../api/group.js';
import { k8s } from '../k8s/client.js';
import { pollUntil } from '../scripts/env/process.js';
import { activationWorkflowId, approveUpdate } from '../shared/activation.js';
import { stageLeaseName } from '../shared/names.js';
import { lockStateQuery, stageLockWorkflowId } from '../stage-lock/contract.js';
import { konfidence } from './support/cli.js';
import { freshNamespace, kubectl } from './support/cluster.js';
import { HTTPROUTE, VIRTUALSERVICE, activate, seedActive, seedRoutes, seedStage } from './support/scenario.js';
import { create, object, phaseIs, readOther, startTestSystem, waitFor, type TestSystem } from './support/system.js';

const ONFAILURE = ['Revert', 'Stop'] as const;
type OnFailure = (typeof ONFAILURE)[number];

let s: TestSystem;
/** A namespace of its own, deleted whole by one test. */
let doomed: string;
beforeAll(async () => {
  doomed = await freshNamespace('stage-del-ns');
  s = await startTestSystem('stage-del', { watcherCheckIntervalMs: 1000 }, [doomed]);
});
afterAll(async () => {
  await s?.stop();
  await kubectl('delete', 'namespace', doomed, '--wait=false').catch(() => undefined);
});

/** The routes' whole specs: a put-back must be exact. */
async function specs(stage: string, ns = s.ns) {
  return Promise.all([
    (await readOther(s.kc, ...HTTPROUTE, ns, `${stage}-shop`)).spec,
    (await readOther(s.kc, ...VIRTUALSERVICE, ns, `${stage}-shop`)).spec,
  ]);
}

/** Stage `stage` (revisions 1–3, 1 serving through both routes) and its registrations; returns the routes as they were. */
async function seed(stage: string, ns = s.ns) {
  const at = { ...s, ns };
  await seedStage(at, stage, [1, 2, 3]);
  await seedRoutes(at, stage, 1);
  await seedActive(at, stage, 1);
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, `${stage}-gateway`, {
      type: 'gateway-api',
      timeoutSeconds: 30,
      spec: { routes: [{ name: `${stage}-shop`, namespace: ns, rules: [0] }] },
    }),
  );
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, `${stage}-mesh`, {
      type: 'istio',
      timeoutSeconds: 30,
      spec: { virtualServices: [{ name: `${stage}-shop`, namespace: ns, routes: ['primary'] }], host: 'shop' },
    }),
  );
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, `${stage}-work`, {
      type: 'sleepy',
      timeoutSeconds: 120,
      spec: { seconds: 60, records: true },
    }),
  );
  return specs(stage, ns);
}

/** Plan `<stage>-canary`: 10 %, 20 %, then an approval, over both routes. */
const canaryPlan = (stage: string, onFailure: OnFailure) =>
  create(
    s,
    object('ActivationExecutionPlan', s.systemNs, `${stage}-canary`, {
      onFailure,
      steps: [
        { name: 'gateway', tasks: [`${stage}-gateway`] },
        { name: 'mesh', tasks: [`${stage}-mesh`] },
      ],
      progression: { steps: [{ setWeight: 10 }, { setWeight: 20 }, { pause: {} }] },
    }),
  );

/** Plan `<stage>-working`: the HTTPRoute, then a task that works for a minute (and records a rule of its own). */
const workingPlan = (stage: string, onFailure: OnFailure) =>
  create(
    s,
    object('ActivationExecutionPlan', s.systemNs, `${stage}-working`, {
      onFailure,
      steps: [
        { name: 'gateway', tasks: [`${stage}-gateway`] },
        { name: 'work', tasks: [`${stage}-work`] },
      ],
    }),
  );

const workflowOf = async (name: string, ns = s.ns) => {
  const va = (await s.objects.get('VectorActivation', ns, name))!;
  return s.client.workflow.getHandle(activationWorkflowId({ namespace: ns, name, uid: va.metadata.uid! }));
};

/** Its workflow has closed: nothing of the activation can write for the Stage any more. */
async function closed(name: string, ns = s.ns) {
  const handle = await workflowOf(name, ns);
  await pollUntil(
    async () => (await handle.describe()).status.name !== 'RUNNING',
    30_000,
    `the workflow of ${name} to close`,
    200,
  );
}

/** The Stage is let go: its Lease has no holder (or went with the Stage), and its lock holds nobody. */
async function stageLetGo(stage: string, ns = s.ns) {
  const lease = await s.kc
    .makeApiClient(k8s.CoordinationV1Api)
    .readNamespacedLease({ name: stageLeaseName(stage), namespace: ns })
    .catch(() => undefined);
  expect(lease?.spec?.holderIdentity).toBeUndefined();
  const lock = await s.client.workflow
    .getHandle(stageLockWorkflowId(ns, stage))
    .query(lockStateQuery)
    .catch(() => undefined);
  expect(lock?.holder).toBeUndefined();
  expect(lock?.waiting ?? []).toEqual([]);
}

/** Nothing moved toward the new versions: the active usage names revision 1, and no later one is marked. */
async function nothingMoved(stage: string, ns = s.ns) {
  const active = await s.objects.get('StageVersionUsage', ns, `${stage}-active`);
  expect(active?.spec.stageVersionRef).toEqual({ name: `${stage}-1` });
  for (const r of [2, 3]) {
    const sv = await s.objects.get('StageVersion', ns, `${stage}-${r}`);
    expect([
      sv?.metadata.annotations?.[ANNOTATION_SERVING],
      sv?.metadata.annotations?.[ANNOTATION_ACTIVATED_BY],
    ]).toEqual([undefined, undefined]);
  }
}

const deleteStage = (stage: string, ns = s.ns) => kubectl('delete', 'stage', stage, '-n', ns, '--wait=false');

const stoppedWith = (stage: string, where: string, state: string, ns = s.ns) => ({
  phase: 'Cancelled',
  reason: 'StageDeleted',
  message: `Stage ${ns}/${stage} was deleted: the activation stopped ${where}; ${state}`,
});

const putBack = 'every task that ran was reverted: its routes are back as it found them';

describe.each(ONFAILURE)('a Stage deleted while the watcher runs (onFailure %s)', (onFailure) => {
  const tag = onFailure.toLowerCase();

  it('a canary waiting at its approval stops at once: its traffic put back or left as the plan says, never switched', async () => {
    const stage = `gate-${tag}`;
    const before = await seed(stage);
    await canaryPlan(stage, onFailure);
    await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-canary` });
    await waitFor(
      s,
      'VectorActivation',
      `${stage}-to-2`,
      (o) => o.status?.progression?.gate?.type === 'Approval',
      60_000,
    );
    const at20 = await specs(stage);

    await deleteStage(stage);
    // An approval waits a day by default: only the watcher's word ends it this soon.
    const va = await waitFor(
      s,
      'VectorActivation',
      `${stage}-to-2`,
      phaseIs('Cancelled', 'Failed', 'Succeeded'),
      30_000,
    );
    expect(va.status).toMatchObject(
      stoppedWith(stage, 'at step 3/3', onFailure === 'Revert' ? putBack : 'steps left applied: gateway, mesh'),
    );
    expect(await specs(stage)).toEqual(onFailure === 'Revert' ? before : at20);
    await closed(`${stage}-to-2`);
    await stageLetGo(stage);
    await nothingMoved(stage);
  });

  it('one running a step is cancelled in it, and one waiting for the Stage behind it stops having changed nothing', async () => {
    const stage = `step-${tag}`;
    const before = await seed(stage);
    await workingPlan(stage, onFailure);
    await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-working` });
    await waitFor(s, 'VectorActivation', `${stage}-to-2`, (o) => o.status?.steps?.[1]?.phase === 'InProgress', 60_000);
    await activate(s, `${stage}-to-3`, stage, 3, { executionPlan: `${stage}-working` });
    await waitFor(s, 'VectorActivation', `${stage}-to-3`, phaseIs('Waiting'), 30_000);
    const applied = await specs(stage);

    await deleteStage(stage);
    const [running, waiting] = await Promise.all(
      [2, 3].map((r) =>
        waitFor(s, 'VectorActivation', `${stage}-to-${r}`, phaseIs('Cancelled', 'Failed', 'Succeeded'), 30_000),
      ),
    );
    expect(running!.status).toMatchObject(
      stoppedWith(
        stage,
        'in step work',
        onFailure === 'Revert' ? putBack : 'steps left applied: gateway; maybe partly applied: work',
      ),
    );
    expect(waiting!.status).toMatchObject(
      stoppedWith(stage, `while waiting for Stage ${stage}`, 'no route was changed'),
    );
    expect(await specs(stage)).toEqual(onFailure === 'Revert' ? before : applied);
    await Promise.all([closed(`${stage}-to-2`), closed(`${stage}-to-3`)]);
    await stageLetGo(stage);
    await nothingMoved(stage);
  });
});

it('an activation created for a Stage being deleted fails at once (StageDeleted), and `konfidence activate` refuses to create one', async () => {
  const stage = 'going';
  await seed(stage);
  await workingPlan(stage, 'Stop');
  // A finalizer of someone else's keeps the Stage in its deletion for as long as the test needs.
  await s.objects.mergeMetadata('Stage', s.ns, stage, { finalizers: ['test.konfidence.cloud/hold'] });
  await deleteStage(stage);
  await waitFor(s, 'Stage', stage, (o) => Boolean(o.metadata.deletionTimestamp), 10_000);

  await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-working` });
  const va = await waitFor(s, 'VectorActivation', `${stage}-to-2`, phaseIs('Failed', 'Cancelled', 'Succeeded'), 30_000);
  expect(va.status).toMatchObject({
    phase: 'Failed',
    reason: 'StageDeleted',
    message: `Stage ${s.ns}/${stage} is being deleted`,
  });
  expect(await s.objects.get('StageVersionUsage', s.ns, `${stage}-to-2-activation`)).toBeUndefined();

  const cli = await konfidence('activate', stage, `${stage}-3`, '-n', s.ns);
  expect(cli).toEqual({
    code: 1,
    stdout: '',
    stderr: `error: Stage ${s.ns}/${stage} is being deleted: an activation of it could only fail\n`,
  });
  await s.objects.mergeMetadata('Stage', s.ns, stage, { finalizers: null });
});

it('`konfidence activate` makes the Stage the owner: deleting the Stage stops the activation, then takes it along', async () => {
  const stage = 'owned';
  await seed(stage);
  await workingPlan(stage, 'Revert');
  const created = await konfidence(
    'activate',
    stage,
    `${stage}-2`,
    '--plan',
    `${stage}-working`,
    '--name',
    `${stage}-to-2`,
    '-n',
    s.ns,
  );
  expect(created).toEqual({
    code: 0,
    stdout: `vectoractivation/${stage}-to-2 created: Stage ${s.ns}/${stage} → ${stage}-2\n`,
    stderr: '',
  });
  const running = await waitFor(
    s,
    'VectorActivation',
    `${stage}-to-2`,
    (o) => o.status?.steps?.[1]?.phase === 'InProgress',
    60_000,
  );
  const owner = await s.objects.get('Stage', s.ns, stage);
  expect(running.metadata.ownerReferences).toEqual([
    { apiVersion: owner!.apiVersion, kind: 'Stage', name: stage, uid: owner!.metadata.uid },
  ]);
  const handle = await workflowOf(`${stage}-to-2`);

  await deleteStage(stage);
  // Garbage collection deletes it once its run has ended (its close-out finalizer holds it until then).
  await pollUntil(
    async () => !(await s.objects.get('VectorActivation', s.ns, `${stage}-to-2`)),
    60_000,
    `${stage}-to-2 to be gone`,
    200,
  );
  expect(await handle.result()).toMatchObject({ phase: 'Cancelled', reason: 'StageDeleted' });
});

it('a namespace deleted mid-run, under both onFailure: each activation ends, lets the Stage go, says what it could not put back, and the namespace goes', async () => {
  const stages = ONFAILURE.map((onFailure) => ({ onFailure, stage: `ns-${onFailure.toLowerCase()}` }));
  for (const { onFailure, stage } of stages) {
    await seed(stage, doomed);
    await workingPlan(stage, onFailure);
    await activate({ ...s, ns: doomed }, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-working` });
  }
  await Promise.all(
    stages.map(({ stage }) =>
      waitFor(
        s,
        'VectorActivation',
        `${stage}-to-2`,
        (o) => o.status?.steps?.[1]?.phase === 'InProgress',
        60_000,
        doomed,
      ),
    ),
  );
  const handles = await Promise.all(stages.map(({ stage }) => workflowOf(`${stage}-to-2`, doomed)));

  await kubectl('delete', 'namespace', doomed, '--wait=false');
  const core = s.kc.makeApiClient(k8s.CoreV1Api);
  await pollUntil(
    async () => !(await core.readNamespace({ name: doomed }).catch(() => undefined)),
    90_000,
    `namespace ${doomed} to be gone`,
    500,
  );
  for (const [i, { onFailure, stage }] of stages.entries()) {
    const ended = await handles[i]!.result();
    // Whichever reached the run first, its Stage's deletion or its own: both are the namespace going.
    expect(['StageDeleted', 'Cancelled']).toContain(ended.reason);
    // Creates are refused in a namespace being deleted, and its executions go with it: a revert
    // cannot put the routes back (they go too), and the ending says so rather than claim it did.
    const state =
      onFailure === 'Revert'
        ? 'the revert failed for some tasks; steps left applied: gateway; maybe partly applied: work'
        : 'steps left applied: gateway; maybe partly applied: work';
    expect(ended).toMatchObject({ phase: 'Cancelled', message: expect.stringMatching(new RegExp(`; ${state}$`)) });
    const lock = await s.client.workflow
      .getHandle(stageLockWorkflowId(doomed, stage))
      .query(lockStateQuery)
      .catch(() => undefined);
    expect(lock?.holder).toBeUndefined();
  }
});

// Last: the watcher is stopped for it.
it('with no watcher, under both onFailure, a run finds its Stage gone by itself: before its next step, and when an answer wakes it at a gate', async () => {
  const cases = ONFAILURE.map((onFailure) => ({
    onFailure,
    step: `unw-step-${onFailure.toLowerCase()}`,
    gate: `unw-gate-${onFailure.toLowerCase()}`,
  }));
  const runs = await Promise.all(
    cases.map(async ({ onFailure, step, gate }) => {
      const [beforeStep, beforeGate] = await Promise.all([seed(step), seed(gate)]);
      // The HTTPRoute, then a task that works a while (long enough for the other cases to reach their
      // gates and the watcher to stop under a loaded machine's pace), then the VirtualService.
      await create(
        s,
        object('ActivationTaskRegistration', s.systemNs, `${step}-work-short`, {
          type: 'sleepy',
          timeoutSeconds: 60,
          spec: { seconds: 12 },
        }),
      );
      const steps = [
        { name: 'gateway', tasks: [`${step}-gateway`] },
        { name: 'work', tasks: [`${step}-work-short`] },
        { name: 'mesh', tasks: [`${step}-mesh`] },
      ];
      await create(s, object('ActivationExecutionPlan', s.systemNs, `${step}-late`, { onFailure, steps }));
      await canaryPlan(gate, onFailure);
      await activate(s, `${step}-to-2`, step, 2, { executionPlan: `${step}-late` });
      await activate(s, `${gate}-to-2`, gate, 2, { executionPlan: `${gate}-canary` });
      await Promise.all([
        waitFor(s, 'VectorActivation', `${step}-to-2`, (o) => o.status?.steps?.[1]?.phase === 'InProgress', 60_000),
        waitFor(s, 'VectorActivation', `${gate}-to-2`, (o) => o.status?.progression?.gate?.type === 'Approval', 60_000),
      ]);
      return {
        onFailure,
        step,
        gate,
        beforeStep,
        beforeGate,
        atGate: await specs(gate),
        gateRun: await workflowOf(`${gate}-to-2`),
      };
    }),
  );
  await s.watcher.stop();

  await Promise.all(cases.flatMap(({ step, gate }) => [deleteStage(step), deleteStage(gate)]));
  for (const { onFailure, step, gate, beforeStep, beforeGate, atGate, gateRun } of runs) {
    // The working task ends by itself; the run reads the Stage before the next step, which never starts.
    const stopped = await waitFor(
      s,
      'VectorActivation',
      `${step}-to-2`,
      phaseIs('Cancelled', 'Failed', 'Succeeded'),
      60_000,
    );
    expect(stopped.status).toMatchObject(
      stoppedWith(step, 'before step mesh', onFailure === 'Revert' ? putBack : 'steps left applied: gateway, work'),
    );
    const [route, mesh] = await specs(step);
    expect(mesh).toEqual(beforeStep[1]);
    if (onFailure === 'Revert') expect(route).toEqual(beforeStep[0]);
    else expect(route).not.toEqual(beforeStep[0]);
    // Nobody tells the canary: it waits at its gate until an answer wakes it, and then it reads the Stage.
    expect((await s.objects.get('VectorActivation', s.ns, `${gate}-to-2`))?.status?.phase).toBe('InProgress');
    await gateRun.executeUpdate(approveUpdate, { args: [{ by: 'admin' }] });
    const canary = await waitFor(
      s,
      'VectorActivation',
      `${gate}-to-2`,
      phaseIs('Cancelled', 'Failed', 'Succeeded'),
      30_000,
    );
    expect(canary.status).toMatchObject(
      stoppedWith(gate, 'at step 3/3', onFailure === 'Revert' ? putBack : 'steps left applied: gateway, mesh'),
    );
    expect(await specs(gate)).toEqual(onFailure === 'Revert' ? beforeGate : atGate);
    await Promise.all([closed(`${step}-to-2`), closed(`${gate}-to-2`)]);
    await Promise.all([nothingMoved(step), nothingMoved(gate)]);
  }
});
