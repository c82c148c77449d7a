/** Cancel and retry, by annotation (kubectl) and by signal (Temporal UI/CLI). */
import { LABEL_VECTOR_ACTIVATION } from '../api/group.js';
import { pollUntil } from '../scripts/env/process.js';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { activationWorkflowId, cancelSignal, cancelUpdate, retrySignal, retryUpdate } from '../shared/activation.js';
import { kubectl } from './support/cluster.js';
import { startedExecutions, stoppedExecutions } from './support/executors.js';
import {
  VIRTUALSERVICE,
  activate,
  holdStageWorking,
  routes,
  seedPlan,
  seedRoutes,
  seedSleepyPlan,
  seedStage,
} from './support/scenario.js';
import { create, object, phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';
import { k8s } from '../k8s/client.js';

let s: TestSystem;
beforeAll(async () => {
  s = await startTestSystem('control');
});
afterAll(async () => {
  await s?.stop();
});

async function workflowOf(name: string) {
  const va = await s.objects.get('VectorActivation', s.ns, name);
  return s.client.workflow.getHandle(activationWorkflowId({ namespace: s.ns, name, uid: va!.metadata.uid! }));
}

it('cancels an InProgress activation by annotation: the executor stops, the Stage is released', async () => {
  // Cancel once the executor is at work, so that the cancellation has something to stop.
  await holdStageWorking(s, 'cancel', 60);
  await kubectl('annotate', 'va', 'cancel-to-2', '-n', s.ns, 'konfidence.cloud/cancel=please');

  const va = await waitFor(s, 'VectorActivation', 'cancel-to-2', phaseIs('Cancelled', 'Failed', 'Succeeded'));
  expect(va.status.phase).toBe('Cancelled');
  expect(va.status.message).toContain('annotation konfidence.cloud/cancel');
  const [execution] = await s.objects.list('ActivationExecution', s.ns, `${LABEL_VECTOR_ACTIVATION}=cancel-to-2`);
  expect(execution?.status).toMatchObject({ phase: 'Error', message: expect.stringContaining('cancelled') });
  await pollUntil(() => stoppedExecutions.has(execution!.metadata.name), 10_000, 'the executor to stop');

  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, 'cancel-fast', {
      steps: [{ name: 'wait', tasks: ['cancel-sleepy-fast'] }],
    }),
  );
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, 'cancel-sleepy-fast', { type: 'sleepy', spec: { seconds: 0 } }),
  );
  await activate(s, 'cancel-to-3', 'cancel', 3, { executionPlan: 'cancel-fast' });
  await waitFor(s, 'VectorActivation', 'cancel-to-3', phaseIs('Succeeded'));
});

it('cancels a waiting activation by signal: it leaves the queue, the holder finishes', async () => {
  await seedStage(s, 'queue', [1, 2, 3]);
  await seedSleepyPlan(s, 'queue', 3);
  await activate(s, 'queue-to-2', 'queue', 2, { executionPlan: 'queue-plan' });
  await waitFor(s, 'VectorActivation', 'queue-to-2', phaseIs('InProgress'));
  await activate(s, 'queue-to-3', 'queue', 3, { executionPlan: 'queue-plan' });
  await waitFor(s, 'VectorActivation', 'queue-to-3', phaseIs('Waiting'));

  await (await workflowOf('queue-to-3')).signal(cancelSignal, { reason: 'changed my mind' });
  const cancelled = await waitFor(s, 'VectorActivation', 'queue-to-3', phaseIs('Cancelled'));
  expect(cancelled.status.message).toBe('cancelled while waiting for Stage queue (changed my mind)');
  await waitFor(s, 'VectorActivation', 'queue-to-2', phaseIs('Succeeded'));
});

