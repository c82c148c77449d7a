/**
 * The routes are the truth, on the real servers: a weighted activation that fails under Revert puts
 * the routes back exactly as they were, and a task refused halfway (one route written, the next
 * refused by the apiserver) is put back too, or named as partly applied under Stop; both executors,
 * weights 10 and 50. Each task's record of what it found is on its ActivationExecution. A retry
 * after another activation runs every step again, beside what is active now.
 */
import { k8s } from '../k8s/client.js';
import { LABEL_VECTOR_ACTIVATION } from '../api/group.js';
import { pollUntil } from '../scripts/env/process.js';
import {
  HTTPROUTE,
  VIRTUALSERVICE,
  activate,
  routes,
  seedActive,
  seedRoutes,
  seedStage,
  seedStageVersion,
} from './support/scenario.js';
import { kubectl } from './support/cluster.js';
import {
  create,
  createOther,
  object,
  phaseIs,
  readOther,
  startTestSystem,
  waitFor,
  type TestSystem,
} from './support/system.js';

let s: TestSystem;
const LOCKED = 'test.konfidence.cloud/locked';
beforeAll(async () => {
  s = await startTestSystem('traffic');
  await lockRoutes();
});
afterAll(async () => {
  const admission = s?.kc.makeApiClient(k8s.AdmissionregistrationV1Api);
  await admission?.deleteValidatingAdmissionPolicyBinding({ name: `locked-routes-${s.ns}` }).catch(() => undefined);
  await admission?.deleteValidatingAdmissionPolicy({ name: `locked-routes-${s.ns}` }).catch(() => undefined);
  await s?.stop();
});

/** Both executors' specs for the Stage's routes, at a weight. */
const registrations = (stage: string, weight: number) => ({
  'gateway-api': { routes: [{ name: `${stage}-shop`, namespace: s.ns, rules: [0] }], weight },
  istio: { virtualServices: [{ name: `${stage}-shop`, namespace: s.ns, routes: ['primary'] }], host: 'shop', weight },
});

/** Everything the routes of a Stage hold: whole specs, so that a restore must be exact. */
async function specs(stage: string, extra: string[] = []) {
  const names = [`${stage}-shop`, ...extra];
  return Promise.all([
    ...names.map(async (n) => (await readOther(s.kc, ...HTTPROUTE, s.ns, n)).spec),
    ...names.map(async (n) => (await readOther(s.kc, ...VIRTUALSERVICE, s.ns, n)).spec),
  ]);
}

/**
 * A ValidatingAdmissionPolicy refuses every update of a route labelled `locked` in the test
 * namespace: the apiserver's own refusal of one route among several, as RBAC or a policy gives it.
 */
async function lockRoutes(): Promise<void> {
  const admission = s.kc.makeApiClient(k8s.AdmissionregistrationV1Api);
  const name = `locked-routes-${s.ns}`;
  await admission.createValidatingAdmissionPolicy({
    body: {
      metadata: { name },
      spec: {
        failurePolicy: 'Fail',
        matchConstraints: {
          resourceRules: [
            {
              apiGroups: ['gateway.networking.k8s.io'],
              apiVersions: ['*'],
              operations: ['UPDATE'],
              resources: ['httproutes'],
            },
            {
              apiGroups: ['networking.istio.io'],
              apiVersions: ['*'],
              operations: ['UPDATE'],
              resources: ['virtualservices'],
            },
          ],
        },
        validations: [
          {
            expression: `!has(object.metadata.labels) || !('${LOCKED}' in object.metadata.labels)`,
            message: 'this route is locked',
          },
        ],
      },
    },
  });
  await admission.createValidatingAdmissionPolicyBinding({
    body: {
      metadata: { name },
      spec: {
        policyName: name,
        validationActions: ['Deny'],
        matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': s.ns } } },
      },
    },
  });
  // The apiserver applies a new policy a moment later: wait until a locked route is refused.
  await createOther(s.kc, ...HTTPROUTE, s.ns, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'lock-probe', namespace: s.ns, labels: { [LOCKED]: 'true' } },
    spec: { parentRefs: [{ name: 'gateway' }], rules: [{ backendRefs: [{ name: 'probe', port: 80 }] }] },
  });
  const api = s.kc.makeApiClient(k8s.CustomObjectsApi);
  const [group, version, plural] = HTTPROUTE;
  await pollUntil(
    async () => {
      try {
        const probe: any = await api.getNamespacedCustomObject({
          group,
          version,
          plural,
          namespace: s.ns,
          name: 'lock-probe',
        });
        probe.spec.hostnames = [`h${Date.now()}.example`];
        await api.replaceNamespacedCustomObject({
          group,
          version,
          plural,
          namespace: s.ns,
          name: 'lock-probe',
          body: probe,
        });
        return false;
      } catch (err) {
        return (err as { code?: number }).code === 422 || (err as { code?: number }).code === 403;
      }
    },
    30_000,
    'the route lock to take effect',
    200,
  );
}

