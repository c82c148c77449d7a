/**
 * The optional kinds of a controller's informers (controllers/informers.ts, k8s/kind-cache.ts): a
 * kind whose list is refused (its CRD not installed: 404) holds nothing back, is said once, and is
 * not listed again every second but on retryOptional, one list per kind whatever the number of
 * namespaces; once it lists, get() finds its objects. No servers: the apiserver is a stub that
 * answers lists (there is none to watch, so a cache holds what its list gave), and time is jest's.
 */
import { jest } from '@jest/globals';
import { NamespacedInformers } from '../../controllers/informers.js';
import { k8s } from '../../k8s/client.js';

const HTTPROUTE = { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'httproutes', kind: 'HTTPRoute' };
const NAMESPACES = ['a', 'b', 'c'];

/** A stub apiserver: lists of httproutes are refused as not found until `installed`, and always in the `forbidden` namespaces. */
function apiserver(forbidden: string[] = []) {
  const state = { installed: false, lists: [] as string[] };
  const notFound = () =>
    new k8s.ApiException(
      404,
      'not found',
      { kind: 'Status', code: 404, message: 'the server could not find the requested resource' },
      {},
    );
  const refused = (ns: string) =>
    new k8s.ApiException(
      403,
      'forbidden',
      { kind: 'Status', code: 403, message: `httproutes is forbidden in the namespace "${ns}"` },
      {},
    );
  const api = {
    listNamespacedCustomObject: async (p: { plural: string; namespace: string }) => {
      state.lists.push(`${p.plural}/${p.namespace}`);
      if (forbidden.includes(p.namespace)) throw refused(p.namespace);
      if (!state.installed) throw notFound();
      const route = {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'HTTPRoute',
        metadata: { name: 'shop', namespace: p.namespace, resourceVersion: '1' },
        spec: {},
      };
      return { metadata: { resourceVersion: '1' }, items: [route] };
    },
  };
  const kubeConfig = { makeApiClient: () => api, getCurrentCluster: () => null } as unknown as k8s.KubeConfig;
  return { state, kubeConfig };
}

beforeEach(() => jest.useFakeTimers());
afterEach(() => jest.useRealTimers());

it('a kind not installed: said once, listed again only when retried, one list per retry; found once it lists', async () => {
  const { state, kubeConfig } = apiserver();
  const logs: string[] = [];
  const informers = new NamespacedInformers({
    kubeConfig,
    kinds: [],
    optionalKinds: [HTTPROUTE],
    namespaces: NAMESPACES,
    onChange: () => undefined,
    log: (m) => logs.push(m),
  });
  await informers.start();
  expect(state.lists).toEqual(['httproutes/a', 'httproutes/b', 'httproutes/c']);
  expect(logs).toEqual([
    'httproutes.gateway.networking.k8s.io is not cached: the server could not find the requested resource; its list is tried again later',
  ]);
  expect(informers.isSynced()).toBe(true);
  expect(informers.get(HTTPROUTE, 'a', 'shop')).toBeUndefined();

  // Other kinds re-list a second after a refusal; this one waits.
  await jest.advanceTimersByTimeAsync(10_000);
  expect(state.lists).toHaveLength(3);

  // Still not installed: one list asks, for every namespace, and nothing more is said.
  await informers.retryOptional();
  expect(state.lists).toHaveLength(4);
  expect(logs).toHaveLength(1);

  state.installed = true;
  await informers.retryOptional();
  expect(state.lists.slice(4).sort()).toEqual(['httproutes/a', 'httproutes/b', 'httproutes/c']);
  expect(NAMESPACES.map((ns) => informers.get(HTTPROUTE, ns, 'shop')?.metadata.namespace)).toEqual(NAMESPACES);
  expect(informers.get(HTTPROUTE, 'elsewhere', 'shop')).toBeUndefined();
  await informers.stop();
});

it('a namespace that refuses the list on its own holds the others back for one retry only', async () => {
  const { state, kubeConfig } = apiserver(['a']);
  const informers = new NamespacedInformers({
    kubeConfig,
    kinds: [],
    optionalKinds: [HTTPROUTE],
    namespaces: NAMESPACES,
    onChange: () => undefined,
    log: () => undefined,
  });
  await informers.start();
  state.installed = true;
  // Each retry starts from the next namespace: within two, one that lists is asked, then the rest.
  await informers.retryOptional();
  await informers.retryOptional();
  expect(['b', 'c'].map((ns) => informers.get(HTTPROUTE, ns, 'shop')?.metadata.namespace)).toEqual(['b', 'c']);
  expect(informers.get(HTTPROUTE, 'a', 'shop')).toBeUndefined();
  await informers.stop();
});

it('two kinds of one name in different API groups are cached apart: each get finds its own group', async () => {
  const OTHER = { group: 'routes.example.com', version: 'v1', plural: 'httproutes', kind: 'HTTPRoute' };
  const api = {
    listNamespacedCustomObject: async (p: { group: string; namespace: string }) => ({
      metadata: { resourceVersion: '1' },
      items: [
        {
          apiVersion: `${p.group}/v1`,
          kind: 'HTTPRoute',
          metadata: { name: 'shop', namespace: p.namespace, resourceVersion: '1' },
          spec: {},
        },
      ],
    }),
  };
  const kubeConfig = { makeApiClient: () => api, getCurrentCluster: () => null } as unknown as k8s.KubeConfig;
  const informers = new NamespacedInformers({
    kubeConfig,
    kinds: [],
    optionalKinds: [HTTPROUTE, OTHER],
    namespaces: ['a'],
    onChange: () => undefined,
    log: () => undefined,
  });
  await informers.start();
  expect(informers.get(HTTPROUTE, 'a', 'shop')?.apiVersion).toBe('gateway.networking.k8s.io/v1');
  expect(informers.get(OTHER, 'a', 'shop')?.apiVersion).toBe('routes.example.com/v1');
  await informers.stop();
});
