/** The CRDs as a kubectl user meets them on the real apiserver. */
import { allKinds, crdName, GROUP } from '../api/index.js';
import { readCrdFiles, applyCrds } from '../k8s/crds.js';
import { routeCrds } from '../scripts/route-crds.js';
import { k8s } from '../k8s/client.js';
import { freshNamespace, kubeConfig, kubectl, objectApi } from './support/cluster.js';
import { sample } from './support/samples.js';

const kc = kubeConfig();
const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);

describe('CRDs', () => {
  it('installs every kind of the project, established and with accepted names', async () => {
    await applyCrds(kc, readCrdFiles());
    expect(readCrdFiles()).toHaveLength(allKinds.length);
    for (const def of allKinds) {
      const crd = await ext.readCustomResourceDefinition({ name: crdName(def) });
      const status = Object.fromEntries((crd.status?.conditions ?? []).map((c) => [c.type, c.status]));
      expect({ kind: def.kind, ...status }).toMatchObject({
        kind: def.kind,
        Established: 'True',
        NamesAccepted: 'True',
      });
      expect(crd.spec.group).toBe(GROUP);
      expect(crd.spec.scope).toBe('Namespaced');
      expect(crd.spec.versions[0]?.subresources?.status).toEqual({});
    }
  });

  it('shows printer columns, short names and the konfidence category in kubectl', async () => {
    const ns = await freshNamespace('crd-kubectl');
    await objectApi(kc).create({
      ...sample('VectorActivation', 'activate-dev-2'),
      metadata: { name: 'activate-dev-2', namespace: ns },
    });
    const table = await kubectl('get', 'va', '-n', ns);
    const [header, row] = table.trim().split('\n');
    expect(header?.split(/\s+/)).toEqual(['NAME', 'STAGE', 'STAGEVERSION', 'WEIGHT', 'GATE', 'PHASE', 'AGE']);
    expect(row).toMatch(/^activate-dev-2\s+dev\s+dev-2\s+/);
    expect(await kubectl('get', 'konfidence', '-n', ns, '-o', 'name')).toContain(
      'vectoractivation.landscape.konfidence.cloud/activate-dev-2',
    );
    for (const def of allKinds) {
      for (const short of def.shortNames) {
        // Every short name resolves (an empty list prints to stderr, not an error).
        await expect(kubectl('get', short, '-n', ns)).resolves.toBeDefined();
      }
    }
  });

  it('keeps status apart from spec: status sent with the object is ignored, /status sets it', async () => {
    const ns = await freshNamespace('crd-status');
    const api = objectApi(kc);
    const va = { ...sample('VectorActivation', 'activate-dev-2'), metadata: { name: 'with-status', namespace: ns } };
    const created = await api.create({ ...va, status: { phase: 'Succeeded' } });
    expect((created as { status?: unknown }).status).toBeUndefined();
    const custom = kc.makeApiClient(k8s.CustomObjectsApi);
    await custom.patchNamespacedCustomObjectStatus(
      {
        group: GROUP,
        version: 'v1alpha1',
        namespace: ns,
        plural: 'vectoractivations',
        name: 'with-status',
        body: { status: { phase: 'Waiting', message: 'waiting for Stage dev' } },
      },
      k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch),
    );
    expect(await kubectl('get', 'va', 'with-status', '-n', ns, '-o', 'jsonpath={.status.phase}')).toBe('Waiting');
  });

  it('installs the upstream Gateway API and Istio CRDs that executor tests route with', async () => {
    await applyCrds(kc, routeCrds());
    const ns = await freshNamespace('crd-routes');
    const api = objectApi(kc);
    await api.create({
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'shop', namespace: ns },
      spec: { parentRefs: [{ name: 'gw' }], rules: [{ backendRefs: [{ name: 'shop-v1', port: 8080, weight: 100 }] }] },
    });
    await api.create({
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: { name: 'shop', namespace: ns },
      spec: {
        hosts: ['shop'],
        http: [{ name: 'primary', route: [{ destination: { host: 'shop', subset: 'v1' }, weight: 100 }] }],
      },
    });
    await expect(
      api.create({
        apiVersion: 'gateway.networking.k8s.io/v1',
        kind: 'HTTPRoute',
        metadata: { name: 'bad-weight', namespace: ns },
        spec: { rules: [{ backendRefs: [{ name: 'shop-v1', port: 8080, weight: -1 }] }] },
      }),
    ).rejects.toMatchObject({ code: 422 });
  });
});
