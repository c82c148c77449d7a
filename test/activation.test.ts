/** ADR-0012 end to end on the real servers: watcher → workflow → executors → routes, usages, status. */
import { LABEL_REGISTRATION, LABEL_VECTOR_ACTIVATION } from '../api/group.js';
import { k8s } from '../k8s/client.js';
import { activate, routes, seedPlan, seedRoutes, seedStage } from './support/scenario.js';
import { pollUntil } from '../scripts/env/process.js';
import { stoppedExecutions } from './support/executors.js';
import { create, object, phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';

let s: TestSystem;
beforeAll(async () => {
  s = await startTestSystem('activation');
});
afterAll(async () => {
  await s?.stop();
});

describe('activation', () => {
  it('runs a two-step plan (Gateway API, then Istio) and moves the active usage', async () => {
    await seedStage(s, 'dev', [1, 2]);
    await seedRoutes(s, 'dev', 1);
    await seedPlan(s, 'dev');

    await activate(s, 'dev-to-2', 'dev', 2);
    const va = await waitFor(s, 'VectorActivation', 'dev-to-2', phaseIs('Succeeded', 'Failed', 'Skipped'));
    expect(va.status).toMatchObject({
      phase: 'Succeeded',
      reason: 'Activated',
      attempt: 1,
      steps: [
        { name: 'gateway', phase: 'Succeeded', tasks: [{ registration: 'dev-gateway', phase: 'Succeeded' }] },
        { name: 'mesh', phase: 'Succeeded', tasks: [{ registration: 'dev-mesh', phase: 'Succeeded' }] },
      ],
    });
    expect(va.status.workflowId).toBe(`vectoractivation/${s.ns}/dev-to-2/${va.metadata.uid}`);
    expect(va.status.conditions).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ type: 'Succeeded', status: 'True', reason: 'Activated', observedGeneration: 1 }),
        expect.objectContaining({ type: 'Progressing', status: 'False' }),
      ]),
    );

    // Traffic moved; every rule, route and backend the plan does not manage is as it was.
    expect(await routes(s, 'dev')).toEqual({
      api: ['mirror-sink:0', 'dev-shop-v2:100'],
      static: ['static-files'],
      primary: ['shop/v2:100'],
      legacy: ['legacy-shop'],
    });

    const active = await s.objects.get('StageVersionUsage', s.ns, 'dev-active');
    expect(active?.spec.stageVersionRef).toEqual({ name: 'dev-2' });
    expect(active?.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Stage', name: 'dev' });
    expect(await s.objects.get('StageVersionUsage', s.ns, 'dev-to-2-activation')).toBeUndefined();

    const executions = await s.objects.list('ActivationExecution', s.ns, `${LABEL_VECTOR_ACTIVATION}=dev-to-2`);
    expect(
      executions.map((e) => [e.metadata.labels?.[LABEL_REGISTRATION], e.spec.action, e.status?.phase]).sort(),
    ).toEqual([
      ['dev-gateway', 'Apply', 'Succeeded'],
      ['dev-mesh', 'Apply', 'Succeeded'],
    ]);
    for (const e of executions)
      expect(e.metadata.ownerReferences?.[0]).toMatchObject({
        kind: 'VectorActivation',
        name: 'dev-to-2',
        uid: va.metadata.uid,
      });

    const lease = await s.kc
      .makeApiClient(k8s.CoordinationV1Api)
      .readNamespacedLease({ name: 'konfidence-stage-dev', namespace: s.ns });
    expect(lease.spec?.holderIdentity).toBeUndefined();
  });
});