it('retries a Failed activation by annotation from the truth: every step again, the applied one changing nothing', async () => {
  await seedStage(s, 'retry', [1, 2]);
  await seedRoutes(s, 'retry', 1);
  await seedPlan(s, 'retry', { plan: 'retry-plan' });
  // The mesh step fails: its VirtualService is missing.
  await s.kc.makeApiClient(k8s.CustomObjectsApi).deleteNamespacedCustomObject({
    group: VIRTUALSERVICE[0],
    version: VIRTUALSERVICE[1],
    plural: VIRTUALSERVICE[2],
    namespace: s.ns,
    name: 'retry-shop',
  });
  await activate(s, 'retry-to-2', 'retry', 2, { executionPlan: 'retry-plan' });
  const failed = await waitFor(s, 'VectorActivation', 'retry-to-2', phaseIs('Failed'));
  expect(failed.status.firstError).toContain(`VirtualService ${s.ns}/retry-shop not found`);
  expect(failed.status.message).toContain('steps left applied: gateway');

  // Mend the cause, then ask for a retry with kubectl.
  await k8s.KubernetesObjectApi.makeApiClient(s.kc).create({
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: { name: 'retry-shop', namespace: s.ns },
    spec: {
      hosts: ['shop'],
      http: [
        { name: 'primary', route: [{ destination: { host: 'shop', subset: 'v1' }, weight: 100 }] },
        { name: 'legacy', route: [{ destination: { host: 'legacy-shop' } }] },
      ],
    },
  });
  await kubectl('annotate', 'va', 'retry-to-2', '-n', s.ns, 'konfidence.cloud/retry=1');
  const va = await waitFor(
    s,
    'VectorActivation',
    'retry-to-2',
    (o) => o.status?.attempt === 2 && o.status?.phase === 'Succeeded',
  );
  expect(va.status.firstError).toContain('not found'); // the first error is kept across retries
  const executions = await s.objects.list('ActivationExecution', s.ns, `${LABEL_VECTOR_ACTIVATION}=retry-to-2`);
  // Both steps ran again. The gateway step found its route as attempt 1 left it, changed nothing,
  // and kept attempt 1's record of what was there before the activation (a revert puts that back).
  expect(executions.map((e) => [e.spec.registration, e.status?.phase]).sort()).toEqual([
    ['retry-gateway', 'Succeeded'],
    ['retry-gateway', 'Succeeded'],
    ['retry-mesh', 'Error'],
    ['retry-mesh', 'Succeeded'],
  ]);
  const again = executions.find((e) => e.metadata.name === 'retry-to-2-0-retry-gateway-r2');
  // What the task did, then what verify found (this route's parents have no implementation here).
  expect(again?.status.message).toMatch(
    /^HTTPRoutes already send retry-2:100; no Gateway API implementation serves the parents of HTTPRoute /,
  );
  expect(again?.status.record.rules.map((r: { traffic: object }) => r.traffic)).toEqual([{ 'retry-1': 100 }]);
  expect(await routes(s, 'retry')).toMatchObject({
    api: ['mirror-sink:0', 'retry-shop-v2:100'],
    primary: ['shop/v2:100'],
  });
});

it('retries a Cancelled activation by signal', async () => {
  await seedStage(s, 'again', [1, 2]);
  await seedSleepyPlan(s, 'again', 30);
  await activate(s, 'again-to-2', 'again', 2, { executionPlan: 'again-plan' });
  await waitFor(s, 'VectorActivation', 'again-to-2', phaseIs('InProgress'));
  const handle = await workflowOf('again-to-2');
  await handle.signal(cancelSignal, {});
  await waitFor(s, 'VectorActivation', 'again-to-2', phaseIs('Cancelled'));

  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, 'again-sleepy', { type: 'sleepy', spec: { seconds: 0 } }),
  ).catch(() => undefined);
  await s.objects.mergeSpec('ActivationTaskRegistration', s.systemNs, 'again-sleepy', { spec: { seconds: 0 } });
  await handle.signal(retrySignal, {});
  const va = await waitFor(
    s,
    'VectorActivation',
    'again-to-2',
    (o) => o.status?.attempt === 2 && phaseIs('Succeeded')(o),
  );
  expect(va.status.reason).toBe('Activated');
});

