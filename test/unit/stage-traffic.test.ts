/**
 * Whether a Stage's traffic is known whole (controllers/stage/traffic.ts) when the plan its
 * activation names is not cached: with no registration cached either, nothing is read, so no
 * server is needed.
 */
import { observeTraffic, RECENT_ACTIVATION_MS } from '../../controllers/stage/traffic.js';
import { k8s } from '../../k8s/client.js';

const now = Date.parse('2026-12-02T10:00:00Z');
const stage = { metadata: { name: 'shop', namespace: 'ns' }, spec: { vector: 'shop:2' } };
const sv = (r: number) => ({
  metadata: { name: `shop-${r}`, namespace: 'ns' },
  spec: { stage: 'shop', vector: `shop:${r}`, revision: r },
});
const va = (status: Record<string, unknown>) => ({
  metadata: { name: 'shop-to-2', namespace: 'ns' },
  spec: { stage: 'shop', stageVersion: 'shop-2', executionPlan: 'fresh-plan' },
  status,
});
const ago = (ms: number) => new Date(now - ms).toISOString();

it.each([
  ['an activation that runs', { phase: 'InProgress' }, false],
  ['one that ended a moment ago', { phase: 'Succeeded', completionTime: ago(1_000) }, false],
  [
    'one that ended long ago (its plan deleted since)',
    { phase: 'Succeeded', completionTime: ago(RECENT_ACTIVATION_MS + 1_000) },
    true,
  ],
])('a plan not cached, named by %s: traffic known whole is %s', async (_n, status, complete) => {
  const traffic = await observeTraffic(
    { kubeConfig: new k8s.KubeConfig() },
    'ns',
    [stage] as never,
    [sv(1), sv(2)] as never,
    [],
    [],
    [va(status)] as never,
    now,
  );
  expect(traffic.get('shop')).toEqual({ rules: [], complete });
});

describe("a Stage whose routes live in a Landscape: this cluster's route of the same name is not its route", () => {
  const registration = {
    metadata: { name: 'shop-gw', namespace: 'konfidence-system' },
    spec: { type: 'gateway-api', executor: 'Worker', spec: { routes: [{ name: 'shop' }] } },
  };
  /** The HTTPRoute `shop` of this (the control plane's) cluster, all on shop-1. */
  const localRoute = {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'shop', namespace: 'ns', resourceVersion: '1' },
    spec: { rules: [{ backendRefs: [{ name: 'shop-1', port: 80, weight: 100 }] }] },
  };
  /** What the landscape's execution reports, as the core wrote it: recorded on shop-1, then all on shop-2. */
  const landscapeExecution = {
    metadata: { name: 'shop-to-2-0-shop-gw', namespace: 'ns', creationTimestamp: ago(5_000) },
    spec: { stage: 'shop', registration: 'shop-gw', action: 'Apply', assignment: { 'shop-2': 100 } },
    status: {
      phase: 'Succeeded',
      record: {
        rules: [
          {
            route: { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'ns', name: 'shop' },
            index: 0,
            entries: [{ name: 'shop-1', weight: 100 }],
            traffic: { 'shop-1': 100 },
          },
        ],
      },
    },
  };
  const observe = (landscape?: string) =>
    observeTraffic(
      {
        kubeConfig: new k8s.KubeConfig(),
        cachedRoute: () => localRoute,
        executionsOf: async () => [landscapeExecution] as never,
      },
      'ns',
      [{ ...stage, spec: { ...stage.spec, ...(landscape ? { landscape } : {}) } }] as never,
      [sv(1), sv(2)] as never,
      [registration] as never,
      [],
      [],
      now,
    );

  it('without a landscape, the route here is read', async () => {
    expect((await observe())?.get('shop')?.rules.map((r) => r.weights)).toEqual([{ 'shop-1': 100 }]);
  });

  it("in a landscape, its executions' reports say the traffic, not the route here", async () => {
    expect((await observe('east'))?.get('shop')).toEqual({
      rules: [expect.objectContaining({ rule: 0, weights: { 'shop-2': 100 } })],
      complete: true,
    });
  });
});
