/**
 * bench/data-plane — what the requests through the local gateway (Traefik) say of activations, under
 * a steady 200 requests a second over kept-alive and fresh connections (scripts/apps/load.ts):
 *   switch: a plain switch's route write (seen by a watch on the HTTPRoute) → every request from then
 *           on answered by the new version, over `--switches` switches one after the other;
 *   failed: requests that failed over all of it (no app is told to fail any: the goal is 0);
 *   split:  the largest split error of a canary's weight windows (10 → 50 → 100 %, 6 s pauses): the
 *           new version's share of the requests against the weight the Stage's status records.
 * Run: npm run bench:data-plane [-- --switches 20]
 */
import { LocalApps } from '../scripts/apps/local-apps.js';
import { allOnAfter, unexpectedFailures, weightWindows } from '../scripts/apps/judge.js';
import { startLoad } from '../scripts/apps/load.js';
import { up } from '../scripts/env/control-plane.js';
import { pollUntil } from '../scripts/env/process.js';
import { KindCache } from '../k8s/kind-cache.js';
import { gatewayUrl, hostOf, recordWeights, routedTo, seedServed } from '../test/support/data-plane.js';
import { activate } from '../test/support/scenario.js';
import { create, object, phaseIs, startTestSystem, waitFor } from '../test/support/system.js';
import { numberArg, stats, writeResult } from './report.js';

const SWITCHES = numberArg('switches', 20);
/** The load runs on this long after each switch's Succeeded, so that every switch is judged on requests after it. */
const AFTER_MS = 1_000;

const cp = await up(() => undefined);
// The test support reads the servers from the environment, as the tests' global setup sets it.
Object.assign(process.env, {
  KUBECONFIG: cp.kubeconfig,
  TEMPORAL_ADDRESS: cp.temporalAddress,
  TEMPORAL_NAMESPACE: cp.testTemporalNamespace,
  KONFIDENCE_GATEWAY_URL: cp.gatewayUrl,
});
const s = await startTestSystem('bench-dp', { prometheusUrl: cp.prometheusUrl, log: () => undefined });
const apps = new LocalApps({ kubeConfig: s.kc, namespaces: [s.ns] });
try {
  await apps.start();

  // --- switches -------------------------------------------------------------------------------
  const stage = 'flip';
  const revisions = Array.from({ length: SWITCHES + 1 }, (_, i) => i + 1);
  // A history limit that keeps the StageVersions waiting for their switch.
  await seedServed(s, stage, revisions, 1, { stageVersionHistoryLimit: 100 });
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, {
      onFailure: 'Revert',
      steps: [{ name: 'gateway', tasks: [`${stage}-gateway`] }],
    }),
  );
  await apps.settled();
  await routedTo(s, stage, `${stage}-1`);

  // When this process sees each route write that sends a version all the traffic.
  const written = new Map<string, number>();
  const routes = new KindCache({
    kubeConfig: s.kc,
    group: 'gateway.networking.k8s.io',
    version: 'v1',
    plural: 'httproutes',
    namespace: s.ns,
    log: () => undefined,
    onChange: (_type, route) => {
      const all = (route.spec?.rules?.[0]?.backendRefs as { name: string; weight?: number }[] | undefined)?.find(
        (b) => b.weight === 100,
      );
      if (route.metadata.name === `${stage}-shop` && all && !written.has(all.name))
        written.set(all.name, performance.now());
    },
  });
  await routes.start();
  const load = startLoad({ gatewayUrl: gatewayUrl(), host: hostOf(s, stage) });
  const switchedIn: number[] = [];
  try {
    for (const r of revisions.slice(1)) {
      await activate(s, `${stage}-to-${r}`, stage, r, { executionPlan: `${stage}-plan` });
      await waitFor(s, 'VectorActivation', `${stage}-to-${r}`, phaseIs('Succeeded'), 60_000);
      const at = await pollUntil(
        () => written.get(`${stage}-shop-v${r}`),
        10_000,
        `the route write of ${stage}-${r}`,
        10,
      );
      const until = performance.now() + AFTER_MS;
      await pollUntil(() => performance.now() >= until, AFTER_MS + 5_000, 'the load after the switch', 20);
      const after = load.sent.filter((x) => x.at >= at && x.at < until);
      const took = allOnAfter(after, `${stage}-${r}`, at);
      if (took === undefined)
        throw new Error(`after switch ${r}, requests still reached another version ${AFTER_MS} ms after Succeeded`);
      switchedIn.push(took);
    }
  } finally {
    await load.stop();
    await routes.stop();
  }
  const switchFailures = unexpectedFailures(load.sent);

  // --- a canary's split ----------------------------------------------------------------------
  const canary = 'split';
  await seedServed(s, canary, [1, 2], 1);
  const progression = {
    steps: [{ setWeight: 10 }, { pause: { durationSeconds: 6 } }, { setWeight: 50 }, { pause: { durationSeconds: 6 } }],
  };
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, `${canary}-plan`, {
      onFailure: 'Revert',
      steps: [{ name: 'gateway', tasks: [`${canary}-gateway`] }],
      progression,
    }),
  );
  await apps.settled();
  await routedTo(s, canary, `${canary}-1`);
  const weights = await recordWeights(s, canary);
  const canaryLoad = startLoad({ gatewayUrl: gatewayUrl(), host: hostOf(s, canary) });
  await pollUntil(() => canaryLoad.sent.length >= 800 || undefined, 30_000, 'the load to warm up', 50);
  await activate(s, `${canary}-to-2`, canary, 2, { executionPlan: `${canary}-plan` });
  await waitFor(s, 'VectorActivation', `${canary}-to-2`, phaseIs('Succeeded'), 120_000);
  const end = performance.now() + 3_000;
  await pollUntil(() => performance.now() >= end, 8_000, 'the load after the canary', 50);
  const canarySent = await canaryLoad.stop();
  const windows = weightWindows(canarySent, await weights.stop(), {
    version: `${canary}-2`,
    marginMs: 1_000,
    minRequests: 400,
  });
  const canaryFailures = unexpectedFailures(canarySent);

  const figures = {
    switches: SWITCHES,
    requests: load.sent.length + canarySent.length,
    switchedInMs: stats(switchedIn),
    failedRequests: switchFailures.length + canaryFailures.length,
    canaryWindows: windows.map((w) => ({
      recorded: w.recorded,
      observed: Math.round(w.observed * 10) / 10,
      requests: w.requests,
    })),
    worstSplitErrorPoints: Math.round(Math.max(...windows.map((w) => w.error)) * 100) / 100,
  };
  console.log(
    `route write → every request on the new version: p50 ${figures.switchedInMs.median} ms, p95 ${figures.switchedInMs.p95} ms over ${SWITCHES} switches; ` +
      `${figures.failedRequests} of ${figures.requests} requests failed; the canary's worst window was ${figures.worstSplitErrorPoints} points off (${windows.length} windows)`,
  );
  console.log(`written: ${writeResult('data-plane', figures)}`);
  if (figures.failedRequests > 0)
    throw new Error(
      `${figures.failedRequests} requests failed: ${JSON.stringify([...switchFailures, ...canaryFailures].slice(0, 3))}`,
    );
} finally {
  await apps.stop();
  await s.stop();
}
