/**
 * Where a Stage's routes live (decisions/landscape.ts): the control plane's own cluster, or a
 * Landscape that allows the Stage's namespace; otherwise the activation is refused with what the
 * platform team does about it. What its workers report of its routes, round by round, and the
 * condition a Stage in it carries.
 */
import {
  landscapeQueues,
  MISSED_REPORTS,
  nextReports,
  placementOf,
  POLLED_WITHIN_MS,
  recentPollers,
  reportCondition,
  type StageReport,
} from '../../decisions/landscape.js';

const landscapes = [
  { name: 'east', allowedNamespaces: ['team-a', 'team-b'] },
  { name: 'shared', allowedNamespaces: ['*'] },
];
const stage = (namespace: string, landscape?: string) => ({ namespace, name: 'shop', landscape });

it.each([
  ['no landscape: the control plane cluster', stage('team-a'), {}],
  ['a landscape that lists the namespace', stage('team-b', 'east'), { landscape: 'east' }],
  ['a landscape that allows every namespace', stage('team-z', 'shared'), { landscape: 'shared' }],
])('%s', (_name, input, expected) => {
  expect(placementOf(input, landscapes, 'konfidence-system')).toEqual(expected);
});

it.each([
  [
    'a landscape that does not list the namespace',
    stage('team-z', 'east'),
    'Stage team-z/shop names Landscape east, which does not allow namespace team-z; the platform team adds "team-z" to its spec.allowedNamespaces',
  ],
  [
    'a landscape that does not exist',
    stage('team-a', 'west'),
    'Stage team-a/shop names Landscape west, which does not exist in konfidence-system; the platform team creates it',
  ],
])('refused: %s', (_name, input, message) => {
  const placement = placementOf(input, landscapes, 'konfidence-system');
  expect('refused' in placement && placement.refused).toContain(message);
});

it("the queues a landscape's workers should poll: each Landscape with each Worker registration's type, once", () => {
  const queues = landscapeQueues(
    [{ name: 'east' }, { name: 'west' }],
    [
      { executor: 'Worker', type: 'istio' },
      { executor: 'Worker', type: 'gateway-api' },
      { executor: 'Worker', type: 'gateway-api' },
      { executor: 'External', type: 'dns' },
    ],
  );
  expect(queues).toEqual([
    { landscape: 'east', type: 'gateway-api' },
    { landscape: 'east', type: 'istio' },
    { landscape: 'west', type: 'gateway-api' },
    { landscape: 'west', type: 'istio' },
  ]);
});

it('a worker counts as polling when its last poll is within POLLED_WITHIN_MS', () => {
  const now = 1_000_000;
  expect(recentPollers([now - 1_000, now - POLLED_WITHIN_MS, now - POLLED_WITHIN_MS - 1], now)).toBe(2);
  expect(recentPollers([], now)).toBe(0);
});

it('a close-out puts back what a run changed in a landscape, though the Landscape no longer allows the namespace, or is gone', () => {
  expect(placementOf(stage('team-z', 'east'), landscapes, 'konfidence-system', true)).toEqual({ landscape: 'east' });
  expect(placementOf(stage('team-a', 'west'), [], 'konfidence-system', true)).toEqual({ landscape: 'west' });
});

describe("a round of a landscape's reports", () => {
  const route = { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'shop', name: 'shop' };
  const shop = (weights: Record<string, number>) => ({
    namespace: 'shop',
    stage: 'shop',
    rules: [{ route, rule: 0, weights }],
  });
  const round = { observedAt: '2026-12-05T10:00:30Z', intervalSeconds: 30, failedAt: '2026-12-05T10:01:00Z' };
  const earlier = {
    type: 'gateway-api',
    intervalSeconds: 30,
    observedAt: '2026-12-05T10:00:00Z',
    stages: [shop({ 'shop-1': 100 })],
  };

  it('a type that answered has its new report, asked for when the round began', () => {
    const cart = { namespace: 'shop', stage: 'cart', unreadable: 'cart-gw: forbidden' };
    expect(nextReports([earlier], round, [{ type: 'gateway-api', stages: [shop({ 'shop-2': 100 }), cart] }])).toEqual([
      {
        type: 'gateway-api',
        intervalSeconds: 30,
        observedAt: '2026-12-05T10:00:30Z',
        stages: [shop({ 'shop-2': 100 }), cart],
      },
    ]);
  });

  it('a type that did not answer keeps its last report and says why this one did not come', () => {
    expect(nextReports([earlier], round, [{ type: 'gateway-api', failed: 'no worker took it' }])).toEqual([
      { ...earlier, lastFailure: { at: '2026-12-05T10:01:00Z', message: 'no worker took it' } },
    ]);
  });

  it('a type that never answered has no report, only why; a type no Stage needs any more is dropped', () => {
    expect(nextReports([earlier], round, [{ type: 'istio', failed: 'no worker took it' }])).toEqual([
      { type: 'istio', intervalSeconds: 30, lastFailure: { at: '2026-12-05T10:01:00Z', message: 'no worker took it' } },
    ]);
  });
});

describe("a landscape Stage's LandscapeReported condition", () => {
  const now = Date.parse('2026-12-05T10:05:00Z');
  const report = (secondsAgo: number, more: Partial<StageReport> = {}): StageReport => ({
    type: 'gateway-api',
    intervalSeconds: 30,
    observedAt: now - secondsAgo * 1000,
    rules: [],
    ...more,
  });
  it.each([
    ['a report within three intervals', report(MISSED_REPORTS * 30), 'True', 'Reported'],
    ['none yet', undefined, 'False', 'NotReportedYet'],
    ['the last over three intervals ago', report(MISSED_REPORTS * 30 + 1), 'False', 'ReportsStopped'],
    ['one that could not read the Stage', report(1, { unreadable: 'forbidden' }), 'False', 'Unreadable'],
  ])('%s: %s (%s)', (_case, stageReport, status, reason) => {
    const condition = reportCondition('east', [{ type: 'gateway-api', report: stageReport }], now);
    expect(condition).toEqual(expect.objectContaining({ type: 'LandscapeReported', status, reason }));
    expect(condition.message).toContain('Landscape east');
  });

  it('stopped: says since when, why the last did not come, and that the StageVersions stay protected', () => {
    const stopped = report(600, {
      lastFailure: { at: now - 10_000, message: 'no gateway-api executor worker took it' },
    });
    expect(reportCondition('east', [{ type: 'gateway-api', report: stopped }], now).message).toBe(
      'the gateway-api executor workers of Landscape east last reported what its routes hold at 2026-12-05T09:55:00Z, over 90s ago; ' +
        "the last report failed: no gateway-api executor worker took it; the Stage's StageVersions stay protected as last known " +
        'until they report again: check that they run (konfidence_landscape_pollers)',
    );
  });
});
