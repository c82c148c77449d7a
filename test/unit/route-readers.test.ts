/**
 * Which namespaces a route's change wakes (controllers/stage/route-readers.ts): the namespaces whose
 * passes read the route, by its whole reference, from the moment the read starts; a pass that no
 * longer reads it, or a namespace no longer served, stops being woken.
 */
import { RouteReaders } from '../../controllers/stage/route-readers.js';
import { routeKeyOf } from '../../controllers/stage/cache.js';
import { routeKey } from '../../executors/routes.js';
import type { CustomObject } from '../../k8s/custom-objects.js';

const GATEWAY = { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute' };
const shared = routeKey(GATEWAY, 'gateways', 'shop');
const other = routeKey(GATEWAY, 'gateways', 'other');
const watched = (apiVersion: string, kind: string, namespace: string, name: string) =>
  routeKeyOf({ apiVersion, kind, metadata: { namespace, name } } as CustomObject);

it('a watched route object and a read name the same route by group, kind, namespace and name', () => {
  expect(watched('gateway.networking.k8s.io/v1', 'HTTPRoute', 'gateways', 'shop')).toBe(shared);
  expect(watched('networking.istio.io/v1', 'VirtualService', 'mesh', 'shop')).toBe(
    routeKey({ group: 'networking.istio.io', kind: 'VirtualService' }, 'mesh', 'shop'),
  );
  expect(watched('routes.example.com/v1', 'HTTPRoute', 'gateways', 'shop')).not.toBe(shared);
  expect(watched('gateway.networking.k8s.io/v1', 'HTTPRoute', 'elsewhere', 'shop')).not.toBe(shared);
});

type Pass = [namespace: string, read: string[]];
it.each([
  { case: 'read by one namespace', passes: [['shop', [shared]]] as Pass[], wakes: ['shop'] },
  {
    case: 'read by two',
    passes: [
      ['shop', [shared]],
      ['cart', [shared]],
    ] as Pass[],
    wakes: ['cart', 'shop'],
  },
  {
    case: 'no longer read by the next pass',
    passes: [
      ['shop', [shared]],
      ['shop', []],
    ] as Pass[],
    wakes: [],
  },
  {
    case: 'read by one of two no longer',
    passes: [
      ['shop', [shared]],
      ['cart', [shared]],
      ['cart', [other]],
    ] as Pass[],
    wakes: ['shop'],
  },
])('a route $case wakes $wakes', ({ passes, wakes }) => {
  const readers = new RouteReaders();
  for (const [ns, read] of passes) readers.note(ns, read);
  expect([...readers.of(shared)].sort()).toEqual(wakes);
});

it('a route wakes a namespace from the moment its pass reads it, before the pass ends', () => {
  const readers = new RouteReaders();
  readers.add('shop', shared);
  expect(readers.of(shared)).toEqual(['shop']);
  readers.note('shop', [other]);
  expect(readers.of(shared)).toEqual([]);
  expect(readers.of(other)).toEqual(['shop']);
});

it('a namespace no longer served is not woken', () => {
  const readers = new RouteReaders();
  readers.note('shop', [shared]);
  readers.note('cart', [shared]);
  readers.forget('shop');
  expect(readers.of(shared)).toEqual(['cart']);
});