it('marks the VectorActivation Cancelled and frees the Stage when the workflow itself is cancelled in Temporal', async () => {
  await seedStage(s, 'wfcancel', [1, 2, 3]);
  await seedSleepyPlan(s, 'wfcancel', 60);
  await activate(s, 'wfcancel-to-2', 'wfcancel', 2, { executionPlan: 'wfcancel-plan' });
  await waitFor(s, 'VectorActivation', 'wfcancel-to-2', phaseIs('InProgress'));
  await (await workflowOf('wfcancel-to-2')).cancel();
  const va = await waitFor(s, 'VectorActivation', 'wfcancel-to-2', (o) => o.status?.reason === 'WorkflowCancelled');
  expect(va.status.phase).toBe('Cancelled');
  // Its execution was stopped and reached a final state before the workflow ended.
  const [execution] = await s.objects.list('ActivationExecution', s.ns, `${LABEL_VECTOR_ACTIVATION}=wfcancel-to-2`);
  expect(execution?.status).toMatchObject({ phase: 'Error', message: expect.stringContaining('cancelled') });

  await s.objects.mergeSpec('ActivationTaskRegistration', s.systemNs, 'wfcancel-sleepy', {
    type: 'sleepy',
    spec: { seconds: 0 },
  });
  await activate(s, 'wfcancel-to-3', 'wfcancel', 3, { executionPlan: 'wfcancel-plan' });
  await waitFor(s, 'VectorActivation', 'wfcancel-to-3', phaseIs('Succeeded'));
});

it('answers cancel and retry: a refused request says why, to a Temporal caller and to kubectl', async () => {
  await seedStage(s, 'answer', [1, 2]);
  await seedSleepyPlan(s, 'answer', 30);
  await activate(s, 'answer-to-2', 'answer', 2, { executionPlan: 'answer-plan' });
  await waitFor(s, 'VectorActivation', 'answer-to-2', phaseIs('InProgress'));
  const handle = await workflowOf('answer-to-2');

  const refused = await handle.executeUpdate(retryUpdate, { args: [{ reason: 'test' }] }).catch((err: unknown) => err);
  expect(refused).toBeInstanceOf(WorkflowUpdateFailedError);
  expect(((refused as WorkflowUpdateFailedError).cause as Error).message).toBe(
    'refused: the activation is InProgress; only a Failed or Cancelled activation can be retried',
  );

  await kubectl('annotate', 'va', 'answer-to-2', '-n', s.ns, 'konfidence.cloud/retry=now');
  const answered = await waitFor(s, 'VectorActivation', 'answer-to-2', (o) =>
    o.status?.requests?.some((r: { action: string }) => r.action === 'retry'),
  );
  expect(answered.status.requests).toEqual([
    expect.objectContaining({
      action: 'retry',
      token: 'konfidence.cloud/retry=now',
      outcome: 'Refused',
      message: expect.stringContaining('refused: the activation is InProgress'),
    }),
  ]);
  expect(await kubectl('describe', 'va', 'answer-to-2', '-n', s.ns)).toContain('RetryRefused');

  expect(await handle.executeUpdate(cancelUpdate, { args: [{ reason: 'asked by a test' }] })).toMatchObject({
    outcome: 'Accepted',
  });
  const cancelled = await waitFor(s, 'VectorActivation', 'answer-to-2', phaseIs('Cancelled'));
  expect(cancelled.status.message).toContain('asked by a test');
  const late = await handle.executeUpdate(cancelUpdate, { args: [{}] }).then(
    () => 'accepted',
    (err: unknown) => ((err as WorkflowUpdateFailedError).cause as Error).message,
  );
  // A Cancelled activation can still be cancelled once more: that closes its retry window.
  expect(late).toBe('accepted');
});

