/**
 * Where a Stage's routes live (decisions/landscape.ts): the control plane's own cluster, or a
 * Landscape that allows the Stage's namespace; otherwise the activation is refused with what the
 * platform team does about it.
 */
import { landscapeQueues, placementOf, POLLED_WITHIN_MS, recentPollers } from '../../decisions/landscape.js';

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
