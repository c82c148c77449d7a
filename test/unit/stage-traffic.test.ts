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