/** A second pair of routes for the Stage, sending to revision r, that the apiserver refuses to change. */
async function seedLockedRoutes(stage: string, r: number): Promise<void> {
  const labels = { [LOCKED]: 'true' };
  await createOther(s.kc, ...HTTPROUTE, s.ns, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: `${stage}-locked`, namespace: s.ns, labels },
    spec: {
      parentRefs: [{ name: 'gateway' }],
      rules: [{ backendRefs: [{ name: `${stage}-shop-v${r}`, port: 8080, weight: 100 }] }],
    },
  });
  await createOther(s.kc, ...VIRTUALSERVICE, s.ns, {
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: { name: `${stage}-locked`, namespace: s.ns, labels },
    spec: {
      hosts: ['shop'],
      http: [{ name: 'primary', route: [{ destination: { host: 'shop', subset: `v${r}` }, weight: 100 }] }],
    },
  });
}

const executions = async (va: string) =>
  s.objects.list('ActivationExecution', s.ns, `${LABEL_VECTOR_ACTIVATION}=${va}`);

describe.each([10, 50])('at weight %i', (weight) => {
  it.each(['gateway-api', 'istio'] as const)(
    '%s: a later step fails under Revert, and the routes are exactly as before',
    async (type) => {
      const stage = `rev-${type === 'istio' ? 'is' : 'gw'}-${weight}`;
      await seedStage(s, stage, [1, 2]);
      await seedRoutes(s, stage, 1);
      await seedActive(s, stage, 1);
      await create(
        s,
        object('ActivationTaskRegistration', s.systemNs, `${stage}-routes`, {
          type,
          timeoutSeconds: 30,
          spec: registrations(stage, weight)[type],
        }),
      );
      await create(
        s,
        object('ActivationTaskRegistration', s.systemNs, `${stage}-check`, {
          type: 'failing',
          spec: { message: 'the new version answers 500' },
        }),
      );
      await create(
        s,
        object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, {
          onFailure: 'Revert',
          steps: [
            { name: 'routes', tasks: [`${stage}-routes`] },
            { name: 'check', tasks: [`${stage}-check`] },
          ],
        }),
      );
      const before = await specs(stage);

      await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });
      const va = await waitFor(s, 'VectorActivation', `${stage}-to-2`, phaseIs('Failed', 'Succeeded'));
      expect(va.status.message).toBe(
        'step check, task ' +
          `${stage}-check: the new version answers 500; every task that ran was reverted: its routes are back as it found them`,
      );
      expect(va.status.steps.map((x: { phase: string }) => x.phase)).toEqual(['Reverted', 'Failed']);
      // Not 100 − weight % left on the failed version: the routes hold exactly what they held.
      expect(await specs(stage)).toEqual(before);
      const apply = (await executions(`${stage}-to-2`)).find(
        (e) => e.spec.registration === `${stage}-routes` && e.spec.action === 'Apply',
      );
      expect(apply?.spec.assignment).toEqual({ [`${stage}-2`]: weight, [`${stage}-1`]: 100 - weight });
      expect(apply?.status.record.rules).toEqual([
        expect.objectContaining({
          route: expect.objectContaining({ name: `${stage}-shop` }),
          traffic: { [`${stage}-1`]: 100 },
        }),
      ]);
    },
  );

  it.each(['gateway-api', 'istio'] as const)(
    '%s: a task refused on its second route puts its first route back, or says it may be partly applied',
    async (type) => {
      for (const onFailure of ['Revert', 'Stop'] as const) {
        const stage = `half-${type === 'istio' ? 'is' : 'gw'}-${weight}-${onFailure.toLowerCase()}`;
        await seedStage(s, stage, [1, 2]);
        await seedRoutes(s, stage, 1);
        await seedLockedRoutes(stage, 1);
        await seedActive(s, stage, 1);
        const spec =
          type === 'gateway-api'
            ? {
                routes: [
                  { name: `${stage}-shop`, namespace: s.ns, rules: [0] },
                  { name: `${stage}-locked`, namespace: s.ns },
                ],
                weight,
              }
            : {
                virtualServices: [
                  { name: `${stage}-shop`, namespace: s.ns, routes: ['primary'] },
                  { name: `${stage}-locked`, namespace: s.ns },
                ],
                host: 'shop',
                weight,
              };
        await create(
          s,
          object('ActivationTaskRegistration', s.systemNs, `${stage}-routes`, { type, timeoutSeconds: 30, spec }),
        );
        await create(
          s,
          object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, {
            onFailure,
            steps: [{ name: 'routes', tasks: [`${stage}-routes`] }],
          }),
        );
        const before = await specs(stage, [`${stage}-locked`]);

        await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });
        const va = await waitFor(s, 'VectorActivation', `${stage}-to-2`, phaseIs('Failed', 'Succeeded'));
        expect(va.status.phase).toBe('Failed');
        expect(va.status.firstError).toContain('this route is locked');
        const after = await specs(stage, [`${stage}-locked`]);
        if (onFailure === 'Revert') {
          expect(va.status.message).toMatch(/every task that ran was reverted: its routes are back as it found them$/);
          expect(after).toEqual(before);
        } else {
          // The first route was written before the second was refused, and the status says so.
          expect(va.status.message).toMatch(/no step was applied; maybe partly applied: routes$/);
          // specs(): HTTPRoutes shop, locked, then VirtualServices shop, locked.
          const written = type === 'gateway-api' ? 0 : 2;
          expect(after.map((routeSpec, i) => (i === written ? 'changed' : routeSpec))).toEqual(
            before.map((routeSpec, i) => (i === written ? 'changed' : routeSpec)),
          );
          expect(after[written]).not.toEqual(before[written]);
        }
      }
    },
  );
});

