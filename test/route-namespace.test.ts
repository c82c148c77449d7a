/**
 * A Stage whose route lives in another namespace (a shared gateway namespace both are served in):
 * a person's edit of that route reaches the Stage's status through the route's watch, in seconds,
 * not at the 30 s resync. The Stage controller wakes the namespaces whose Stages manage the route,
 * not only the route's own.
 */
import { pollUntil } from '../scripts/env/process.js';
import { freshNamespace } from './support/cluster.js';
import { removeNamespaces } from './support/namespaces.js';
import { HTTPROUTE, seedActive, seedStageVersion } from './support/scenario.js';
import { create, createOther, object, readOther, startTestSystem, type TestSystem } from './support/system.js';
import { k8s } from '../k8s/client.js';

let s: TestSystem;
let gateways: string;
beforeAll(async () => {
  gateways = await freshNamespace('xroute-gw');
  // No resync in the test's time: only a watch event can bring the pass it waits for.
  s = await startTestSystem('xroute', { stageControllerResyncMs: 600_000 }, [gateways]);
});
afterAll(async () => {
  await s?.stop();
  if (s) await removeNamespaces(s.kc, [gateways]);
});

const route = (stage: string, weights: [number, number]) => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'HTTPRoute',
  metadata: { name: `${stage}-shop`, namespace: gateways },
  spec: {
    parentRefs: [{ name: 'gateway' }],
    // The Services are the Stage's, in its namespace (a ReferenceGrant there allows it on a real gateway).
    rules: [
      {
        backendRefs: [1, 2].map((r, i) => ({
          name: `${stage}-shop-v${r}`,
          namespace: s.ns,
          port: 8080,
          weight: weights[i],
        })),
      },
    ],
  },
});

/** A person's edit: the route's spec replaced as it is read. */
async function editRoute(stage: string, spec: object): Promise<void> {
  const [group, version, plural] = HTTPROUTE;
  const body = { ...(await readOther(s.kc, ...HTTPROUTE, gateways, `${stage}-shop`)), spec };
  await s.kc
    .makeApiClient(k8s.CustomObjectsApi)
    .replaceNamespacedCustomObject({ group, version, plural, namespace: gateways, name: `${stage}-shop`, body });
}

/**
 * Whether the Stage's status says its one managed rule sends these weights: a StageVersion left
 * out gets none, and a rule that sends the Stage nothing is left out of the status.
 */
async function statusSays(stage: string, weights: Record<string, number>): Promise<true | undefined> {
  const traffic: { weights: Record<string, number> }[] =
    (await s.objects.get('Stage', s.ns, stage))?.status?.traffic ?? [];
  const says = traffic.length <= 1 && Object.entries(weights).every(([sv, w]) => (traffic[0]?.weights[sv] ?? 0) === w);
  return says || undefined;
}

it("a person's edit of a route in another namespace shows in the Stage's status within seconds", async () => {
  const stage = 'web';
  await seedStageVersion(s, stage, 1);
  await seedStageVersion(s, stage, 2);
  await createOther(s.kc, ...HTTPROUTE, gateways, route(stage, [100, 0]));
  await seedActive(s, stage, 1);
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, 'edge', {
      type: 'gateway-api',
      timeoutSeconds: 30,
      allowCrossNamespaceFrom: [s.ns],
      spec: { routes: [{ name: `${stage}-shop`, namespace: gateways, rules: [0] }] },
    }),
  );
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, 'default', { steps: [{ name: 'edge', tasks: ['edge'] }] }),
  );
  await create(s, object('Stage', s.ns, stage, { vector: 'example/vector:0.0.2', stageVersionHistoryLimit: 5 }));
  await pollUntil(
    () => statusSays(stage, { [`${stage}-1`]: 100, [`${stage}-2`]: 0 }),
    30_000,
    `Stage ${stage}'s status to show ${stage}-1 at 100 %`,
    250,
  );

  // The edit changes nothing in the Stage's namespace: only the route's watch can bring the pass.
  await editRoute(stage, route(stage, [50, 50]).spec);
  await pollUntil(
    () => statusSays(stage, { [`${stage}-1`]: 50, [`${stage}-2`]: 50 }),
    5_000,
    `Stage ${stage}'s status to show 50 % each`,
    100,
  );

  // A route that sends the Stage nothing is still one its pass reads: an edit that gives the Stage
  // traffic again wakes it as well.
  await editRoute(stage, {
    parentRefs: [{ name: 'gateway' }],
    rules: [{ backendRefs: [{ name: 'elsewhere', port: 8080, weight: 100 }] }],
  });
  await pollUntil(
    () => statusSays(stage, { [`${stage}-1`]: 0, [`${stage}-2`]: 0 }),
    5_000,
    `Stage ${stage}'s status to show no traffic`,
    100,
  );
  await editRoute(stage, route(stage, [0, 100]).spec);
  await pollUntil(
    () => statusSays(stage, { [`${stage}-1`]: 0, [`${stage}-2`]: 100 }),
    5_000,
    `Stage ${stage}'s status to show ${stage}-2 at 100 %`,
    100,
  );
});
