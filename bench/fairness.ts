/**
 * bench/fairness — does one namespace's burst starve another?
 *   idle:   activations in namespace B on an idle system, one after another (--runs of them);
 *   loaded: the same while --burst activations (one per Stage, so they really run, not supersede),
 *           created in namespace A just before, are still queued or running.
 * What is measured is the scheduling delay: create → the first ActivationExecution of B's
 * activation exists (the activation took its Stage and began its first task), without the task's
 * own time. The goal is median(loaded) ≤ 2 × median(idle). Every activation runs a one-step plan of
 * the test suite's "sleepy" executor (--seconds, default 1: it keeps A's burst busy).
 * The watcher runs with the Stage limit a deployment has (KONFIDENCE_STAGES_PER_NAMESPACE, default 2).
 * Run: npm run bench:fairness [-- --burst 200 --runs 5 --seconds 1]
 */
import { randomBytes } from 'node:crypto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { loadKubeConfig } from '../k8s/client.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { up } from '../scripts/env/control-plane.js';
import { API_VERSION, GROUP, VERSION } from '../api/group.js';
import { pollUntil } from '../scripts/env/process.js';
import { removeNamespaces } from '../test/support/namespaces.js';
import { resumingWatch } from '../test/support/watch.js';
import { seedSleepyPlan, startSleepySystem, watchFinal } from './fixture.js';
import { numberArg, writeResult } from './report.js';
import { loadConfig } from '../worker/config.js';

const BURST = numberArg('burst', 200);
const RUNS = numberArg('runs', 5);
const SECONDS = numberArg('seconds', 1);
const LIMIT = loadConfig().KONFIDENCE_STAGES_PER_NAMESPACE;

Runtime.install({ logger: new DefaultLogger('ERROR') });
const cp = await up(() => undefined);
const kc = loadKubeConfig(cp.kubeconfig);
const objects = new CustomObjects(kc);
const id = randomBytes(3).toString('hex');
const [a, b, systemNs] = [`fair-a-${id}`, `fair-b-${id}`, `fair-${id}-sys`];
await seedSleepyPlan(kc, [a, b], systemNs, SECONDS);
const cr = (kind: string, namespace: string, name: string, spec: unknown) =>
  objects.create({ apiVersion: API_VERSION, kind, metadata: { name, namespace }, spec });

/** Stage `stage` with StageVersion `<stage>-1`, never activated yet (no Stage controller runs here). */
async function seedStage(namespace: string, stage: string): Promise<void> {
  await cr('StageVersion', namespace, `${stage}-1`, { stage, vector: `${stage}:1`, revision: 1 });
  await cr('Stage', namespace, stage, { vector: `${stage}:1` });
}
const activation = (namespace: string, stage: string) =>
  objects.create({
    apiVersion: API_VERSION,
    kind: 'VectorActivation',
    metadata: { name: `to-${stage}-1`, namespace },
    spec: { stage, stageVersion: `${stage}-1` },
  });
const finals = await watchFinal(kc, [a, b]);
const finished = (namespace: string, name: string) => finals.of(namespace, name);
/** When B's activations' first ActivationExecution appeared, by activation name. */
const begun = new Map<string, number>();
const executions = await resumingWatch(
  kc,
  `/apis/${GROUP}/${VERSION}/namespaces/${b}/activationexecutions`,
  (_t, o: { spec?: { vectorActivation?: string } }) => {
    const va = o.spec?.vectorActivation;
    if (va && !begun.has(va)) begun.set(va, performance.now());
  },
);

const system = await startSleepySystem(cp, kc, systemNs, [a, b], `-${id}`, { stageController: false });

/** B's activation on `stage`: its scheduling delay (create → first execution) and create → final, ms. */
async function timeB(stage: string): Promise<{ delay: number; total: number }> {
  const name = `to-${stage}-1`;
  const t = performance.now();
  await activation(b, stage);
  const final = await finished(b, name);
  const at = await pollUntil(() => begun.get(name), 60_000, `${name}'s first ActivationExecution`, 2);
  return { delay: at - t, total: final.at - t };
}
const median = (xs: number[]) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)]!;

for (let r = 0; r < RUNS * 2; r++) await seedStage(b, `b${r}`);
for (let i = 0; i < BURST; i++) await seedStage(a, `a${i}`);

// One activation first, unmeasured: the first of a fresh process pays for its code's first runs.
await seedStage(b, 'warm');
await timeB('warm');
const idle: { delay: number; total: number }[] = [];
for (let r = 0; r < RUNS; r++) idle.push(await timeB(`b${r}`));

// The burst: every activation of A created at once, then B's, one after another, while A's are
// queued or running (a sample taken after A's burst ended would measure an idle system).
const burstStarted = performance.now();
await Promise.all(Array.from({ length: BURST }, (_, i) => activation(a, `a${i}`)));
const created = performance.now() - burstStarted;
let burstOver = false;
const burst = Promise.all(Array.from({ length: BURST }, (_, i) => finished(a, `to-a${i}-1`))).then(
  () => (burstOver = true),
);
const loaded: { delay: number; total: number }[] = [];
for (let r = 0; r < RUNS && !burstOver; r++) {
  const sample = await timeB(`b${RUNS + r}`);
  if (!burstOver) loaded.push(sample);
}
await burst;
const burstDone = performance.now() - burstStarted;
if (!loaded.length)
  throw new Error(`the burst of ${BURST} ended before one activation of ${b} did: no loaded sample (a larger --burst)`);

const ms = (xs: { delay: number }[]) => xs.map((x) => Math.round(x.delay));
const idleMs = Math.round(median(idle.map((x) => x.delay)));
const loadedMs = Math.round(median(loaded.map((x) => x.delay)));
const ratio = Number((loadedMs / idleMs).toFixed(2));
console.log(
  `fairness: at most ${LIMIT || 'unlimited'} Stages per namespace; ${BURST} activations in ${a} (created in ${Math.round(created)} ms, all done after ${Math.round(burstDone)} ms)`,
);
console.log(
  `  scheduling delay of an activation in ${b} (create → its first execution), idle: median ${idleMs} ms (${ms(idle).join(', ')})`,
);
console.log(
  `  the same during the burst: median ${loadedMs} ms (${ms(loaded).join(', ')}) = ${ratio} × idle (${loadedMs} / ${idleMs}; goal ≤ 2 ×)`,
);
console.log(
  `  create → Succeeded, task included: idle median ${Math.round(median(idle.map((x) => x.total)))} ms, loaded median ${Math.round(median(loaded.map((x) => x.total)))} ms`,
);
writeResult('fairness', {
  stagesPerNamespace: LIMIT,
  burst: BURST,
  idleMs,
  loadedMs,
  loadedOverIdle: ratio,
  idleSamplesMs: ms(idle),
  loadedSamplesMs: ms(loaded),
  burstDoneMs: Math.round(burstDone),
});
finals.stop();
executions.stop();
await system.stop();
await removeNamespaces(kc, [a, b, systemNs]);
process.exit(0);
