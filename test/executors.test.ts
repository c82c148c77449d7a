/**
 * The executors' route handling on the real apiserver with the upstream HTTPRoute and VirtualService
 * CRDs: only managed entries change, backends are told apart by their whole reference, ambiguous
 * rules are refused before any change, adoption, port precedence, tenancy and API error handling.
 */
import { ApplicationFailure } from '@temporalio/common';
import { k8s } from '../k8s/client.js';
import { gatewayApiExecutor } from '../executors/gateway-api/index.js';
import { istioExecutor } from '../executors/istio/index.js';
import { apiError, updateRoute } from '../executors/routes.js';
import {
  replaceManaged,
  type Executor,
  type ExecutorContext,
  type StageVersionInfo,
  type TaskInput,
} from '../executors/types.js';
import { crossNamespaceViolation, taskFailure } from '../activities/execute-task.js';
import { applyAssignment, weightOf } from '../decisions/traffic.js';
import { applyCrds } from '../k8s/crds.js';
import { routeCrds } from '../scripts/route-crds.js';
import { freshNamespace, kubeConfig } from './support/cluster.js';

const kc = kubeConfig();
const api = kc.makeApiClient(k8s.CustomObjectsApi);
const HTTPROUTE = { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'httproutes', kind: 'HTTPRoute' };
const VIRTUALSERVICE = {
  group: 'networking.istio.io',
  version: 'v1',
  plural: 'virtualservices',
  kind: 'VirtualService',
};
const ctx: ExecutorContext = { kubeConfig: kc, signal: new AbortController().signal, heartbeat: () => undefined };
let ns: string;
let other: string;

beforeAll(async () => {
  await applyCrds(kc, routeCrds());
  ns = await freshNamespace('executors');
  other = await freshNamespace('executors-other');
});

const route = (name: string, backendRefs: object[], namespace = ns) =>
  api.createNamespacedCustomObject({
    ...HTTPROUTE,
    namespace,
    body: {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name, namespace },
      spec: { parentRefs: [{ name: 'gw' }], rules: [{ backendRefs }] },
    },
  });
const virtualService = (name: string, destinations: object[]) =>
  api.createNamespacedCustomObject({
    ...VIRTUALSERVICE,
    namespace: ns,
    body: {
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: { name, namespace: ns },
      spec: { hosts: ['shop'], http: [{ name: 'primary', route: destinations }] },
    },
  });
const read = async (kind: typeof HTTPROUTE, name: string): Promise<any> =>
  api.getNamespacedCustomObject({ ...kind, namespace: ns, name });
const refs = async (name: string) =>
  (await read(HTTPROUTE, name)).spec.rules[0].backendRefs.map(
    (b: any) => `${b.kind}/${b.namespace ?? ''}/${b.name}:${b.port ?? ''}:${b.weight}`,
  );
const destinations = async (name: string) =>
  (await read(VIRTUALSERVICE, name)).spec.http[0].route.map(
    (d: any) => `${d.destination.host}/${d.destination.subset ?? ''}:${d.destination.port?.number ?? ''}:${d.weight}`,
  );

const sv = (r: number, port?: number): StageVersionInfo => ({
  name: `web-${r}`,
  revision: r,
  vector: `v${r}`,
  backend: { service: `web-v${r}`, subset: `v${r}`, ...(port ? { port } : {}) },
});
const input = (versions: StageVersionInfo[], namespace = ns): TaskInput => ({
  execution: { namespace, name: 'x' },
  action: 'Apply',
  namespace,
  stage: 'web',
  stageVersion: versions[versions.length - 1]!,
  stageVersions: versions,
  config: {},
});
const gateway = (spec: object) => gatewayApiExecutor.config.parse(spec);
const istio = (spec: object) => istioExecutor.config.parse(spec);
/**
 * Switches to the last of `versions`, at the registration's weight beside `from` (the first of
 * them; undefined: a first activation), as the core assigns it.
 */
function switchTo<C>(
  executor: Executor<C>,
  config: C,
  versions: StageVersionInfo[],
  from: StageVersionInfo | undefined = versions[0],
) {
  const to = versions[versions.length - 1]!;
  return executor.route(input(versions), applyAssignment(to.name, from?.name, weightOf(config)), config, ctx);
}

