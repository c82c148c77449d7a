/**
 * Where a Stage's routes live (decisions/landscape.ts): the control plane's own cluster, or a
 * Landscape that allows the Stage's namespace; otherwise the activation is refused with what the
 * platform team does about it.
 */
import { placementOf } from '../../decisions/landscape.js';

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