it('cancels a VectorActivation deleted while InProgress and closes its workflow promptly', async () => {
  await holdStageWorking(s, 'gone', 60);
  const handle = await workflowOf('gone-to-2');
  await s.objects.delete('VectorActivation', s.ns, 'gone-to-2');
  await pollUntil(async () => (await handle.describe()).status.name === 'COMPLETED', 30_000, 'the workflow to close');
  await s.objects.mergeSpec('ActivationTaskRegistration', s.systemNs, 'gone-sleepy', {
    type: 'sleepy',
    spec: { seconds: 0 },
  });
  await activate(s, 'gone-to-3', 'gone', 3, { executionPlan: 'gone-plan' });
  await waitFor(s, 'VectorActivation', 'gone-to-3', phaseIs('Succeeded'));
});

it("never adopts a predecessor's executions or usage when a VectorActivation is re-created under the same name", async () => {
  await seedStage(s, 'again2', [1, 2]);
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, 'again2-fail', {
      type: 'failing',
      spec: { message: 'first try fails' },
    }),
  );
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, 'again2-plan', { steps: [{ name: 'only', tasks: ['again2-fail'] }] }),
  );
  await activate(s, 'again2-to-2', 'again2', 2, { executionPlan: 'again2-plan' });
  const first = await waitFor(s, 'VectorActivation', 'again2-to-2', phaseIs('Failed'));
  // Deleted, its dependents left behind (as before garbage collection gets to them), then re-created.
  await s.kc.makeApiClient(k8s.CustomObjectsApi).deleteNamespacedCustomObject({
    group: 'landscape.konfidence.cloud',
    version: 'v1alpha1',
    plural: 'vectoractivations',
    namespace: s.ns,
    name: 'again2-to-2',
    propagationPolicy: 'Orphan',
  });
  await pollUntil(async () => !(await s.objects.get('VectorActivation', s.ns, 'again2-to-2')), 10_000, 'the deletion');
  await s.objects.mergeSpec('ActivationTaskRegistration', s.systemNs, 'again2-fail', {
    type: 'sleepy',
    spec: { seconds: 0 },
  });
  await activate(s, 'again2-to-2', 'again2', 2, { executionPlan: 'again2-plan' });
  const second = await waitFor(
    s,
    'VectorActivation',
    'again2-to-2',
    (o) => o.metadata.uid !== first.metadata.uid && phaseIs('Succeeded', 'Failed')(o),
  );
  expect(second.status).toMatchObject({ phase: 'Succeeded', attempt: 1 });
  const executions = await s.objects.list('ActivationExecution', s.ns, `${LABEL_VECTOR_ACTIVATION}=again2-to-2`);
  expect(executions.map((e) => [e.metadata.ownerReferences?.[0]?.uid, e.status?.phase])).toEqual([
    [second.metadata.uid, 'Succeeded'],
  ]);
});

it("leaves a person's object under the activation usage's name alone: the activation fails saying whose it is, and no route changes", async () => {
  await seedStage(s, 'taken', [1, 2]);
  await seedSleepyPlan(s, 'taken', 0);
  const mine = await create(
    s,
    object('StageVersionUsage', s.ns, 'taken-to-2-activation', {
      reason: 'a person keeps taken-2',
      stageVersionRef: { name: 'taken-2' },
    }),
  );
  await activate(s, 'taken-to-2', 'taken', 2, { executionPlan: 'taken-plan' });
  const failed = await waitFor(s, 'VectorActivation', 'taken-to-2', phaseIs('Failed'));
  expect(failed.status).toMatchObject({
    reason: 'NameTaken',
    message: expect.stringContaining(
      `StageVersionUsage ${s.ns}/taken-to-2-activation exists and is not ours (owned by nobody)`,
    ),
  });
  expect(failed.status?.message).toContain('no route was changed');
  expect((await s.objects.get('StageVersionUsage', s.ns, 'taken-to-2-activation'))?.metadata.uid).toBe(
    mine.metadata.uid,
  );
  expect([...startedExecutions].some((n) => n.startsWith('taken-to-2-'))).toBe(false);
});