describe('replaceManaged', () => {
  it('puts the new entries where the first managed one stood and keeps the others in order', () => {
    expect(replaceManaged(['a', 'm1', 'b', 'm2', 'c'], (x) => x.startsWith('m'), ['n'])).toEqual(['a', 'n', 'b', 'c']);
    expect(replaceManaged(['a', 'b'], (x) => x.startsWith('m'), ['n'])).toEqual(['a', 'b', 'n']);
  });
});

describe('routes on the apiserver', () => {
  it('re-reads and edits again when someone else wrote the route in between, keeping their change', async () => {
    await route('conflict', [{ name: 'web-v1', port: 80, weight: 100 }]);
    let calls = 0;
    await updateRoute(HTTPROUTE, ns, 'conflict', ctx, async (spec) => {
      if (++calls === 1) {
        // Another writer changes the route after we read it: our write must conflict, not clobber.
        await api.patchNamespacedCustomObject(
          { ...HTTPROUTE, namespace: ns, name: 'conflict', body: { spec: { hostnames: ['shop.example'] } } },
          k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
        );
      }
      spec.rules[0].backendRefs[0].name = 'web-v2';
      return ['moved'];
    });
    expect(calls).toBe(2);
    const after = await read(HTTPROUTE, 'conflict');
    expect(after.spec.hostnames).toEqual(['shop.example']);
    expect(after.spec.rules[0].backendRefs[0].name).toBe('web-v2');
  });

  it('says which route is missing', async () => {
    const versions = [sv(1, 80), sv(2, 80)];
    await expect(switchTo(gatewayApiExecutor, gateway({ routes: [{ name: 'nope' }] }), versions)).rejects.toThrow(
      `HTTPRoute ${ns}/nope not found`,
    );
  });

  it('says where a port must come from when neither the StageVersion nor the spec gives one', async () => {
    await route('noport', [{ name: 'web-v1', port: 80 }]);
    await expect(
      switchTo(gatewayApiExecutor, gateway({ routes: [{ name: 'noport' }] }), [sv(1), sv(2)]),
    ).rejects.toThrow('no port for StageVersion web-2: set spec.backend.port on it or spec.port on the registration');
  });

  it('splits traffic by weight and verify fails when the route was changed back behind its back', async () => {
    await route('split', [
      { name: 'web-v1', port: 80, weight: 100 },
      { name: 'other', port: 81, weight: 0 },
    ]);
    const versions = [sv(1, 80), sv(2, 80)];
    const config = gateway({ routes: [{ name: 'split' }], weight: 20 });
    await switchTo(gatewayApiExecutor, config, versions);
    expect(await refs('split')).toEqual(['Service//web-v2:80:20', 'Service//web-v1:80:80', 'Service//other:81:0']);
    // The read-back holds; no implementation serves this route's parents here, and verify says so.
    await expect(gatewayApiExecutor.verify(input(versions), { 'web-2': 20, 'web-1': 80 }, config, ctx)).resolves.toBe(
      `no Gateway API implementation serves the parents of HTTPRoute ${ns}/split: the write is verified by reading it back`,
    );
    const after = await read(HTTPROUTE, 'split');
    after.spec.rules[0].backendRefs[0].weight = 100;
    await api.replaceNamespacedCustomObject({ ...HTTPROUTE, namespace: ns, name: 'split', body: after });
    await expect(gatewayApiExecutor.verify(input(versions), { 'web-2': 20, 'web-1': 80 }, config, ctx)).rejects.toThrow(
      'expected web-v2:80:20,web-v1:80:80',
    );
  });

  it('istio verify fails too when a destination was changed behind its back', async () => {
    await virtualService('tamper', [{ destination: { host: 'shop', subset: 'v1' }, weight: 100 }]);
    const versions = [sv(1, 80), sv(2, 80)];
    const config = istio({ virtualServices: [{ name: 'tamper' }], host: 'shop' });
    await switchTo(istioExecutor, config, versions);
    await expect(istioExecutor.verify(input(versions), { 'web-2': 100 }, config, ctx)).resolves.toBeUndefined();
    const after = await read(VIRTUALSERVICE, 'tamper');
    after.spec.http[0].route[0].destination.subset = 'v1';
    await api.replaceNamespacedCustomObject({ ...VIRTUALSERVICE, namespace: ns, name: 'tamper', body: after });
    await expect(istioExecutor.verify(input(versions), { 'web-2': 100 }, config, ctx)).rejects.toThrow(
      /route primary sends .*\|v1:80:100, expected .*\|v2:80:100/,
    );
  });
});

