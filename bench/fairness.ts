/**
 * bench/fairness — does one namespace's burst starve another?
 *   idle:   one activation in namespace B on an idle system, create → Succeeded (median of --runs);
 *   loaded: the same while --burst activations (one per Stage, so they really run, not supersede)
 *           were created in namespace A just before it.
 * The goal is loaded ≤ 2 × idle. Every activation runs a one-step plan of the test suite's "sleepy"
 * executor (--seconds, default 1): what is measured is the system's scheduling, not a route write.
 * The watcher runs with the Stage limit a deployment has (KONFIDENCE_STAGES_PER_NAMESPACE, default 2).
 * Run: npm run bench:fairness [-- --burst 200 --runs 3 --seconds 1]
 */
import { randomBytes } from 'node:crypto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { API_VERSION } from '../api/group.js';
import { loadKubeConfig } from '../k8s/client.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { up } from '../scripts/env/control-plane.js';
import { seedSleepyPlan, startSleepySystem, watchFinal } from './fixture.js';
import { numberArg, writeResult } from './report.js';
import { loadConfig } from '../worker/config.js';

const BURST = numberArg('burst', 200);
const RUNS = numberArg('runs', 3);
const SECONDS = numberArg('seconds', 1);
const LIMIT = loadConfig().KONFIDENCE_STAGES_PER_NAMESPACE;

Runtime.install({ logger: new DefaultLogger('ERROR') });
const cp = await up(() => undefined);
const kc = loadKubeConfig(cp.kubeconfig);
const objects = new CustomObjects(kc);
const id = randomBytes(3).toString('hex');
const [a, b, systemNs] = [`fair-a-${id}`, `fair-b-${id}`, `fair-${id}-sys`];
await seedSleepyPlan(kc, [a, b], systemNs, SECONDS);
const cr = (kind: string, namespace: string, name: string, spec: unknown) => objects.create({ apiVersion: API_VERSION, kind, metadata: { name, namespace }, spec });

/** Stage `stage` with StageVersion `<stage>-1`, never activated yet (no Stage controller runs here). */
async function seedStage(namespace: string, stage: string): Promise<void> {
  await cr('StageVersion', namespace, `${stage}-1`, { stage, vector: `${stage}:1`, revision: 1 });
  await cr('Stage', namespace, stage, { vector: `${stage}:1` });
}
const activation = (namespace: string, stage: string) => objects.create({
  apiVersion: API_VERSION,
  kind: 'VectorActivation',
  metadata: { name: `to-${stage}-1`, namespace },
  spec: { stage, stageVersion: `${stage}-1` },
});
const finals = await watchFinal(kc, [a, b]);
const finished = (namespace: string, name: string) => finals.of(namespace, name);

const system = await startSleepySystem(cp, kc, systemNs, [a, b], `-${id}`, { stageController: false });

async function timeB(stage: string): Promise<number> {
  const t = performance.now();
  await activation(b, stage);
  await finished(b, `to-${stage}-1`);
  return performance.now() - t;
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

for (let r = 0; r < RUNS * 2; r++) await seedStage(b, `b${r}`);
for (let i = 0; i < BURST; i++) await seedStage(a, `a${i}`);

const idle: number[] = [];
for (let r = 0; r < RUNS; r++) idle.push(await timeB(`b${r}`));

// The burst: every activation of A created at once, then B's one while A's are queued.
const burstStarted = performance.now();
await Promise.all(Array.from({ length: BURST }, (_, i) => activation(a, `a${i}`)));
const created = performance.now() - burstStarted;
const loaded = [await timeB(`b${RUNS}`)];
await Promise.all(Array.from({ length: BURST }, (_, i) => finished(a, `to-a${i}-1`)));
const burstDone = performance.now() - burstStarted;

console.log(`fairness: at most ${LIMIT || 'unlimited'} Stages per namespace; ${BURST} activations in ${a} (created in ${Math.round(created)} ms, all done after ${Math.round(burstDone)} ms)`);
console.log(`  one activation in ${b}, idle: median ${Math.round(median(idle))} ms (${idle.map(Math.round).join(', ')})`);
console.log(`  one activation in ${b}, during the burst: ${Math.round(loaded[0]!)} ms = ${(loaded[0]! / median(idle)).toFixed(1)} × idle (goal ≤ 2 ×)`);
writeResult('fairness', { stagesPerNamespace: LIMIT, burst: BURST, idleMs: Math.round(median(idle)), loadedMs: Math.round(loaded[0]!), loadedOverIdle: Number((loaded[0]! / median(idle)).toFixed(2)), burstDoneMs: Math.round(burstDone) });
finals.stop();
await system.stop();
process.exit(0);
