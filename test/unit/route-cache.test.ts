/**
 * The Stage controller's routes from a watch's cache (controllers/stage/cache.ts,
 * executors/routes.ts readRoute): what its cache keeps of a route, which changes of one cost a
 * pass, and a read that takes the cached route before asking the apiserver. No servers: a local
 * HTTP server stands for the apiserver's socket and counts GETs.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isRoute, relevantState, slim } from '../../controllers/stage/cache.js';
import { builtInRouteKinds } from '../../executors/index.js';
import { readRoute, routeKey } from '../../executors/routes.js';
import type { RouteKind } from '../../executors/types.js';
import type { ExecutorContext } from '../../executors/types.js';
import type { CustomObject } from '../../k8s/custom-objects.js';
import { offlineKubeConfig } from './support/kube-config.js';

const HTTPROUTE: RouteKind = {
  group: 'gateway.networking.k8s.io',
  version: 'v1',
  plural: 'httproutes',
  kind: 'HTTPRoute',
};

const route = (over: { spec?: unknown; status?: unknown; metadata?: Record<string, unknown> } = {}): CustomObject => ({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'HTTPRoute',
  metadata: {
    name: 'shop',
    namespace: 'ns',
    uid: 'u1',
    resourceVersion: '7',
    generation: 2,
    labels: { app: 'shop' },
    annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' },
    ...over.metadata,
  },
  spec: over.spec ?? { rules: [{ backendRefs: [{ name: 'shop-1', port: 80, weight: 100 }] }] },
  ...(over.status === undefined
    ? { status: { parents: [{ conditions: [{ type: 'Accepted', status: 'True' }] }] } }
    : { status: over.status }),
});

describe('which objects are routes', () => {
  it('the route kinds are those of the built-in executors, each once', () => {
    expect(builtInRouteKinds.map((k) => `${k.kind}.${k.group}`)).toEqual([
      'HTTPRoute.gateway.networking.k8s.io',
      'VirtualService.networking.istio.io',
    ]);
  });

  it.each([
    ['an HTTPRoute', true, route()],
    ['a VirtualService', true, { ...route(), apiVersion: 'networking.istio.io/v1', kind: 'VirtualService' }],
    ['a kind of the same name in another group', false, { ...route(), apiVersion: 'example.com/v1' }],
    ['a Stage', false, { ...route(), apiVersion: 'landscape.konfidence.cloud/v1alpha1', kind: 'Stage' }],
  ])('%s is a route: %s', (_what, expected, o) => {
    expect(isRoute(o as CustomObject)).toBe(expected);
  });
});

describe('which changes of a route cost the Stage controller a pass (relevantState)', () => {
  const before = relevantState(route());
  it.each([
    [
      'a backend weight',
      true,
      route({ spec: { rules: [{ backendRefs: [{ name: 'shop-1', port: 80, weight: 50 }] }] } }),
    ],
    ['a rule added', true, route({ spec: { rules: [{}, {}] } })],
    ["its status (a gateway's conditions)", false, route({ status: { parents: [] } })],
    [
      'its labels, annotations and resourceVersion',
      false,
      route({ metadata: { labels: {}, annotations: {}, resourceVersion: '8' } }),
    ],
  ])('%s changed costs a pass: %s', (_what, costs, after) => {
    expect(relevantState(after) !== before).toBe(costs);
  });
});

describe('what the cache keeps of a route (slim)', () => {
  it('its spec, and of its metadata the name, namespace, uid and resourceVersion', () => {
    const o = route();
    slim(o);
    expect(o).toEqual({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'shop', namespace: 'ns', uid: 'u1', resourceVersion: '7' },
      spec: route().spec,
      status: undefined,
    });
    expect(relevantState(o)).toBe(relevantState(route()));
  });
});

describe('readRoute with a watch cache', () => {
  /** Stands for the apiserver: counts GETs, answers each with a route of spec `{ from: 'apiserver' }`. */
  let server: Server;
  const requests: string[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      requests.push(`${req.method} ${req.url}`);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(route({ spec: { from: 'apiserver' } })));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  function context(cached: CustomObject | undefined, routes = new Map<string, Promise<unknown>>()) {
    requests.length = 0;
    const ctx: ExecutorContext = {
      kubeConfig: offlineKubeConfig('secret', `http://127.0.0.1:${(server.address() as AddressInfo).port}`),
      signal: new AbortController().signal,
      heartbeat: () => undefined,
      routes,
      cachedRoute: (kind, namespace, name) =>
        kind.kind === 'HTTPRoute' && namespace === 'ns' && name === 'shop' ? cached : undefined,
    };
    return { ctx, gets: requests };
  }

  it('a cached route is read without a request, as a copy that an edit leaves the cache unchanged by', async () => {
    const cached = route();
    const { ctx, gets } = context(cached);
    const read = await readRoute(HTTPROUTE, 'ns', 'shop', ctx);
    read.spec.rules = [];
    expect(gets).toEqual([]);
    expect(cached.spec).toEqual(route().spec);
    expect((await readRoute(HTTPROUTE, 'ns', 'shop', ctx)).spec).toEqual(route().spec);
  });

  it('a route the cache does not hold (another namespace, a kind not listed) is read from the apiserver, once a pass', async () => {
    const { ctx, gets } = context(undefined);
    expect((await readRoute(HTTPROUTE, 'ns', 'shop', ctx)).spec).toEqual({ from: 'apiserver' });
    await readRoute(HTTPROUTE, 'ns', 'shop', ctx);
    expect(gets).toEqual(['GET /apis/gateway.networking.k8s.io/v1/namespaces/ns/httproutes/shop']);
  });

  it('what the pass read first wins over the cache: every Stage of a pass sees the same route', async () => {
    const first = route({ spec: { read: 'first' } });
    const { ctx, gets } = context(route(), new Map([[routeKey(HTTPROUTE, 'ns', 'shop'), Promise.resolve(first)]]));
    expect((await readRoute(HTTPROUTE, 'ns', 'shop', ctx)).spec).toEqual({ read: 'first' });
    expect(gets).toEqual([]);
  });
});