describe('backends are told apart by their whole reference', () => {
  it('gateway-api leaves a same-named backend of another namespace or kind alone', async () => {
    await route('same-name', [
      { name: 'web-v1', port: 80, weight: 100 },
      { name: 'web-v1', namespace: other, port: 80, weight: 0 },
      { group: 'multicluster.x-k8s.io', kind: 'ServiceImport', name: 'web-v1', port: 80, weight: 0 },
    ]);
    await switchTo(gatewayApiExecutor, gateway({ routes: [{ name: 'same-name' }] }), [sv(1, 80), sv(2, 80)], undefined);
    expect(await refs('same-name')).toEqual([
      'Service//web-v2:80:100',
      `Service/${other}/web-v1:80:0`,
      'ServiceImport//web-v1:80:0',
    ]);
  });

  it('istio treats a short host and its full name alike, and a host of another namespace as another', async () => {
    await virtualService('hosts', [
      { destination: { host: `web-v1.${ns}.svc.cluster.local` }, weight: 100 },
      { destination: { host: `web-v1.${other}.svc.cluster.local` }, weight: 0 },
    ]);
    await switchTo(istioExecutor, istio({ virtualServices: [{ name: 'hosts' }] }), [sv(1), sv(2)], undefined);
    expect(await destinations('hosts')).toEqual(['web-v2/::100', `web-v1.${other}.svc.cluster.local/::0`]);
  });

  it('writes a StageVersion backend with its namespace into a route of another namespace', async () => {
    await route('elsewhere', [{ name: 'web-v1', namespace: ns, port: 80, weight: 100 }], other);
    await gatewayApiExecutor.route(
      input([sv(1, 80), sv(2, 80)]),
      { 'web-2': 100 },
      gateway({ routes: [{ name: 'elsewhere', namespace: other }] }),
      ctx,
    );
    const after: any = await api.getNamespacedCustomObject({ ...HTTPROUTE, namespace: other, name: 'elsewhere' });
    expect(after.spec.rules[0].backendRefs.map((b: any) => `${b.namespace}/${b.name}:${b.weight}`)).toEqual([
      `${ns}/web-v2:100`,
    ]);
  });
});

