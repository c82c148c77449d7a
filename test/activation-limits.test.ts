/**
 * Where an activation must stop: it fails closed when the active
 * StageVersion cannot be identified; a write the apiserver refuses fails it at once with the
 * refusal, and the Stage is free again; the Stage's Lease is the Stage's, never taken from a live
 * holder, whose Lease the activation gives up on after bounded retries, failing with the holder's name; and an activation reaches only its own namespace unless a registration allows more.
 */
import { k8s } from '../k8s/client.js';
import { pollUntil } from '../scripts/env/process.js';
import { freshNamespace } from './support/cluster.js';
import { activate, HTTPROUTE, routes, seedPlan, seedRoutes, seedStage } from './support/scenario.js';
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
beforeAll(async () => {
  // A foreign Lease is waited for 30 s here (180 s by default), long enough for one that expires in 8 s.
  s = await startTestSystem('limits', { leaseWaitSeconds: 30 });
});
afterAll(async () => {
  await s?.stop();
});

const leases = () => s.kc.makeApiClient(k8s.CoordinationV1Api);

/**
 * Makes the apiserver refuse (HTTP 403, as RBAC would) creating or updating `resource` objects
 * whose name starts with `prefix` in the test namespace; returns the undo. Waits until enforced.
 */
async function forbid(
  group: string,
  resource: string,
  prefix: string,
  probe: () => Promise<unknown>,
): Promise<() => Promise<void>> {
  const objects = k8s.KubernetesObjectApi.makeApiClient(s.kc);
  const name = `test-forbid-${s.ns}-${resource}`;
  await objects.create({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicy',
    metadata: { name },
    spec: {
      failurePolicy: 'Fail',
      matchConstraints: {
        resourceRules: [
          { apiGroups: [group], apiVersions: ['*'], operations: ['CREATE', 'UPDATE'], resources: [resource] },
        ],
      },
      validations: [
        {
          expression: `!object.metadata.name.startsWith('${prefix}')`,
          message: `test: ${resource} ${prefix}* are forbidden`,
          reason: 'Forbidden',
        },
      ],
    },
  } as k8s.KubernetesObject);
  await objects.create({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingAdmissionPolicyBinding',
    metadata: { name },
    spec: {
      policyName: name,
      validationActions: ['Deny'],
      matchResources: { namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': s.ns } } },
    },
  } as k8s.KubernetesObject);
  // A new policy takes a moment to be enforced: probe with a dry run until it refuses.
  await pollUntil(
    async () =>
      probe().then(
        () => false,
        (err: unknown) => (err as { code?: number }).code === 403,
      ),
    30_000,
    `the policy ${name} to be enforced`,
  );
  return async () => {
    for (const kind of ['ValidatingAdmissionPolicyBinding', 'ValidatingAdmissionPolicy']) {
      await objects
        .delete({ apiVersion: 'admissionregistration.k8s.io/v1', kind, metadata: { name } } as k8s.KubernetesObject)
        .catch(() => undefined);
    }
    // Its removal takes a moment too: what runs next must not meet the policy still enforced.
    await pollUntil(
      async () =>
        probe().then(
          () => true,
          () => false,
        ),
      30_000,
      `the policy ${name} to be lifted`,
    );
  };
}

it('fails closed when the active usage names a StageVersion that does not exist, touching no route', async () => {
  await seedStage(s, 'ghost', [1, 2]);
  await seedRoutes(s, 'ghost', 1);
  await seedPlan(s, 'ghost', { plan: 'ghost-plan' });
  await create(
    s,
    object('StageVersionUsage', s.ns, 'ghost-active', {
      reason: 'serves the traffic of Stage ghost',
      stageVersionRef: { name: 'ghost-9' },
    }),
  );
  await activate(s, 'ghost-to-2', 'ghost', 2, { executionPlan: 'ghost-plan' });
  const va = await waitFor(s, 'VectorActivation', 'ghost-to-2', phaseIs('Failed', 'Succeeded', 'Skipped'));
  expect(va.status).toMatchObject({ phase: 'Failed', reason: 'ActiveStageVersionUnknown' });
  expect(va.status.message).toContain('ghost-9');
  expect((await routes(s, 'ghost')).api).toEqual(['mirror-sink:0', 'ghost-shop-v1:100']);
});

it('fails at once with the refusal when the apiserver forbids a write, and frees the Stage', async () => {
  await seedStage(s, 'forbid', [1, 2, 3]);
  await seedRoutes(s, 'forbid', 1);
  await seedPlan(s, 'forbid', { plan: 'forbid-plan' });
  const probe = () =>
    s.objects
      .create(
        object('ActivationExecution', s.ns, 'forbid-probe', {
          type: 't',
          registration: 'r',
          vectorActivation: 'v',
          stage: 's',
          stageVersion: 'x',
          step: 'x',
          timeoutSeconds: 1,
        }) as never,
      )
      .then(async (r) => {
        await s.objects.delete('ActivationExecution', s.ns, 'forbid-probe');
        return r;
      });
  const undo = await forbid('landscape.konfidence.cloud', 'activationexecutions', 'forbid', probe);
  try {
    await activate(s, 'forbid-to-2', 'forbid', 2, { executionPlan: 'forbid-plan' });
    const va = await waitFor(s, 'VectorActivation', 'forbid-to-2', phaseIs('Failed', 'Succeeded'), 30_000);
    expect(va.status.phase).toBe('Failed');
    expect(va.status.firstError).toContain('HTTP 403');
    expect(va.status.firstError).toContain('forbidden');
    expect((await routes(s, 'forbid')).api).toEqual(['mirror-sink:0', 'forbid-shop-v1:100']);
  } finally {
    await undo();
  }
  await activate(s, 'forbid-to-3', 'forbid', 3, { executionPlan: 'forbid-plan' });
  await waitFor(s, 'VectorActivation', 'forbid-to-3', phaseIs('Succeeded'), 30_000);
});

it("fails clearly when the Stage's Lease may not be written, instead of retrying forever", async () => {
  await seedStage(s, 'nolease', [1, 2]);
  await seedPlan(s, 'nolease', { plan: 'nolease-plan' });
  await seedRoutes(s, 'nolease', 1);
  const probe = () =>
    leases().createNamespacedLease({
      namespace: s.ns,
      dryRun: 'All',
      body: { metadata: { name: 'konfidence-stage-nolease' }, spec: {} },
    });
  const undo = await forbid('coordination.k8s.io', 'leases', 'konfidence-stage-nolease', probe);
  try {
    await activate(s, 'nolease-to-2', 'nolease', 2, { executionPlan: 'nolease-plan' });
    const va = await waitFor(s, 'VectorActivation', 'nolease-to-2', phaseIs('Failed', 'Succeeded'), 30_000);
    expect(va.status).toMatchObject({ phase: 'Failed', reason: 'Forbidden' });
    expect(va.status.message).toContain('acquireStageLease');
  } finally {
    await undo();
  }
});

it("takes the Stage's Lease only once another live holder's has expired, and the Lease goes with the Stage", async () => {
  await seedStage(s, 'held', [1, 2]);
  await seedRoutes(s, 'held', 1);
  await seedPlan(s, 'held', { plan: 'held-plan' });
  const now = new k8s.V1MicroTime();
  await leases().createNamespacedLease({
    namespace: s.ns,
    body: {
      metadata: { name: 'konfidence-stage-held' },
      spec: { holderIdentity: 'another-installation', leaseDurationSeconds: 8, acquireTime: now, renewTime: now },
    },
  });
  await activate(s, 'held-to-2', 'held', 2, { executionPlan: 'held-plan' });
  const va = await waitFor(s, 'VectorActivation', 'held-to-2', phaseIs('Succeeded', 'Failed'), 60_000);
  expect(va.status.phase).toBe('Succeeded');
  // It did not start switching before the other holder's Lease ran out.
  expect(new Date(va.status.startTime).getTime()).toBeGreaterThanOrEqual(
    Math.floor(now.getTime() / 1000) * 1000 + 8_000,
  );
  const lease = await leases().readNamespacedLease({ name: 'konfidence-stage-held', namespace: s.ns });
  expect(lease.spec?.leaseTransitions).toBe(1);
  const stage = await s.objects.get('Stage', s.ns, 'held');
  expect(lease.metadata?.ownerReferences).toEqual([
    expect.objectContaining({ kind: 'Stage', name: 'held', uid: stage!.metadata.uid }),
  ]);
});

it("gives a live holder's Lease up after bounded retries: the activation waits saying who holds it, then fails naming the holder, touching no route", async () => {
  await seedStage(s, 'foreign', [1, 2]);
  await seedRoutes(s, 'foreign', 1);
  await seedPlan(s, 'foreign', { plan: 'foreign-plan' });
  const before = await routes(s, 'foreign');
  // Another installation's Lease, live for an hour: it is neither released nor expires meanwhile.
  const now = new k8s.V1MicroTime();
  await leases().createNamespacedLease({
    namespace: s.ns,
    body: {
      metadata: { name: 'konfidence-stage-foreign' },
      spec: { holderIdentity: 'another-installation', leaseDurationSeconds: 3_600, acquireTime: now, renewTime: now },
    },
  });
  await activate(s, 'foreign-to-2', 'foreign', 2, { executionPlan: 'foreign-plan' });
  const waiting = await waitFor(
    s,
    'VectorActivation',
    'foreign-to-2',
    (o) => o.status?.reason === 'WaitingForLease' || ['Succeeded', 'Failed'].includes(o.status?.phase),
    60_000,
  );
  expect(waiting.status).toMatchObject({
    phase: 'Waiting',
    reason: 'WaitingForLease',
    message: expect.stringContaining('is held by another-installation'),
  });
  // The retries are bounded by the system's leaseWaitSeconds (30 s here, stage-lock/client.ts); the
  // deadline leaves a loaded machine a minute and a half more.
  const va = await waitFor(s, 'VectorActivation', 'foreign-to-2', phaseIs('Succeeded', 'Failed'), 120_000);
  expect(va.status.phase).toBe('Failed');
  expect(va.status.message).toContain('is held by another-installation');
  expect(await routes(s, 'foreign')).toEqual(before);
  const lease = await leases().readNamespacedLease({ name: 'konfidence-stage-foreign', namespace: s.ns });
  expect({ holder: lease.spec?.holderIdentity, transitions: lease.spec?.leaseTransitions ?? 0 }).toEqual({
    holder: 'another-installation',
    transitions: 0,
  });
}, 180_000);

it("refuses to change another namespace's route unless the registration allows the activation's namespace", async () => {
  const other = await freshNamespace('limits-other');
  await createOther(s.kc, ...HTTPROUTE, other, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'victim', namespace: other },
    spec: {
      parentRefs: [{ name: 'gateway' }],
      rules: [{ backendRefs: [{ name: 'reach-shop-v1', namespace: s.ns, port: 8080, weight: 100 }] }],
    },
  });
  await seedStage(s, 'reach', [1, 2, 3]);
  const registration = (allow?: string[]) =>
    object('ActivationTaskRegistration', s.systemNs, 'reach-gateway', {
      type: 'gateway-api',
      spec: { routes: [{ name: 'victim', namespace: other }] },
      ...(allow ? { allowCrossNamespaceFrom: allow } : {}),
    });
  await create(s, registration());
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, 'reach-plan', {
      steps: [{ name: 'gateway', tasks: ['reach-gateway'] }],
    }),
  );
  const backends = async () =>
    (await readOther(s.kc, ...HTTPROUTE, other, 'victim')).spec.rules[0].backendRefs.map(
      (b: { name: string }) => b.name,
    );

  await activate(s, 'reach-to-2', 'reach', 2, { executionPlan: 'reach-plan' });
  const refused = await waitFor(s, 'VectorActivation', 'reach-to-2', phaseIs('Failed', 'Succeeded'));
  expect(refused.status).toMatchObject({ phase: 'Failed', reason: 'CrossNamespaceRefused' });
  expect(refused.status.message).toContain(`namespace ${other}`);
  expect(refused.status.message).toContain(`allowCrossNamespaceFrom: [${s.ns}]`);
  expect(await backends()).toEqual(['reach-shop-v1']);

  // The platform team allows this namespace: the same kind of activation now moves the route.
  await s.objects.mergeSpec('ActivationTaskRegistration', s.systemNs, 'reach-gateway', {
    allowCrossNamespaceFrom: [s.ns],
  });
  await activate(s, 'reach-to-3', 'reach', 3, { executionPlan: 'reach-plan' });
  await waitFor(s, 'VectorActivation', 'reach-to-3', phaseIs('Succeeded'));
  expect(await backends()).toEqual(['reach-shop-v3']);
});