describe.each([10, 50])('a retry at weight %i', (weight) => {
  it('runs every step again from what is active now, after another activation succeeded in between', async () => {
    const stage = `retry-${weight}`;
    await seedStage(s, stage, [1, 2, 3]);
    await seedRoutes(s, stage, 1);
    await seedActive(s, stage, 1);
    const specOf = registrations(stage, weight);
    await create(
      s,
      object('ActivationTaskRegistration', s.systemNs, `${stage}-gateway`, {
        type: 'gateway-api',
        timeoutSeconds: 30,
        spec: specOf['gateway-api'],
      }),
    );
    await create(
      s,
      object('ActivationTaskRegistration', s.systemNs, `${stage}-mesh`, {
        type: 'istio',
        timeoutSeconds: 30,
        spec: specOf.istio,
      }),
    );
    await create(
      s,
      object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, {
        steps: [
          { name: 'gateway', tasks: [`${stage}-gateway`] },
          { name: 'mesh', tasks: [`${stage}-mesh`] },
        ],
      }),
    );
    // A (revision 3) fails in its second step: its VirtualService is missing.
    const vs = await readOther(s.kc, ...VIRTUALSERVICE, s.ns, `${stage}-shop`);
    const [group, version, plural] = VIRTUALSERVICE;
    const api = s.kc.makeApiClient(k8s.CustomObjectsApi);
    await api.deleteNamespacedCustomObject({ group, version, plural, namespace: s.ns, name: `${stage}-shop` });
    await activate(s, `${stage}-a`, stage, 3, { executionPlan: `${stage}-plan` });
    await waitFor(s, 'VectorActivation', `${stage}-a`, phaseIs('Failed'));

    // B (revision 2) succeeds meanwhile, over A's first step.
    await createOther(s.kc, ...VIRTUALSERVICE, s.ns, {
      apiVersion: vs.apiVersion,
      kind: vs.kind,
      metadata: { name: vs.metadata.name, namespace: s.ns },
      spec: vs.spec,
    });
    await activate(s, `${stage}-b`, stage, 2, { executionPlan: `${stage}-plan` });
    await waitFor(s, 'VectorActivation', `${stage}-b`, phaseIs('Succeeded'));

    // A is retried: both of its steps run, beside what is active now (B's version).
    await kubectl('annotate', 'va', `${stage}-a`, '-n', s.ns, 'konfidence.cloud/retry=1');
    const a = await waitFor(
      s,
      'VectorActivation',
      `${stage}-a`,
      (o) => o.status?.attempt === 2 && ['Succeeded', 'Failed'].includes(o.status?.phase),
    );
    expect(a.status.phase).toBe('Succeeded');
    expect(await routes(s, stage)).toEqual({
      api: ['mirror-sink:0', `${stage}-shop-v3:${weight}`, `${stage}-shop-v2:${100 - weight}`],
      static: ['static-files'],
      primary: [`shop/v3:${weight}`, `shop/v2:${100 - weight}`],
      legacy: ['legacy-shop'],
    });
    expect((await s.objects.get('StageVersionUsage', s.ns, `${stage}-active`))?.spec.stageVersionRef.name).toBe(
      `${stage}-3`,
    );
  });
});