describe('a managed rule that also sends traffic elsewhere', () => {
  it('gateway-api refuses it before changing any route, naming route, rule, backend and the fix', async () => {
    await route('fine', [{ name: 'web-v1', port: 80, weight: 100 }]);
    await route('legacy', [{ name: 'shop-legacy', port: 80 }]); // no weight: the schema defaults it to 1
    const before = [
      (await read(HTTPROUTE, 'fine')).metadata.resourceVersion,
      (await read(HTTPROUTE, 'legacy')).metadata.resourceVersion,
    ];
    const config = gateway({ routes: [{ name: 'fine' }, { name: 'legacy' }] });
    const failure = switchTo(gatewayApiExecutor, config, [sv(1, 80), sv(2, 80)]);
    await expect(failure).rejects.toMatchObject({ retryable: false });
    await expect(failure).rejects.toThrow(
      `HTTPRoute ${ns}/legacy rule 0 sends traffic (weight 1) to Service ${ns}/shop-legacy, which is neither a StageVersion's backend of Stage web nor adopted by this registration`,
    );
    await expect(failure).rejects.toThrow(
      `Nothing was changed. Add {"name":"shop-legacy"} to the registration's spec.adopt`,
    );
    await expect(failure).rejects.toThrow('or leave rule 0 out with spec.routes[].rules');
    expect([
      (await read(HTTPROUTE, 'fine')).metadata.resourceVersion,
      (await read(HTTPROUTE, 'legacy')).metadata.resourceVersion,
    ]).toEqual(before);
  });

  it('gateway-api counts a weighted same-named backend of another namespace as not its own', async () => {
    await route('split-ns', [
      { name: 'web-v1', port: 80, weight: 50 },
      { name: 'web-v1', namespace: other, port: 80, weight: 50 },
    ]);
    await expect(
      switchTo(gatewayApiExecutor, gateway({ routes: [{ name: 'split-ns' }] }), [sv(1, 80), sv(2, 80)]),
    ).rejects.toThrow(
      `to Service ${other}/web-v1, which is neither a StageVersion's backend of Stage web nor adopted by this registration: routing the new StageVersion next to it would leave both serving. Nothing was changed. Add {"name":"web-v1","namespace":"${other}"}`,
    );
  });

  it('istio refuses it before changing anything, naming the route, destination and fix', async () => {
    await virtualService('legacy', [{ destination: { host: 'shop-legacy' } }]);
    const before = (await read(VIRTUALSERVICE, 'legacy')).metadata.resourceVersion;
    const failure = switchTo(istioExecutor, istio({ virtualServices: [{ name: 'legacy' }] }), [sv(1, 80), sv(2, 80)]);
    await expect(failure).rejects.toMatchObject({ retryable: false });
    await expect(failure).rejects.toThrow(
      `VirtualService ${ns}/legacy http route primary sends traffic (weight unset) to shop-legacy.${ns}.svc.cluster.local, which is neither a StageVersion's destination of Stage web nor adopted`,
    );
    await expect(failure).rejects.toThrow(
      `Add {"host":"shop-legacy"} to the registration's spec.adopt to replace it like a StageVersion's destination, or leave route primary out with spec.virtualServices[].routes`,
    );
    expect((await read(VIRTUALSERVICE, 'legacy')).metadata.resourceVersion).toBe(before);
  });
});

describe('adopting an existing route', () => {
  it('gateway-api replaces the adopted backend, keeps mirrors, verifies, and a repeat changes nothing', async () => {
    await route('adopted', [
      { name: 'shop-legacy', port: 80, weight: 100 },
      { name: 'mirror', port: 80, weight: 0 },
    ]);
    const versions = [sv(1, 8080)];
    const config = gateway({ routes: [{ name: 'adopted' }], adopt: [{ name: 'shop-legacy' }] });
    const first = await switchTo(gatewayApiExecutor, config, versions, undefined);
    expect(first.message).toBe(`HTTPRoute ${ns}/adopted rule 0: shop-legacy:100 → web-v1:100`);
    expect(await refs('adopted')).toEqual(['Service//web-v1:8080:100', 'Service//mirror:80:0']);
    await expect(gatewayApiExecutor.verify(input(versions), { 'web-1': 100 }, config, ctx)).resolves.toMatch(
      /^no Gateway API implementation serves the parents of HTTPRoute /,
    );
    const version = (await read(HTTPROUTE, 'adopted')).metadata.resourceVersion;
    expect((await switchTo(gatewayApiExecutor, config, versions, undefined)).message).toBe(
      'HTTPRoutes already send web-1:100',
    );
    expect((await read(HTTPROUTE, 'adopted')).metadata.resourceVersion).toBe(version);
  });

  it('istio replaces the adopted destination, verifies, and a repeat changes nothing', async () => {
    await virtualService('adopted', [{ destination: { host: 'shop', subset: 'legacy' }, weight: 100 }]);
    const versions = [sv(1, 8080)];
    const config = istio({
      virtualServices: [{ name: 'adopted' }],
      host: 'shop',
      adopt: [{ host: 'shop', subset: 'legacy' }],
    });
    await switchTo(istioExecutor, config, versions, undefined);
    expect(await destinations('adopted')).toEqual(['shop/v1:8080:100']);
    await expect(istioExecutor.verify(input(versions), { 'web-1': 100 }, config, ctx)).resolves.toBeUndefined();
    const version = (await read(VIRTUALSERVICE, 'adopted')).metadata.resourceVersion;
    expect((await switchTo(istioExecutor, config, versions, undefined)).message).toBe(
      'VirtualServices already send web-1:100',
    );
    expect((await read(VIRTUALSERVICE, 'adopted')).metadata.resourceVersion).toBe(version);
  });
});

