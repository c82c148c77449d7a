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
  expect(traffic.traffic.get('shop')).toEqual({ rules: [], complete });
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
      completionTime: ago(4_000),
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
  const route = { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'ns', name: 'shop' };
  /** The landscape's gateway-api report, asked for `askedAgo` ms before now, its rule on `weights`. */
  const report = (askedAgo: number, weights: Record<string, number>, more: Record<string, unknown> = {}) => ({
    type: 'gateway-api',
    intervalSeconds: 10,
    observedAt: ago(askedAgo),
    stages: [{ namespace: 'ns', stage: 'shop', rules: [{ route, rule: 0, weights }] }],
    ...more,
  });
  /** `reports` 'unknown': the Landscapes are not listed now. */
  const observe = (
    landscape?: string,
    reports: unknown[] | 'unknown' = [],
    executions: unknown[] = [landscapeExecution],
  ) =>
    observeTraffic(
      {
        kubeConfig: new k8s.KubeConfig(),
        cachedRoute: () => localRoute,
        executionsOf: async () => executions as never,
        landscapeReports: () => (reports === 'unknown' ? undefined : (reports as never)),
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
    expect((await observe()).traffic.get('shop')?.rules.map((r) => r.weights)).toEqual([{ 'shop-1': 100 }]);
  });

  it.each([
    [
      'no report yet: its executions say the traffic, and nothing is let go on it',
      [],
      [landscapeExecution],
      { 'shop-2': 100 },
      false,
      'NotReportedYet',
    ],
    [
      'a fresh report asked for after its last execution ended: the report (a hand edit there) says it',
      [report(1_000, { 'shop-1': 50, 'shop-2': 50 })],
      [landscapeExecution],
      { 'shop-1': 50, 'shop-2': 50 },
      true,
      'Reported',
    ],
    [
      'a fresh report asked for before its last execution ended: the execution is newer',
      [report(8_000, { 'shop-1': 100 })],
      [landscapeExecution],
      { 'shop-2': 100 },
      true,
      'Reported',
    ],
    [
      'its executions deleted: a fresh report says it',
      [report(1_000, { 'shop-2': 100 })],
      [],
      { 'shop-2': 100 },
      true,
      'Reported',
    ],
    [
      'reports that stopped (the last over 3 intervals ago): the executions say it, nothing let go',
      [report(31_000, { 'shop-2': 100 }, { lastFailure: { at: ago(2_000), message: 'no worker took it' } })],
      [landscapeExecution],
      { 'shop-2': 100 },
      false,
      'ReportsStopped',
    ],
    [
      'a report that could not read its routes: its executions say the traffic, nothing let go',
      [report(1_000, {}, { stages: [{ namespace: 'ns', stage: 'shop', unreadable: 'forbidden' }] })],
      [landscapeExecution],
      { 'shop-2': 100 },
      false,
      'Unreadable',
    ],
    [
      'a fresh report that does not cover it (its namespace no longer allowed, say): nothing known from it',
      [report(1_000, {}, { stages: [] })],
      [landscapeExecution],
      { 'shop-2': 100 },
      false,
      'NotReportedYet',
    ],
  ])('in a landscape, %s', async (_case, reports, executions, weights, complete, reason) => {
    const observed = await observe('east', reports, executions);
    expect(observed.traffic.get('shop')).toEqual({
      rules: [expect.objectContaining({ rule: 0, weights })],
      complete,
      ...(complete ? {} : { unseen: true }),
    });
    expect(observed.reporting.get('shop')?.condition).toEqual(
      expect.objectContaining({ type: 'LandscapeReported', status: reason === 'Reported' ? 'True' : 'False', reason }),
    );
  });

  it('in a landscape, reports that stopped after its last execution ended: what the last one read stands, and nothing is let go', async () => {
    const earlier = { ...landscapeExecution, status: { ...landscapeExecution.status, completionTime: ago(60_000) } };
    const observed = await observe('east', [report(40_000, { 'shop-1': 30, 'shop-2': 70 })], [earlier]);
    expect(observed.traffic.get('shop')).toEqual({
      rules: [expect.objectContaining({ weights: { 'shop-1': 30, 'shop-2': 70 } })],
      complete: false,
      unseen: true,
    });
    // Stale already: no wake for it (the next report brings a pass).
    expect(observed.reporting.get('shop')?.staleAt).toBeUndefined();
  });

  it('in a landscape, a fresh report wakes the Stage when it goes stale, three intervals after it was asked for', async () => {
    const observed = await observe('east', [report(1_000, { 'shop-2': 100 })]);
    expect(observed.reporting.get('shop')?.staleAt).toBe(now - 1_000 + 3 * 10_000);
  });

  it('in a landscape whose reports are not known now (the Landscapes listing again): the traffic is not known', async () => {
    expect((await observe('east', 'unknown')).traffic.get('shop')).toBeUndefined();
  });

  it('in a landscape, an execution that still runs and no report after it: the traffic is not known', async () => {
    const running = { ...landscapeExecution, status: { ...landscapeExecution.status, phase: 'InProgress' } };
    const observed = await observe('east', [report(1_000, { 'shop-1': 100 })], [running]);
    expect(observed.traffic.get('shop')).toBeUndefined();
  });
});
