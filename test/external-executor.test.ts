/**
 * ADR-0012's CR protocol for executors that live outside this project: the workflow creates the
 * ActivationExecution and waits (within the registration's timeout) for an outside controller to
 * set a final status. The controller here is a small one that lives in the test. What an External
 * executor's rules hold is what its executions report: the Stage controller protects and lets go
 * of StageVersions by it.
 */
import { GROUP, VERSION } from '../api/group.js';
import { resumingWatch } from './support/watch.js';
import { LABEL_VECTOR_ACTIVATION } from '../api/group.js';
import { activate, seedStage } from './support/scenario.js';
import { create, object, phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';
import { pollUntil } from '../scripts/env/process.js';

let s: TestSystem;
beforeAll(async () => {
  s = await startTestSystem('external');
});
afterAll(async () => {
  await s?.stop();
});

/** Watches ActivationExecutions of `type`, marks them InProgress, then Succeeded or Error (with a record, if `decide` gives one). */
async function externalController(
  type: string,
  decide: (execution: any) => { phase: 'Succeeded' | 'Error' | 'Never'; message: string; record?: unknown },
) {
  const seen = new Set<string>();
  const request = await resumingWatch(
    s.kc,
    `/apis/${GROUP}/${VERSION}/namespaces/${s.ns}/activationexecutions`,
    (_t, ae) => {
      if (ae.spec.type !== type || seen.has(ae.metadata.name) || ae.status?.phase !== 'Pending') return;
      seen.add(ae.metadata.name);
      void (async () => {
        await s.objects.patchStatus('ActivationExecution', s.ns, ae.metadata.name, {
          phase: 'InProgress',
          message: 'external controller at work',
        });
        const { phase, message, record } = decide(ae);
        if (record)
          await s.objects.patchStatus('ActivationExecution', s.ns, ae.metadata.name, {
            record: { rules: record, time: new Date().toISOString().replace(/\.\d+Z$/, 'Z') },
          });
        if (phase !== 'Never')
          await s.objects.patchStatus('ActivationExecution', s.ns, ae.metadata.name, { phase, message });
      })();
    },
  );
  return { stop: () => request.stop(), seen };
}

it('waits for an outside controller to finish an External execution', async () => {
  const controller = await externalController('custom-k8s-activation', (ae) => ({
    phase: 'Succeeded',
    message: `flipped the CDN to ${ae.spec.stageVersion}`,
  }));
  try {
    await seedStage(s, 'ext', [1, 2]);
    await create(
      s,
      object('ActivationTaskRegistration', s.systemNs, 'ext-cdn', {
        type: 'custom-k8s-activation',
        executor: 'External',
        timeoutSeconds: 30,
        spec: { cdn: 'edge' },
      }),
    );
    await create(
      s,
      object('ActivationExecutionPlan', s.systemNs, 'ext-plan', { steps: [{ name: 'cdn', tasks: ['ext-cdn'] }] }),
    );
    await activate(s, 'ext-to-2', 'ext', 2, { executionPlan: 'ext-plan' });
    const va = await waitFor(s, 'VectorActivation', 'ext-to-2', phaseIs('Succeeded', 'Failed'));
    expect(va.status.phase).toBe('Succeeded');
    expect(va.status.steps[0].tasks[0]).toMatchObject({
      registration: 'ext-cdn',
      phase: 'Succeeded',
      message: 'flipped the CDN to ext-2',
    });
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
    await create(
      s,
      object('ActivationTaskRegistration', s.systemNs, 'stuck-task', {
        type: 'stuck-activation',
        executor: 'External',
        timeoutSeconds: 2,
      }),
    );
    await create(
      s,
      object('ActivationExecutionPlan', s.systemNs, 'stuck-plan', { steps: [{ name: 'cdn', tasks: ['stuck-task'] }] }),
    );
    await activate(s, 'stuck-to-2', 'stuck', 2, { executionPlan: 'stuck-plan' });
    const va = await waitFor(s, 'VectorActivation', 'stuck-to-2', phaseIs('Failed'), 30_000);
    expect(va.status.firstError).toContain('timed out after 2s');
    const [ae] = await s.objects.list('ActivationExecution', s.ns, `${LABEL_VECTOR_ACTIVATION}=stuck-to-2`);
    // The core gave up on it, in a way the outside controller can see: Error, reason TimedOut.
    expect(ae?.status).toMatchObject({
      phase: 'Error',
      reason: 'TimedOut',
      message: expect.stringContaining('timed out after 2s'),
    });
    expect(ae?.status.conditions).toEqual([
      expect.objectContaining({ type: 'Complete', status: 'True', reason: 'TimedOut' }),
    ]);
    expect(controller.seen.size).toBe(1);

    // A late final status from the outside cannot change what happened: the apiserver refuses it.
    await expect(
      s.objects.patchStatus('ActivationExecution', s.ns, ae!.metadata.name, {
        phase: 'Succeeded',
        message: 'done at last',
      }),
    ).rejects.toMatchObject({
      code: 422,
      body: expect.stringContaining('status.phase is final'),
    });
    const after = await s.objects.get('VectorActivation', s.ns, 'stuck-to-2');
    expect(after?.status).toMatchObject({ phase: 'Failed', firstError: va.status.firstError });
  } finally {
    controller.stop();
  }
});

it("protects what an External executor's executions report serving, and lets go once they report it gets nothing", async () => {
  // The outside controller's one rule (an edge of a CDN): what it found, then the assignment it set.
  let edge: Record<string, number> = { 'cdn-1': 100 };
  const controller = await externalController('cdn-activation', (ae) => {
    const record = [
      {
        route: { group: 'cdn.example', kind: 'Edge', namespace: s.ns, name: 'edge' },
        index: 0,
        entries: [],
        traffic: edge,
      },
    ];
    edge = ae.spec.assignment;
    return { phase: 'Succeeded', message: `edge now ${JSON.stringify(edge)}`, record };
  });
  try {
    // No drain: what is let go goes at the next pass (the drain is test/stage-lifecycle's and test/data-plane's).
    // The history limit drops to 0 once cdn-2 is activated: before its activation exists, nothing
    // holds cdn-2, and a pass in between would rightly clean it up.
    await seedStage(s, 'cdn', [1, 2, 3], { drainSeconds: 0 });
    await create(
      s,
      object('StageVersionUsage', s.ns, 'cdn-active', {
        reason: 'serves the traffic of Stage cdn',
        stageVersionRef: { name: 'cdn-1' },
      }),
    );
    await create(
      s,
      object('ActivationTaskRegistration', s.systemNs, 'cdn-edge', {
        type: 'cdn-activation',
        executor: 'External',
        timeoutSeconds: 30,
        spec: { weight: 10 },
      }),
    );
    await create(
      s,
      object('ActivationExecutionPlan', s.systemNs, 'cdn-plan', { steps: [{ name: 'edge', tasks: ['cdn-edge'] }] }),
    );
    await activate(s, 'cdn-to-2', 'cdn', 2, { executionPlan: 'cdn-plan' });
    await waitFor(s, 'VectorActivation', 'cdn-to-2', phaseIs('Succeeded'));
    // 10 % to cdn-2, 90 % left on cdn-1: both serve, as the execution reports.
    s.stageController!.enqueue(s.ns);
    const st = await waitFor(
      s,
      'Stage',
      'cdn',
      (o) => JSON.stringify(o.status?.servingStageVersions) === JSON.stringify(['cdn-2', 'cdn-1']),
      30_000,
    );
    expect(st.status.traffic).toEqual([
      expect.objectContaining({
        route: expect.objectContaining({ kind: 'Edge', name: 'edge' }),
        weights: { 'cdn-2': 10, 'cdn-1': 90 },
      }),
    ]);
    expect((await s.objects.get('StageVersion', s.ns, 'cdn-1'))?.metadata.deletionTimestamp).toBeUndefined();

    // All of it to cdn-3: neither cdn-1 nor cdn-2 gets anything, by the report, and the history limit takes them.
    await s.objects.mergeSpec('Stage', s.ns, 'cdn', { stageVersionHistoryLimit: 0 });
    await s.objects.mergeSpec('ActivationTaskRegistration', s.systemNs, 'cdn-edge', {
      type: 'cdn-activation',
      executor: 'External',
      timeoutSeconds: 30,
      spec: { weight: 100 },
    });
    await activate(s, 'cdn-to-3', 'cdn', 3, { executionPlan: 'cdn-plan' });
    await waitFor(s, 'VectorActivation', 'cdn-to-3', phaseIs('Succeeded'));
    await pollUntil(
      async () => {
        s.stageController!.enqueue(s.ns);
        const gone = await Promise.all(
          ['cdn-1', 'cdn-2'].map(
            async (n) =>
              (await s.objects.get('StageVersion', s.ns, n))?.metadata.deletionTimestamp !== undefined ||
              !(await s.objects.get('StageVersion', s.ns, n)),
          ),
        );
        return gone.every(Boolean);
      },
      30_000,
      'cdn-1 and cdn-2 to be cleaned up',
      250,
    );
    expect((await s.objects.get('Stage', s.ns, 'cdn'))?.status.servingStageVersions).toEqual(['cdn-3']);
  } finally {
    controller.stop();
  }
});