describe('ports', () => {
  it("both executors prefer the StageVersion's port to the registration's, which fills in when it has none", async () => {
    await route('ports', [{ name: 'web-v1', port: 80, weight: 100 }]);
    await virtualService('ports', [{ destination: { host: 'web-v1' }, weight: 100 }]);
    await switchTo(
      gatewayApiExecutor,
      gateway({ routes: [{ name: 'ports' }], port: 9090 }),
      [sv(1), sv(2, 8080)],
      undefined,
    );
    await switchTo(
      istioExecutor,
      istio({ virtualServices: [{ name: 'ports' }], port: 9090 }),
      [sv(1), sv(2, 8080)],
      undefined,
    );
    expect([await refs('ports'), await destinations('ports')]).toEqual([
      ['Service//web-v2:8080:100'],
      ['web-v2/:8080:100'],
    ]);
    await switchTo(
      gatewayApiExecutor,
      gateway({ routes: [{ name: 'ports' }], port: 9090 }),
      [sv(2, 8080), sv(3)],
      undefined,
    );
    await switchTo(
      istioExecutor,
      istio({ virtualServices: [{ name: 'ports' }], port: 9090 }),
      [sv(2, 8080), sv(3)],
      undefined,
    );
    expect([await refs('ports'), await destinations('ports')]).toEqual([
      ['Service//web-v3:9090:100'],
      ['web-v3/:9090:100'],
    ]);
  });
});

describe('tenancy', () => {
  const gw = gateway({ routes: [{ name: 'a' }, { name: 'b', namespace: 'edge' }, { name: 'c', namespace: 'edge' }] });
  const mesh = istio({ virtualServices: [{ name: 'a', namespace: 'mesh' }, { name: 'b' }] });

  it("routeNamespaces names every namespace a config writes in, the activation's by default", () => {
    expect(gatewayApiExecutor.routeNamespaces(gw, 'shop')).toEqual(['edge', 'shop']);
    expect(istioExecutor.routeNamespaces(mesh, 'shop')).toEqual(['mesh', 'shop']);
    expect(gatewayApiExecutor.routeNamespaces(gateway({ routes: [{ name: 'a' }] }), 'shop')).toEqual(['shop']);
  });

  it("execute-task refuses routes outside the activation's namespace unless the registration allows it", () => {
    const task = { ...input([sv(1, 80)], 'shop'), registration: 'edge-routes' };
    expect(crossNamespaceViolation(gatewayApiExecutor, gw, task)).toBe(
      'refused: this gateway-api task of an activation in namespace shop would change routes in namespace edge; only namespaces listed in ' +
        'spec.allowCrossNamespaceFrom of ActivationTaskRegistration edge-routes may do that (a platform administrator adds "shop" there, ' +
        'or the registration names routes in shop only)',
    );
    expect(crossNamespaceViolation(istioExecutor, mesh, task)).toContain('would change routes in namespace mesh');
    expect(crossNamespaceViolation(gatewayApiExecutor, gw, { ...task, crossNamespaceAllowed: true })).toBeUndefined();
    expect(
      crossNamespaceViolation(gatewayApiExecutor, gateway({ routes: [{ name: 'a', namespace: 'shop' }] }), task),
    ).toBeUndefined();
  });
});