describe('activation failures', () => {
  it('fails on a plan naming a missing registration, touching no route', async () => {
    await seedStage(s, 'badplan', [1, 2]);
    await seedRoutes(s, 'badplan', 1);
    await create(
      s,
      object('ActivationExecutionPlan', s.systemNs, 'badplan-plan', {
        steps: [{ name: 'only', tasks: ['no-such-registration'] }],
      }),
    );
    await activate(s, 'badplan-to-2', 'badplan', 2, { executionPlan: 'badplan-plan' });
    const va = await waitFor(s, 'VectorActivation', 'badplan-to-2', phaseIs('Failed'));
    expect(va.status.reason).toBe('InvalidPlan');
    expect(va.status.message).toContain(`ActivationTaskRegistration ${s.systemNs}/no-such-registration does not exist`);
    expect((await routes(s, 'badplan')).api).toEqual(['mirror-sink:0', 'badplan-shop-v1:100']);
    expect(await s.objects.list('ActivationExecution', s.ns, `${LABEL_VECTOR_ACTIVATION}=badplan-to-2`)).toEqual([]);
  });

  it('fails on a registration with an invalid executor spec, touching no route', async () => {
    await seedStage(s, 'badspec', [1, 2]);
    await seedRoutes(s, 'badspec', 1);
    await create(
      s,
      object('ActivationTaskRegistration', s.systemNs, 'badspec-gateway', {
        type: 'gateway-api',
        spec: { routes: [] },
      }),
    );
    await create(
      s,
      object('ActivationExecutionPlan', s.systemNs, 'badspec-plan', {
        steps: [{ name: 'only', tasks: ['badspec-gateway'] }],
      }),
    );
    await activate(s, 'badspec-to-2', 'badspec', 2, { executionPlan: 'badspec-plan' });
    const va = await waitFor(s, 'VectorActivation', 'badspec-to-2', phaseIs('Failed'));
    expect(va.status.reason).toBe('InvalidExecutorSpec');
    expect(va.status.message).toContain('(type gateway-api) has an invalid spec: spec.routes:');
    expect((await routes(s, 'badspec')).api).toEqual(['mirror-sink:0', 'badspec-shop-v1:100']);
  });

  it('ends a task past its timeout in Error, stops the executor, fails the activation and lets the next one proceed', async () => {
    await seedStage(s, 'slow', [1, 2, 3]);
    await seedRoutes(s, 'slow', 1);
    await create(
      s,
      object('ActivationTaskRegistration', s.systemNs, 'slow-sleepy', {
        type: 'sleepy',
        timeoutSeconds: 2,
        heartbeatTimeoutSeconds: 1,
        spec: { seconds: 60 },
      }),
    );
    await create(
      s,
      object('ActivationExecutionPlan', s.systemNs, 'slow-plan', { steps: [{ name: 'wait', tasks: ['slow-sleepy'] }] }),
    );
    await activate(s, 'slow-to-2', 'slow', 2, { executionPlan: 'slow-plan' });
    const va = await waitFor(s, 'VectorActivation', 'slow-to-2', phaseIs('Failed'), 30_000);
    expect(va.status.reason).toBe('TaskFailed');
    expect(va.status.firstError).toContain('timed out after 2s');
    const [execution] = await s.objects.list('ActivationExecution', s.ns, `${LABEL_VECTOR_ACTIVATION}=slow-to-2`);
    expect(execution?.status).toMatchObject({ phase: 'Error' });
    expect(execution?.status.message).toContain('timed out after 2s');
    await pollUntil(
      () => stoppedExecutions.has(execution!.metadata.name),
      10_000,
      'the sleepy executor to see its cancellation',
    );
    // The active usage was never touched, and the Stage is free for the next activation.
    expect(await s.objects.get('StageVersionUsage', s.ns, 'slow-active')).toBeUndefined();
    await seedPlan(s, 'slow', { plan: 'slow-routes' });
    await activate(s, 'slow-to-3', 'slow', 3, { executionPlan: 'slow-routes' });
    await waitFor(s, 'VectorActivation', 'slow-to-3', phaseIs('Succeeded'));
    expect((await routes(s, 'slow')).api).toEqual(['mirror-sink:0', 'slow-shop-v3:100']);
  });

  it('reverts the succeeded steps in reverse order when a later step fails and the plan says Revert', async () => {
    await seedStage(s, 'rev', [1, 2, 3]);
    await seedRoutes(s, 'rev', 1);
    await seedPlan(s, 'rev', { plan: 'rev-plan' });
    await activate(s, 'rev-to-2', 'rev', 2, { executionPlan: 'rev-plan' });
    await waitFor(s, 'VectorActivation', 'rev-to-2', phaseIs('Succeeded'));

    await create(
      s,
      object('ActivationTaskRegistration', s.systemNs, 'rev-failing', {
        type: 'failing',
        spec: { message: 'mesh refused' },
      }),
    );
    await create(
      s,
      object('ActivationExecutionPlan', s.systemNs, 'rev-revert', {
        onFailure: 'Revert',
        steps: [
          { name: 'routes', tasks: ['rev-gateway', 'rev-mesh'] },
          { name: 'check', tasks: ['rev-failing'] },
        ],
      }),
    );
    await activate(s, 'rev-to-3', 'rev', 3, { executionPlan: 'rev-revert' });
    const va = await waitFor(s, 'VectorActivation', 'rev-to-3', phaseIs('Failed'));
    expect(va.status.message).toContain('mesh refused');
    expect(va.status.message).toContain('every task that ran was reverted');
    expect(va.status.steps.map((x: { phase: string }) => x.phase)).toEqual(['Reverted', 'Failed']);
    // Traffic is back on the active StageVersion, which kept its usage.
    expect(await routes(s, 'rev')).toEqual({
      api: ['mirror-sink:0', 'rev-shop-v2:100'],
      static: ['static-files'],
      primary: ['shop/v2:100'],
      legacy: ['legacy-shop'],
    });
    expect((await s.objects.get('StageVersionUsage', s.ns, 'rev-active'))?.spec.stageVersionRef.name).toBe('rev-2');
    const reverts = (await s.objects.list('ActivationExecution', s.ns, `${LABEL_VECTOR_ACTIVATION}=rev-to-3`)).filter(
      (e) => e.spec.action === 'Revert',
    );
    expect(reverts.map((e) => [e.spec.registration, e.status?.phase]).sort()).toEqual([
      ['rev-gateway', 'Succeeded'],
      ['rev-mesh', 'Succeeded'],
    ]);
  });

  it('runs activations of two Stages at the same time', async () => {
    await seedStage(s, 'par-a', [1, 2]);
    await seedStage(s, 'par-b', [1, 2]);
    for (const st of ['par-a', 'par-b']) {
      await create(
        s,
        object('ActivationTaskRegistration', s.systemNs, `${st}-sleepy`, {
          type: 'sleepy',
          timeoutSeconds: 30,
          spec: { seconds: 2 },
        }),
      );
      await create(
        s,
        object('ActivationExecutionPlan', s.systemNs, `${st}-plan`, {
          steps: [{ name: 'wait', tasks: [`${st}-sleepy`] }],
        }),
      );
    }
    await activate(s, 'par-a-to-2', 'par-a', 2, { executionPlan: 'par-a-plan' });
    await activate(s, 'par-b-to-2', 'par-b', 2, { executionPlan: 'par-b-plan' });
    // Both are InProgress at one moment: neither waits for the other's Stage.
    await pollUntil(
      async () => {
        const [a, b] = await Promise.all(
          ['par-a-to-2', 'par-b-to-2'].map((n) => s.objects.get('VectorActivation', s.ns, n)),
        );
        return a?.status?.phase === 'InProgress' && b?.status?.phase === 'InProgress';
      },
      20_000,
      'both activations InProgress together',
      50,
    );
    await waitFor(s, 'VectorActivation', 'par-a-to-2', phaseIs('Succeeded'));
    await waitFor(s, 'VectorActivation', 'par-b-to-2', phaseIs('Succeeded'));
  });
});
