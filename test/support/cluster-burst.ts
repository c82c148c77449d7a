/**
 * Stages for a burst across many of them, each as test/support/scenario.ts seeds one: its
 * StageVersions (then the Stage), an HTTPRoute on revision 1 which the "active" usage holds, and a
 * one-step plan `<stage>-plan` whose gateway-api task moves that route.
 */
import { API_VERSION } from '../../api/group.js';
import { k8s } from '../../k8s/client.js';
import { CustomObjects } from '../../k8s/custom-objects.js';
import { forEachLimited } from '../../shared/pool.js';
import { HTTPROUTE } from './scenario.js';

export async function seedBurst(
  kc: k8s.KubeConfig,
  ns: string,
  systemNs: string,
  stages: readonly string[],
  revisions: readonly number[],
): Promise<void> {
  const objects = new CustomObjects(kc);
  const routes = kc.makeApiClient(k8s.CustomObjectsApi);
  const cr = (kind: string, namespace: string, name: string, spec: unknown) =>
    objects.create({ apiVersion: API_VERSION, kind, metadata: { name, namespace }, spec });
  await forEachLimited(stages, 5, async (stage) => {
    for (const r of revisions)
      await cr('StageVersion', ns, `${stage}-${r}`, {
        stage,
        vector: `example/vector:0.0.${r}`,
        revision: r,
        backend: { service: `${stage}-shop-v${r}`, port: 8080 },
      });
    await cr('Stage', ns, stage, {
      vector: `example/vector:0.0.${Math.max(...revisions)}`,
      stageVersionHistoryLimit: revisions.length + 1,
    });
    const [group, version, plural] = HTTPROUTE;
    await routes.createNamespacedCustomObject({
      group,
      version,
      plural,
      namespace: ns,
      body: {
        apiVersion: `${group}/${version}`,
        kind: 'HTTPRoute',
        metadata: { name: `${stage}-shop`, namespace: ns },
        spec: {
          parentRefs: [{ name: 'gateway' }],
          rules: [{ backendRefs: [{ name: `${stage}-shop-v${revisions[0]}`, port: 8080, weight: 100 }] }],
        },
      },
    });
    await cr('StageVersionUsage', ns, `${stage}-active`, {
      reason: `serves the traffic of Stage ${stage}`,
      stageVersionRef: { name: `${stage}-${revisions[0]}` },
    });
    await cr('ActivationTaskRegistration', systemNs, `${stage}-gateway`, {
      type: 'gateway-api',
      timeoutSeconds: 60,
      spec: { routes: [{ name: `${stage}-shop`, namespace: ns, rules: [0] }] },
    });
    await cr('ActivationExecutionPlan', systemNs, `${stage}-plan`, {
      steps: [{ name: 'gateway', tasks: [`${stage}-gateway`] }],
    });
  });
}