describe('Kubernetes API errors', () => {
  const refused = (code: number, message: string) =>
    new k8s.ApiException(code, 'refused', JSON.stringify({ message }), {});

  it('are not retried when the request itself is refused (4xx but 409 and 429), with the apiserver message', () => {
    for (const code of [400, 403, 404, 422]) {
      const err = apiError(refused(code, `the apiserver says ${code}`), 'writing HTTPRoute a/b');
      expect({ code, retryable: err.retryable, message: err.message }).toEqual({
        code,
        retryable: false,
        message: expect.stringContaining(`(${code})`),
      });
      expect(err.message).toContain(`the apiserver says ${code}`);
    }
    for (const code of [409, 429, 500, 503])
      expect({ code, retryable: apiError(refused(code, 'busy'), 'x').retryable }).toEqual({ code, retryable: true });
    expect(apiError(new Error('connect ECONNREFUSED'), 'x').retryable).toBe(true);
  });

  it('become non-retryable activity failures in execute-task, other errors stay retryable', () => {
    const failure = taskFailure(refused(403, 'forbidden'));
    expect(failure).toBeInstanceOf(ApplicationFailure);
    expect(failure).toMatchObject({
      nonRetryable: true,
      type: 'ExecutorError',
      message: expect.stringContaining('forbidden (403)'),
    });
    expect(taskFailure(refused(429, 'slow down'))).not.toBeInstanceOf(ApplicationFailure);
  });

  it('a 403 from the apiserver names the verb and resource and is not retried', async () => {
    await route('forbidden', [{ name: 'web-v1', port: 80, weight: 100 }]);
    const nobody = new k8s.KubeConfig();
    nobody.loadFromOptions({
      clusters: kc.clusters,
      contexts: kc.contexts,
      currentContext: kc.currentContext,
      users: kc.users.map((u) => ({ ...u, impersonateUser: 'nobody' })),
    });
    const failure = updateRoute(HTTPROUTE, ns, 'forbidden', { ...ctx, kubeConfig: nobody }, () => []);
    await expect(failure).rejects.toMatchObject({ retryable: false });
    await expect(failure).rejects.toThrow(
      /forbidden \(403\).*User "nobody" cannot get resource "httproutes" in API group "gateway.networking.k8s.io"/,
    );
  });

  it('a change the schema refuses (422) is not retried and says why', async () => {
    await route('invalid', [{ name: 'web-v1', port: 80, weight: 100 }]);
    const failure = updateRoute(HTTPROUTE, ns, 'invalid', ctx, (spec) => {
      spec.rules[0].backendRefs[0].weight = -1;
      return ['broken'];
    });
    await expect(failure).rejects.toMatchObject({ retryable: false });
    await expect(failure).rejects.toThrow(/writing HTTPRoute .*invalid \(422\).*weight/);
  });
});

describe.each([10, 50])(
  'at weight %i: what a task found is recorded, and a restore puts exactly that back',
  (weight) => {
    const versions = [sv(1, 80), sv(2, 80)];

    it('gateway-api', async () => {
      const name = `record-${weight}`;
      await route(name, [
        { name: 'mirror', port: 9090, weight: 0 },
        {
          name: 'web-v1',
          port: 80,
          weight: 100,
          filters: [{ type: 'RequestHeaderModifier', requestHeaderModifier: { add: [{ name: 'x-v', value: '1' }] } }],
        },
      ]);
      const config = gateway({ routes: [{ name }], weight });
      const before = (await read(HTTPROUTE, name)).spec;
      const record = await gatewayApiExecutor.observe(input(versions), config, ctx);
      expect(record).toEqual([
        {
          route: { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: ns, name },
          index: 0,
          entries: [before.rules[0].backendRefs[1]],
          traffic: { 'web-1': 100 },
        },
      ]);
      await switchTo(gatewayApiExecutor, config, versions);
      expect(await refs(name)).toEqual([
        'Service//mirror:9090:0',
        `Service//web-v2:80:${weight}`,
        `Service//web-v1:80:${100 - weight}`,
      ]);
      expect((await gatewayApiExecutor.restore(input(versions), record, config, ctx)).message).toBe(
        `HTTPRoute ${ns}/${name} rule 0: web-v2:${weight}+web-v1:${100 - weight} → web-v1:100 (as recorded)`,
      );
      expect((await read(HTTPROUTE, name)).spec).toEqual(before);
      const version = (await read(HTTPROUTE, name)).metadata.resourceVersion;
      expect((await gatewayApiExecutor.restore(input(versions), record, config, ctx)).message).toBe(
        'HTTPRoutes already as recorded',
      );
      expect((await read(HTTPROUTE, name)).metadata.resourceVersion).toBe(version);
    });

    it('istio', async () => {
      const name = `record-${weight}`;
      await virtualService(name, [
        { destination: { host: 'shop', subset: 'v1' }, weight: 100, headers: { request: { set: { 'x-v': '1' } } } },
      ]);
      const config = istio({ virtualServices: [{ name }], host: 'shop', weight });
      const before = (await read(VIRTUALSERVICE, name)).spec;
      const record = await istioExecutor.observe(input(versions), config, ctx);
      expect(record).toEqual([
        {
          route: { group: 'networking.istio.io', kind: 'VirtualService', namespace: ns, name },
          index: 0,
          name: 'primary',
          entries: [before.http[0].route[0]],
          traffic: { 'web-1': 100 },
        },
      ]);
      await switchTo(istioExecutor, config, versions);
      expect(await destinations(name)).toEqual([`shop/v2:80:${weight}`, `shop/v1:80:${100 - weight}`]);
      await istioExecutor.restore(input(versions), record, config, ctx);
      expect((await read(VIRTUALSERVICE, name)).spec).toEqual(before);
    });
  },
);

