/** The executors' route handling on the real apiserver: only managed entries change, conflicts retry. */
import { k8s } from '../k8s/client.js';
import { gatewayApiExecutor } from '../executors/gateway-api/index.js';
import { updateRoute } from '../executors/routes.js';
import { replaceManaged, type ExecutorContext, type StageVersionInfo, type TaskInput } from '../executors/types.js';
import { applyCrds, readCrdFiles } from '../k8s/crds.js';
import { fileURLToPath } from 'node:url';
import { freshNamespace, kubeConfig } from './support/cluster.js';

const kc = kubeConfig();
const api = kc.makeApiClient(k8s.CustomObjectsApi);
const HTTPROUTE = { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'httproutes', kind: 'HTTPRoute' };
const ctx: ExecutorContext = { kubeConfig: kc, signal: new AbortController().signal, heartbeat: () => undefined };
let ns: string;

beforeAll(async () => {
  await applyCrds(kc, readCrdFiles(fileURLToPath(new URL('./fixtures/crds', import.meta.url))));
  ns = await freshNamespace('executors');
});

const route = (name: string, backendRefs: object[]) =>
  api.createNamespacedCustomObject({
    ...HTTPROUTE,
    namespace: ns,
    body: { apiVersion: 'gateway.networking.k8s.io/v1', kind: 'HTTPRoute', metadata: { name, namespace: ns }, spec: { rules: [{ backendRefs }] } },
  });

const sv = (r: number, port?: number): StageVersionInfo => ({ name: `web-${r}`, revision: r, vector: `v${r}`, backend: { service: `web-v${r}`, ...(port ? { port } : {}) } });
const input = (versions: StageVersionInfo[]): TaskInput => ({
  execution: { namespace: ns, name: 'x' },
  action: 'Apply',
  namespace: ns,
  stage: 'web',
  stageVersion: versions[versions.length - 1]!,
  stageVersions: versions,
  config: {},
});

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
    const after: any = await api.getNamespacedCustomObject({ ...HTTPROUTE, namespace: ns, name: 'conflict' });
    expect(after.spec.hostnames).toEqual(['shop.example']);
    expect(after.spec.rules[0].backendRefs[0].name).toBe('web-v2');
  });

  it('says which route is missing', async () => {
    const versions = [sv(1, 80), sv(2, 80)];
    await expect(gatewayApiExecutor.route(input(versions), versions[0], versions[1]!, gatewayApiExecutor.config.parse({ routes: [{ name: 'nope' }] }), ctx)).rejects.toThrow(
      `HTTPRoute ${ns}/nope not found`,
    );
  });

  it('says where a port must come from when neither the StageVersion nor the spec gives one', async () => {
    await route('noport', [{ name: 'web-v1', port: 80 }]);
    const versions = [sv(1), sv(2)];
    await expect(gatewayApiExecutor.route(input(versions), versions[0], versions[1]!, gatewayApiExecutor.config.parse({ routes: [{ name: 'noport' }] }), ctx)).rejects.toThrow(
      'no port for StageVersion web-1: set spec.backend.port on it or spec.port on the registration',
    );
  });

  it('splits traffic by weight and verify fails when the route was changed back behind its back', async () => {
    await route('split', [{ name: 'web-v1', port: 80, weight: 100 }, { name: 'other', port: 81, weight: 0 }]);
    const versions = [sv(1, 80), sv(2, 80)];
    const config = gatewayApiExecutor.config.parse({ routes: [{ name: 'split' }], weight: 20 });
    await gatewayApiExecutor.route(input(versions), versions[0], versions[1]!, config, ctx);
    const after: any = await api.getNamespacedCustomObject({ ...HTTPROUTE, namespace: ns, name: 'split' });
    expect(after.spec.rules[0].backendRefs.map((b: any) => `${b.name}:${b.weight}`)).toEqual(['web-v2:20', 'web-v1:80', 'other:0']);
    await expect(gatewayApiExecutor.verify(input(versions), versions[0], versions[1]!, config, ctx)).resolves.toBeUndefined();
    after.spec.rules[0].backendRefs[0].weight = 100;
    await api.replaceNamespacedCustomObject({ ...HTTPROUTE, namespace: ns, name: 'split', body: after });
    await expect(gatewayApiExecutor.verify(input(versions), versions[0], versions[1]!, config, ctx)).rejects.toThrow('expected web-v2:80:20,web-v1:80:80');
  });
});
