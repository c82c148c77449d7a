/**
 * The VectorActivation's status is the record of what ran: a finished
 * activation never runs again when Temporal has forgotten its workflow; a workflow that closed
 * without finishing (terminated) leaves no debris; a waiting activation whose lock workflow was
 * terminated asks again and runs.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { WorkflowNotFoundError } from '@temporalio/client';
import { LABEL_VECTOR_ACTIVATION, ANNOTATION_ACTIVATED_BY } from '../api/group.js';
import { k8s } from '../k8s/client.js';
import { binaries } from '../scripts/env/paths.js';
import { pollUntil } from '../scripts/env/process.js';
import { activationWorkflowId, type ActivationRef } from '../shared/activation.js';
import { stageLockWorkflowId } from '../stage-lock/contract.js';
import { ActivationController } from '../controllers/activation/controller.js';
import { freshNamespace } from './support/cluster.js';
import { startedExecutions } from './support/executors.js';
import { activate, holdStageWorking, seedPlan, seedRoutes, seedSleepyPlan, seedStage } from './support/scenario.js';
import { create, object, phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';
import { temporalAddress, temporalNamespace } from './support/temporal.js';

let s: TestSystem;
beforeAll(async () => {
  s = await startTestSystem('records', { watcherCheckIntervalMs: 1_000, lockAskAgainSeconds: 2 });
});
afterAll(async () => {
  await s?.stop();
});

const run = promisify(execFile);

async function refOf(name: string, namespace = s.ns): Promise<ActivationRef> {
  const va = await s.objects.get('VectorActivation', namespace, name);
  return { namespace, name, uid: va!.metadata.uid! };
}

async function workflowExists(ref: ActivationRef): Promise<boolean> {
  try {
    await s.client.workflow.getHandle(activationWorkflowId(ref)).describe();
    return true;
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return false;
    throw err;
  }
}

function watcherFor(namespace: string): ActivationController {
  return new ActivationController({
    kubeConfig: s.kc,
    client: s.client,
    taskQueue: s.coreTaskQueue,
    namespaces: [namespace],
    queueSuffix: `-${s.ns}`,
    log: () => undefined,
  });
}

it('starts workflows at start-up for the unfinished activations only', async () => {
  // A namespace no watcher watches yet, with a history of finished activations and one new one.
  const ns = await freshNamespace('records-history');
  const finals = ['Succeeded', 'Skipped', 'Failed', 'Cancelled'];
  const names = Array.from({ length: 12 }, (_, i) => `old-${i}`);
  for (const [i, name] of names.entries()) {
    await create(s, object('VectorActivation', ns, name, { stage: 'gone', stageVersion: 'gone-1' }));
    await s.objects.patchStatus('VectorActivation', ns, name, {
      phase: finals[i % finals.length],
      reason: 'Recorded',
      message: 'ran long ago',
    });
  }
  await create(s, object('VectorActivation', ns, 'new-one', { stage: 'gone', stageVersion: 'gone-1' }));

  const watcher = watcherFor(ns);
  await watcher.start();
  try {
    // The unfinished one gets its workflow (it fails: its Stage does not exist)...
    await waitFor(s, 'VectorActivation', 'new-one', phaseIs('Failed'), 30_000, ns);
    // ...and not one of the finished ones does.
    for (const name of names) expect(await workflowExists(await refOf(name, ns))).toBe(false);
  } finally {
    await watcher.stop();
  }
});

it('closes out an activation whose workflow was terminated: Failed with the reason, nothing left held', async () => {
  await holdStageWorking(s, 'term', 60);
  const ref = await refOf('term-to-2');
  await s.client.workflow.getHandle(activationWorkflowId(ref)).terminate('test: an operator terminated it');

  const va = await waitFor(s, 'VectorActivation', 'term-to-2', phaseIs('Failed', 'Succeeded', 'Cancelled'), 30_000);
  expect(va.status).toMatchObject({ phase: 'Failed', reason: 'WorkflowTerminated' });
  expect(va.status.message).toContain('was terminated');
  // Its execution ended first, with the reason an External controller stops on.
  const [execution] = await s.objects.list('ActivationExecution', s.ns, `${LABEL_VECTOR_ACTIVATION}=term-to-2`);
  expect(execution?.status).toMatchObject({
    phase: 'Error',
    reason: 'Cancelled',
    message: expect.stringContaining('was terminated'),
  });
  expect(await s.objects.get('StageVersionUsage', s.ns, 'term-to-2-activation')).toBeUndefined();
  expect(
    (await s.objects.get('StageVersion', s.ns, 'term-2'))?.metadata.annotations?.[ANNOTATION_ACTIVATED_BY],
  ).toBeUndefined();
  const lease = await s.kc
    .makeApiClient(k8s.CoordinationV1Api)
    .readNamespacedLease({ name: 'konfidence-stage-term', namespace: s.ns });
  expect(lease.spec?.holderIdentity).toBeUndefined();

  // The Stage is free for the next activation at once.
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, 'term-quick', { type: 'sleepy', spec: { seconds: 0 } }),
  );
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, 'term-quick', { steps: [{ name: 'wait', tasks: ['term-quick'] }] }),
  );
  await activate(s, 'term-to-3', 'term', 3, { executionPlan: 'term-quick' });
  await waitFor(s, 'VectorActivation', 'term-to-3', phaseIs('Succeeded'), 30_000);
});

it('closes out a terminated workflow whose first step moved a route: the StageVersion stays held and is marked serving', async () => {
  await seedStage(s, 'held', [1, 2]);
  await seedRoutes(s, 'held', 1);
  await seedPlan(s, 'held', { plan: 'held-routes' });
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, 'held-slow', {
      type: 'sleepy',
      timeoutSeconds: 120,
      spec: { seconds: 60 },
    }),
  );
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, 'held-plan', {
      steps: [
        { name: 'gateway', tasks: ['held-gateway'] },
        { name: 'wait', tasks: ['held-slow'] },
      ],
    }),
  );
  await activate(s, 'held-to-2', 'held', 2, { executionPlan: 'held-plan' });
  await pollUntil(
    () => [...startedExecutions].some((n) => n.startsWith('held-to-2-1-')),
    30_000,
    'the second step to start',
  );
  await s.client.workflow
    .getHandle(activationWorkflowId(await refOf('held-to-2')))
    .terminate('test: terminated after the route moved');

  await waitFor(s, 'VectorActivation', 'held-to-2', phaseIs('Failed', 'Succeeded', 'Cancelled'), 30_000);
  // The route still sends held-2 traffic: its activation usage stays, and the Stage controller marks it serving.
  expect(await s.objects.get('StageVersionUsage', s.ns, 'held-to-2-activation')).toBeDefined();
  await pollUntil(
    async () => {
      s.stageController!.enqueue(s.ns);
      return (
        (await s.objects.get('StageVersion', s.ns, 'held-2'))?.metadata.annotations?.[
          'konfidence.cloud/serving-stage'
        ] === 'held'
      );
    },
    30_000,
    'held-2 to be marked serving',
    200,
  );
});

it('a waiting activation whose lock workflow was terminated asks again and runs', async () => {
  await seedStage(s, 'relock', [1, 2, 3]);
  await seedSleepyPlan(s, 'relock', 4);
  await activate(s, 'relock-to-2', 'relock', 2, { executionPlan: 'relock-plan' });
  await waitFor(s, 'VectorActivation', 'relock-to-2', phaseIs('InProgress'));
  await activate(s, 'relock-to-3', 'relock', 3, { executionPlan: 'relock-plan' });
  await waitFor(s, 'VectorActivation', 'relock-to-3', phaseIs('Waiting'));

  await s.client.workflow.getHandle(stageLockWorkflowId(s.ns, 'relock')).terminate('test: the lock workflow is gone');
  await waitFor(s, 'VectorActivation', 'relock-to-2', phaseIs('Succeeded'), 30_000);
  await waitFor(s, 'VectorActivation', 'relock-to-3', phaseIs('Succeeded'), 30_000);
});

// Last: it replaces the system's watcher.
it('never runs a finished activation again after Temporal dropped its workflow and the watcher restarted', async () => {
  await seedStage(s, 'done', [1, 2, 3]);
  await seedRoutes(s, 'done', 1);
  await seedPlan(s, 'done');
  await activate(s, 'done-to-2', 'done', 2);
  // Finished: Succeeded, and its close-out finalizer gone (taken away right after that status).
  const finished = await waitFor(
    s,
    'VectorActivation',
    'done-to-2',
    (o) => o.status?.phase === 'Succeeded' && !o.metadata.finalizers?.length,
  );
  const ref = await refOf('done-to-2');

  // What Temporal's retention does to a closed workflow, done now.
  await run(binaries.temporal, [
    'workflow',
    'delete',
    '--workflow-id',
    activationWorkflowId(ref),
    '--address',
    temporalAddress(),
    '--namespace',
    temporalNamespace(),
  ]);
  await pollUntil(async () => !(await workflowExists(ref)), 60_000, 'Temporal to forget the closed workflow');

  await s.watcher.stop();
  const watcher = watcherFor(s.ns);
  await watcher.start();
  try {
    // A later activation runs through the new watcher, which had listed the old one before.
    await activate(s, 'done-to-3', 'done', 3);
    await waitFor(s, 'VectorActivation', 'done-to-3', phaseIs('Succeeded'));
    expect(await workflowExists(ref)).toBe(false);
    const after = await s.objects.get('VectorActivation', s.ns, 'done-to-2');
    expect(after?.metadata.resourceVersion).toBe(finished.metadata.resourceVersion);
  } finally {
    await watcher.stop();
  }
});