describe('restore', () => {
  it('names the route and rule it cannot put back', async () => {
    await api.createNamespacedCustomObject({
      ...HTTPROUTE,
      namespace: ns,
      body: {
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'HTTPRoute',
        metadata: { name: 'gone-rule', namespace: ns },
        spec: {
          parentRefs: [{ name: 'gw' }],
          rules: [
            { backendRefs: [{ name: 'static', port: 80, weight: 0 }] },
            { backendRefs: [{ name: 'web-v1', port: 80, weight: 100 }] },
          ],
        },
      },
    });
    const versions = [sv(1, 80), sv(2, 80)];
    const config = gateway({ routes: [{ name: 'gone-rule', rules: [1] }] });
    const record = await gatewayApiExecutor.observe(input(versions), config, ctx);
    await switchTo(gatewayApiExecutor, config, versions);
    const after = await read(HTTPROUTE, 'gone-rule');
    after.spec.rules = [after.spec.rules[0]];
    await api.replaceNamespacedCustomObject({ ...HTTPROUTE, namespace: ns, name: 'gone-rule', body: after });
    const failure = gatewayApiExecutor.restore(input(versions), record, config, ctx);
    await expect(failure).rejects.toMatchObject({ retryable: false });
    await expect(failure).rejects.toThrow(
      `cannot restore HTTPRoute ${ns}/gone-rule rule 1: the rule is gone; it was recorded sending web-v1:100`,
    );
  });

  it('refuses a record that names a route the registration does not manage, writing nothing', async () => {
    await route('not-mine', [{ name: 'web-v2', port: 80, weight: 100 }]);
    const before = (await read(HTTPROUTE, 'not-mine')).metadata.resourceVersion;
    const record = [
      {
        route: { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: ns, name: 'not-mine' },
        index: 0,
        entries: [{ name: 'web-v1', port: 80, weight: 100 }],
        traffic: { 'web-1': 100 },
      },
    ];
    await expect(
      gatewayApiExecutor.restore(input([sv(1, 80), sv(2, 80)]), record, gateway({ routes: [{ name: 'mine' }] }), ctx),
    ).rejects.toThrow(
      `the record names HTTPRoute ${ns}/not-mine, which this registration does not manage; nothing was restored`,
    );
    expect((await read(HTTPROUTE, 'not-mine')).metadata.resourceVersion).toBe(before);
  });
});

describe('assignments', () => {
  it('one that names no StageVersion of the Stage, or does not sum to 100, is refused before any write', async () => {
    await route('bad-assignment', [{ name: 'web-v1', port: 80, weight: 100 }]);
    const before = (await read(HTTPROUTE, 'bad-assignment')).metadata.resourceVersion;
    const config = gateway({ routes: [{ name: 'bad-assignment' }] });
    const versions = [sv(1, 80), sv(2, 80)];
    await expect(gatewayApiExecutor.route(input(versions), { 'web-9': 100 }, config, ctx)).rejects.toThrow(
      'the assignment names web-9, which is no StageVersion of Stage web',
    );
    await expect(gatewayApiExecutor.route(input(versions), { 'web-2': 60, 'web-1': 30 }, config, ctx)).rejects.toThrow(
      'the assignment web-2:60+web-1:30 does not give whole percents that sum to 100',
    );
    expect((await read(HTTPROUTE, 'bad-assignment')).metadata.resourceVersion).toBe(before);
  });
});
