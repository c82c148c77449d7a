/**
 * Which namespaces a route's change wakes (controllers/route-readers.ts): the namespaces whose
 * Stages' last passes read the route, by its whole reference; a pass that no longer reads it, or a
 * namespace no longer served, stops being woken.
 */
import { RouteReaders, routeKey, routeKeyOf } from '../../controllers/route-readers.js';
import type { ObservedTraffic } from '../../decisions/stage.js';

const GATEWAY = 'gateway.networking.k8s.io';
const shared = { group: GATEWAY, kind: 'HTTPRoute', namespace: 'gateways', name: 'shop' };
const traffic = (...routes: (typeof shared)[]): Map<string, ObservedTraffic | undefined> =>
  new Map([['web', { complete: true, rules: routes.map((route) => ({ route, rule: 0, weights: { 'web-1': 100 } })) }]]);
const watched = (apiVersion: string, kind: string, namespace: string, name: string) => routeKeyOf({ apiVersion, kind, metadata: { namespace, name } });

it('a watched route object and a rule reference name the same route by group, kind, namespace and name', () => {
  expect(watched(`${GATEWAY}/v1`, 'HTTPRoute', 'gateways', 'shop')).toBe(routeKey(shared));
  expect(watched('routes.example.com/v1', 'HTTPRoute', 'gateways', 'shop')).not.toBe(routeKey(shared));
  expect(watched(`${GATEWAY}/v1`, 'HTTPRoute', 'other', 'shop')).not.toBe(routeKey(shared));
});

it.each([
  { case: 'read by one namespace', passes: [['shop', traffic(shared)]], wakes: ['shop'] },
  { case: 'read by two', passes: [['shop', traffic(shared)], ['cart', traffic(shared)]], wakes: ['cart', 'shop'] },
  { case: 'no longer read by the next pass', passes: [['shop', traffic(shared)], ['shop', traffic()]], wakes: [] },
  { case: 'no longer managed (no registration)', passes: [['shop', traffic(shared)], ['shop', undefined]], wakes: [] },
  { case: 'whose Stage could not be read this pass', passes: [['shop', traffic(shared)], ['shop', new Map([['web', undefined]])]], wakes: ['shop'] },
  { case: 'one of two stops', passes: [['shop', traffic(shared)], ['cart', traffic(shared)], ['cart', traffic({ ...shared, name: 'other' })]], wakes: ['shop'] },
] as const)('a route $case wakes $wakes', ({ passes, wakes }) => {
  const readers = new RouteReaders();
  for (const [ns, t] of passes) readers.note(ns, t);
  expect([...readers.of(routeKey(shared))].sort()).toEqual(wakes);
});

it('a namespace no longer served is not woken', () => {
  const readers = new RouteReaders();
  readers.note('shop', traffic(shared));
  readers.note('cart', traffic(shared));
  readers.forget('shop');
  expect(readers.of(routeKey(shared))).toEqual(['cart']);
});
