/** ADR-0012 end to end on the real servers: watcher → workflow → executors → routes, usages, status. */
import { LABEL_REGISTRATION, LABEL_VECTOR_ACTIVATION } from '../api/group.js';
import { k8s } from '../k8s/client.js';
import { activate, routes, seedPlan, seedRoutes, seedStage } from './support/scenario.js';
import { phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';

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
    expect(executions.map((e) => [e.metadata.labels?.[LABEL_REGISTRATION], e.spec.action, e.status?.phase]).sort()).toEqual([
      ['dev-gateway', 'Apply', 'Succeeded'],
      ['dev-mesh', 'Apply', 'Succeeded'],
    ]);
    for (const e of executions) expect(e.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'VectorActivation', name: 'dev-to-2', uid: va.metadata.uid });

    const lease = await s.kc.makeApiClient(k8s.CoordinationV1Api).readNamespacedLease({ name: 'konfidence-stage-dev', namespace: s.ns });
    expect(lease.spec?.holderIdentity).toBeUndefined();
  });
});
