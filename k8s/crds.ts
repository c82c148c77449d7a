/** Installs the project's CRDs (the committed crds/*.yaml) and waits until they are served. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_SYSTEM_NAMESPACE } from '../api/group.js';
import { apply, k8s } from './client.js';

/** Next to the sources, or two levels up when this runs compiled from dist/k8s/. */
export const crdDir = fileURLToPath(
  new URL(import.meta.url.endsWith('.ts') ? '../crds' : '../../crds', import.meta.url),
);

/**
 * Reads CRD files into client-node's typed models. A plain parsed object would lose every
 * `x-kubernetes-*` key on the way out: the client serializes CRDs by the model's camelCase names.
 */
export function readCrdFiles(dir = crdDir): k8s.V1CustomResourceDefinition[] {
  return (
    readdirSync(dir)
      // kustomization.yaml lists these files for deploy/; it is no CRD.
      .filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml')
      .sort()
      .map((f) => k8s.loadYaml<k8s.V1CustomResourceDefinition>(readFileSync(join(dir, f), 'utf8')))
  );
}

function established(crd: k8s.V1CustomResourceDefinition): boolean {
  const conditions = crd.status?.conditions ?? [];
  const isTrue = (type: string) => conditions.some((c) => c.type === type && c.status === 'True');
  return isTrue('Established') && isTrue('NamesAccepted');
}

/** Applies CRDs and waits (with a deadline) until each is Established and in discovery. */
export async function applyCrds(
  kc: k8s.KubeConfig,
  crds: k8s.V1CustomResourceDefinition[],
  timeoutMs = 60_000,
): Promise<void> {
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  const ext = kc.makeApiClient(k8s.ApiextensionsV1Api);
  for (const crd of crds) await apply(objects, crd);
  const deadline = Date.now() + timeoutMs;
  for (const crd of crds) {
    const name = crd.metadata!.name!;
    for (;;) {
      const live = await ext.readCustomResourceDefinition({ name });
      if (established(live)) break;
      if (Date.now() > deadline) throw new Error(`CRD ${name} not established within ${timeoutMs} ms`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  // Established can precede discovery by a moment; clients that discover resources need both.
  const apis = kc.makeApiClient(k8s.ApisApi);
  for (;;) {
    const groups = new Set((await apis.getAPIVersions()).groups.map((g) => g.name));
    if (crds.every((c) => groups.has(c.spec.group))) break;
    if (Date.now() > deadline) throw new Error(`CRD groups not in discovery within ${timeoutMs} ms`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function ensureNamespace(kc: k8s.KubeConfig, name: string): Promise<void> {
  await apply(k8s.KubernetesObjectApi.makeApiClient(kc), { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
}

/** Applies the admission policies shipped with the CRDs (crds/admission/). */
export async function applyAdmission(kc: k8s.KubeConfig, dir = join(crdDir, 'admission')): Promise<void> {
  const objects = k8s.KubernetesObjectApi.makeApiClient(kc);
  for (const f of readdirSync(dir)
    .filter((x) => x.endsWith('.yaml'))
    .sort()) {
    for (const o of k8s.loadAllYaml(readFileSync(join(dir, f), 'utf8')))
      await apply(objects, o as k8s.KubernetesObject);
  }
}

/** What `npm run env:up` installs: every CRD, the admission policies and the system namespace. */
export async function installProject(kc: k8s.KubeConfig): Promise<void> {
  await applyCrds(kc, readCrdFiles());
  await applyAdmission(kc);
  await ensureNamespace(kc, DEFAULT_SYSTEM_NAMESPACE);
}