describe.each([10, 50])('a weighted success at %i', (weight) => {
  it.each(['gateway-api', 'istio'] as const)(
    '%s: the previous version serves on, keeps its mark and is not deleted; once a person moves its share away, it goes',
    async (type) => {
      const stage = `kept-${type === 'istio' ? 'is' : 'gw'}-${weight}`;
      // What holds the old version (the active usage, the routes) comes before the Stage, whose
      // history limit 0 would otherwise clean it up in a pass between the two.
      await seedStageVersion(s, stage, 1);
      await seedStageVersion(s, stage, 2);
      await seedRoutes(s, stage, 1);
      await seedActive(s, stage, 1);
      await create(
        s,
        object('ActivationTaskRegistration', s.systemNs, `${stage}-routes`, {
          type,
          timeoutSeconds: 30,
          spec: registrations(stage, weight)[type],
        }),
      );
      await create(
        s,
        object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, {
          steps: [{ name: 'routes', tasks: [`${stage}-routes`] }],
        }),
      );
      // No drain: what is let go goes at the next pass (the drain is test/stage-lifecycle's and test/data-plane's).
      await create(
        s,
        object('Stage', s.ns, stage, { vector: 'example/vector:0.0.2', stageVersionHistoryLimit: 0, drainSeconds: 0 }),
      );
      await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });
      await waitFor(s, 'VectorActivation', `${stage}-to-2`, phaseIs('Succeeded', 'Failed'));

      // The Stage's status shows what the routes hold, and both versions that receive traffic serve.
      const st = await waitFor(
        s,
        'Stage',
        stage,
        (o) => JSON.stringify(o.status?.servingStageVersions) === JSON.stringify([`${stage}-2`, `${stage}-1`]),
        30_000,
      );
      expect(st.status.traffic).toEqual([
        expect.objectContaining({ weights: { [`${stage}-2`]: weight, [`${stage}-1`]: 100 - weight } }),
      ]);
      // A pass decided after the activation: the old version is marked serving and stays, history limit 0 or not.
      s.stageController!.enqueue(s.ns);
      await waitFor(s, 'Stage', stage, (o) => o.status?.activeStageVersion === `${stage}-2`, 30_000);
      const old = await s.objects.get('StageVersion', s.ns, `${stage}-1`);
      expect(old?.metadata.deletionTimestamp).toBeUndefined();
      expect(old?.metadata.annotations?.['konfidence.cloud/serving-stage']).toBe(stage);

      // A person moves the old version's share to the new one: its mark goes, and the history limit
      // takes it. Nothing but the route changes: its watch brings the passes, within seconds (the
      // resync is every 30 s).
      const [group, version, plural] = type === 'gateway-api' ? HTTPROUTE : VIRTUALSERVICE;
      const api = s.kc.makeApiClient(k8s.CustomObjectsApi);
      const route: any = await api.getNamespacedCustomObject({
        group,
        version,
        plural,
        namespace: s.ns,
        name: `${stage}-shop`,
      });
      if (type === 'gateway-api')
        route.spec.rules[0].backendRefs = [
          { name: 'mirror-sink', port: 9090, weight: 0 },
          { name: `${stage}-shop-v2`, port: 8080, weight: 100 },
        ];
      else
        route.spec.http[0].route = [
          { destination: { host: 'shop', subset: 'v2', port: { number: 8080 } }, weight: 100 },
        ];
      await api.replaceNamespacedCustomObject({
        group,
        version,
        plural,
        namespace: s.ns,
        name: `${stage}-shop`,
        body: route,
      });
      await pollUntil(
        async () => {
          const sv = await s.objects.get('StageVersion', s.ns, `${stage}-1`);
          return !sv || Boolean(sv.metadata.deletionTimestamp);
        },
        10_000,
        `StageVersion ${stage}-1 to be cleaned up`,
        250,
      );
      expect((await s.objects.get('Stage', s.ns, stage))?.status.servingStageVersions).toEqual([`${stage}-2`]);
    },
  );
});
