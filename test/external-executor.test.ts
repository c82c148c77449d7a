/**
 * ADR-0012's CR protocol for executors that live outside this project: the workflow creates the
 * ActivationExecution and waits (within the registration's timeout) for an outside controller to
 * set a final status. The controller here is a small one that lives in the test.
 */
import { GROUP, VERSION } from '../api/group.js';
import { resumingWatch } from './support/watch.js';
import { LABEL_VECTOR_ACTIVATION } from '../api/group.js';
import { activate, seedStage } from './support/scenario.js';
import { create, object, phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';

let s: TestSystem;
beforeAll(async () => {
  s = await startTestSystem('external');
});
afterAll(async () => {
  await s?.stop();
});

/** Watches ActivationExecutions of `type`, marks them InProgress, then Succeeded or Error. */
async function externalController(type: string, decide: (execution: any) => { phase: 'Succeeded' | 'Error' | 'Never'; message: string }) {
  const seen = new Set<string>();
  const request = await resumingWatch(s.kc, `/apis/${GROUP}/${VERSION}/namespaces/${s.ns}/activationexecutions`, (_t, ae) => {
    if (ae.spec.type !== type || seen.has(ae.metadata.name) || ae.status?.phase !== 'Pending') return;
    seen.add(ae.metadata.name);
    void (async () => {
      await s.objects.patchStatus('ActivationExecution', s.ns, ae.metadata.name, { phase: 'InProgress', message: 'external controller at work' });
      const { phase, message } = decide(ae);
      if (phase !== 'Never') await s.objects.patchStatus('ActivationExecution', s.ns, ae.metadata.name, { phase, message });
    })();
  });
  return { stop: () => request.stop(), seen };
}

it('waits for an outside controller to finish an External execution', async () => {
  const controller = await externalController('custom-k8s-activation', (ae) => ({ phase: 'Succeeded', message: `flipped the CDN to ${ae.spec.stageVersion}` }));
  try {
    await seedStage(s, 'ext', [1, 2]);
    await create(s, object('ActivationTaskRegistration', s.systemNs, 'ext-cdn', { type: 'custom-k8s-activation', executor: 'External', timeoutSeconds: 30, spec: { cdn: 'edge' } }));
    await create(s, object('ActivationExecutionPlan', s.systemNs, 'ext-plan', { steps: [{ name: 'cdn', tasks: ['ext-cdn'] }] }));
    await activate(s, 'ext-to-2', 'ext', 2, { executionPlan: 'ext-plan' });
    const va = await waitFor(s, 'VectorActivation', 'ext-to-2', phaseIs('Succeeded', 'Failed'));
    expect(va.status.phase).toBe('Succeeded');
    expect(va.status.steps[0].tasks[0]).toMatchObject({ registration: 'ext-cdn', phase: 'Succeeded', message: 'flipped the CDN to ext-2' });
    const [ae] = await s.objects.list('ActivationExecution', s.ns, `${LABEL_VECTOR_ACTIVATION}=ext-to-2`);
    expect(ae?.spec).toMatchObject({ type: 'custom-k8s-activation', stageVersion: 'ext-2', spec: { cdn: 'edge' } });
  } finally {
    controller.stop();
  }
});

it('ends an External execution that gets no final status within the timeout in Error', async () => {
  const controller = await externalController('stuck-activation', () => ({ phase: 'Never', message: '' }));
  try {
    await seedStage(s, 'stuck', [1, 2]);
    await create(s, object('ActivationTaskRegistration', s.systemNs, 'stuck-task', { type: 'stuck-activation', executor: 'External', timeoutSeconds: 2 }));
    await create(s, object('ActivationExecutionPlan', s.systemNs, 'stuck-plan', { steps: [{ name: 'cdn', tasks: ['stuck-task'] }] }));
    await activate(s, 'stuck-to-2', 'stuck', 2, { executionPlan: 'stuck-plan' });
    const va = await waitFor(s, 'VectorActivation', 'stuck-to-2', phaseIs('Failed'), 30_000);
    expect(va.status.firstError).toContain('timed out after 2s');
    const [ae] = await s.objects.list('ActivationExecution', s.ns, `${LABEL_VECTOR_ACTIVATION}=stuck-to-2`);
    // The core gave up on it, in a way the outside controller can see: Error, reason TimedOut.
    expect(ae?.status).toMatchObject({ phase: 'Error', reason: 'TimedOut', message: expect.stringContaining('timed out after 2s') });
    expect(ae?.status.conditions).toEqual([expect.objectContaining({ type: 'Complete', status: 'True', reason: 'TimedOut' })]);
    expect(controller.seen.size).toBe(1);

    // A late final status from the outside cannot change what happened: the apiserver refuses it.
    await expect(s.objects.patchStatus('ActivationExecution', s.ns, ae!.metadata.name, { phase: 'Succeeded', message: 'done at last' })).rejects.toMatchObject({
      code: 422,
      body: expect.stringContaining('status.phase is final'),
    });
    const after = await s.objects.get('VectorActivation', s.ns, 'stuck-to-2');
    expect(after?.status).toMatchObject({ phase: 'Failed', firstError: va.status.firstError });
  } finally {
    controller.stop();
  }
});
