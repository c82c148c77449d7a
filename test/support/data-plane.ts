/**
 * A Stage served through the local gateway: each StageVersion a real server on its Service's
 * loopback ClusterIP (scripts/apps/local-apps.ts), one HTTPRoute attached to the local Gateway under
 * a hostname of its own, a registration managing its rule; and what the Stage's status records of
 * that rule over time, on the load's clock, for the weight windows (scripts/apps/judge.ts).
 */
import { GATEWAY_PARENT_REF } from '../../scripts/env/gateway.js';
import { KindCache } from '../../k8s/kind-cache.js';
import { pollUntil } from '../../scripts/env/process.js';
import type { RecordedWeight } from '../../scripts/apps/judge.js';
import { requestOnce } from '../../scripts/apps/load.js';
import { seedActive, seedStageVersion } from './scenario.js';
import { create, createOther, object, readOther, type TestSystem } from './system.js';

export function gatewayUrl(): string {
  const url = process.env.KONFIDENCE_GATEWAY_URL;
  if (!url)
    throw new Error(
      "KONFIDENCE_GATEWAY_URL is not set: the local control plane (npm run env:up) writes it into .cache/env/env.sh, the tests' global setup passes it on",
    );
  return url;
}
export const hostOf = (s: TestSystem, stage: string) => `${stage}.${s.ns}.test`;

/**
 * Stage `stage` with StageVersions of `revisions` (`<stage>-<r>`, backend Service `<stage>-shop-v<r>`),
 * `<stage>-<active>` serving all of its route's traffic; registration `<stage>-gateway` manages the
 * route's rule 0. `spec`: more of the Stage's spec (its StageVersion history limit, say);
 * `parentRef`: the gateway the route joins (default: the local one).
 */
export async function seedServed(
  s: TestSystem,
  stage: string,
  revisions: number[],
  active: number,
  spec: Record<string, unknown> = {},
  parentRef: object = GATEWAY_PARENT_REF,
): Promise<void> {
  // What holds the versions (the route, the active usage, the registration) comes before the
  // Stage, whose history limit would otherwise clean them up in a pass between the two.
  for (const r of revisions) await seedStageVersion(s, stage, r);
  await createOther(s.kc, 'gateway.networking.k8s.io', 'v1', 'httproutes', s.ns, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: `${stage}-shop`, namespace: s.ns },
    spec: {
      parentRefs: [parentRef],
      hostnames: [hostOf(s, stage)],
      rules: [{ backendRefs: [{ name: `${stage}-shop-v${active}`, port: 8080, weight: 100 }] }],
    },
  });
  await seedActive(s, stage, active);
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, `${stage}-gateway`, {
      type: 'gateway-api',
      timeoutSeconds: 30,
      spec: { routes: [{ name: `${stage}-shop`, namespace: s.ns, rules: [0] }] },
    }),
  );
  await create(s, object('Stage', s.ns, stage, { vector: `example/vector:0.0.${Math.max(...revisions)}`, ...spec }));
}

/** Waits until a request to the Stage's host through the gateway (default: the local one) is answered by `version`. */
export async function routedTo(
  s: TestSystem,
  stage: string,
  version: string,
  via = gatewayUrl(),
  timeoutMs = 30_000,
): Promise<void> {
  let last: Awaited<ReturnType<typeof requestOnce>> | undefined;
  await pollUntil(
    async () => (last = await requestOnce(via, hostOf(s, stage))).version === version,
    timeoutMs,
    `the gateway to send ${hostOf(s, stage)} to ${version}`,
    100,
  ).catch(async (err: Error) => {
    const route = await readOther(s.kc, 'gateway.networking.k8s.io', 'v1', 'httproutes', s.ns, `${stage}-shop`).catch(
      () => undefined,
    );
    throw new Error(
      `${err.message}; the last answer: ${JSON.stringify(last)}; the route's status: ${JSON.stringify(route?.status)}`,
    );
  });
}

/**
 * Records, through a watch on the Stage, the percent per StageVersion its status.traffic holds for
 * its route's rule 0, each change with the time it was seen (performance.now(), the load's clock).
 */
export async function recordWeights(
  s: TestSystem,
  stage: string,
): Promise<{ timeline: RecordedWeight[]; stop(): Promise<RecordedWeight[]> }> {
  const timeline: RecordedWeight[] = [];
  const cache = new KindCache({
    kubeConfig: s.kc,
    plural: 'stages',
    namespace: s.ns,
    log: () => undefined,
    onChange: (_type, st) => {
      if (st.metadata.name !== stage) return;
      const rule = (
        st.status?.traffic as { route: { name: string }; rule: number; weights: Record<string, number> }[] | undefined
      )?.find((t) => t.route.name === `${stage}-shop` && t.rule === 0);
      if (rule && JSON.stringify(rule.weights) !== JSON.stringify(timeline.at(-1)?.percent))
        timeline.push({ at: performance.now(), percent: rule.weights });
    },
  });
  await cache.start();
  return {
    timeline,
    async stop() {
      await cache.stop();
      return timeline;
    },
  };
}
