/**
 * bench/throughput — succeeded activations per second sustained across 200 Stages (goal ≥ 12/s on
 * 2 cores), with p50 and p99 latency, and where the time goes: the CPU each process used over the
 * measured window (kube-apiserver, etcd, the Temporal server, and this process: every worker, the
 * watcher and the Stage controller), per activation.
 *
 * Closed loop: every Stage activates its next StageVersion as soon as the previous activation is
 * final. The Stages are spread over --namespaces namespaces (a cluster of teams, not one namespace
 * of 200 Stages), and the plan is one step of the test suite's `sleepy` executor with 0 s: what is
 * measured is orchestration (Temporal, the apiserver, our code), not a mesh.
 * --deployed: the core, the watcher and the Stage controller each in its own process as deployed
 * (compiled, with their Deployments' Node flags and malloc settings), their CPU apiece; the
 * `sleepy` executor stays in this process, with the benchmark's creates and watches; it also prints
 * the core worker's workflow tasks, local activities and workflow cache hits per activation (the
 * Temporal SDK's counters on its /metrics).
 * --profile-core DIR (with --deployed): the core runs under `node --cpu-prof`, one profile per
 * thread written to DIR as it stops (`npx tsx bench/cpu-profile.ts DIR/*.cpuprofile` sums them up);
 * the profiler's own cost is in the figures of such a run.
 * Run: npm run bench:throughput [-- --stages 200 --namespaces 20 --seconds 60 --warmup 120 --deployed [--profile-core DIR]]
 */
import { randomBytes } from 'node:crypto';
import { resolve as resolvePath } from 'node:path';
import { availableParallelism } from 'node:os';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { API_VERSION, GROUP, VERSION } from '../api/group.js';
import { k8s, loadKubeConfig } from '../k8s/client.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { up } from '../scripts/env/control-plane.js';
import { removeNamespaces } from '../test/support/namespaces.js';
import { loadConfig } from '../worker/config.js';
import { deployedSleepySystem, seedSleepyPlan, startSleepySystem } from './fixture.js';
import { countsPerActivation, describeCounts, sdkCounts, type SdkCounts } from './sdk-metrics.js';
import { cpuNow, cpuProcesses, machineCpuSeconds, numberArg, quantile, stringArg, writeResult } from './report.js';

const STAGES = numberArg('stages', 200);
const NAMESPACES = numberArg('namespaces', 20);
const SECONDS = numberArg('seconds', 60);
/**
 * Closed loop: latency is about Stages in flight / throughput, so the window opens only once the
 * first activations have come round (at 2/s, 200 Stages take 100 s for the first lap).
 */
const WARMUP = numberArg('warmup', 120);
const REVISIONS = numberArg('revisions', 12);
const DEPLOYED = process.argv.includes('--deployed');
const profileArg = stringArg('profile-core');
if (profileArg !== undefined && !DEPLOYED) throw new Error('--profile-core DIR needs --deployed');
// The core runs in the repository's root: a relative DIR is the caller's (npm's INIT_CWD under `npm run`).
const PROFILE_DIR =
  profileArg !== undefined ? resolvePath(process.env.INIT_CWD ?? process.cwd(), profileArg) : undefined;
const THIS_PROCESS = DEPLOYED ? 'this process (sleepy executor, benchmark)' : 'konfidence (this process)';
const FINAL = ['Succeeded', 'Failed', 'Skipped', 'Cancelled'];

Runtime.install({ logger: new DefaultLogger('ERROR') });
const cp = await up(() => undefined);
const kc = loadKubeConfig(cp.kubeconfig);
const objects = new CustomObjects(kc);
const id = randomBytes(3).toString('hex');
const systemNs = `tp-${id}-sys`;
const namespaces = Array.from({ length: NAMESPACES }, (_, i) => `tp-${id}-${i}`);
const stages = Array.from({ length: STAGES }, (_, i) => ({ namespace: namespaces[i % NAMESPACES]!, stage: `s${i}` }));
const cr = (kind: string, namespace: string, name: string, spec: unknown) =>
  objects.create({ apiVersion: API_VERSION, kind, metadata: { name, namespace }, spec });

await seedSleepyPlan(kc, namespaces, systemNs, 0);
// StageVersions before their Stage (else the Stage controller makes one for the vector), 20 at once.
const seeds = stages.map(({ namespace, stage }) => async () => {
  for (let r = 1; r <= REVISIONS; r++)
    await cr('StageVersion', namespace, `${stage}-${r}`, { stage, vector: `${stage}:${r}`, revision: r });
  await cr('Stage', namespace, stage, { vector: `${stage}:${REVISIONS}`, stageVersionHistoryLimit: REVISIONS + 1 });
});
for (let i = 0; i < seeds.length; i += 20) await Promise.all(seeds.slice(i, i + 20).map((s) => s()));

const system: { pids: Record<string, number>; coreMetrics?: () => Promise<string>; stop: () => Promise<unknown> } =
  DEPLOYED
    ? await deployedSleepySystem(cp, kc, systemNs, namespaces, `-tp-${id}`, {
        env: { KONFIDENCE_STAGES_PER_NAMESPACE: String(loadConfig().KONFIDENCE_STAGES_PER_NAMESPACE) },
        coreNodeFlags: PROFILE_DIR ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE_DIR}`] : [],
      })
    : { ...(await startSleepySystem(cp, kc, systemNs, namespaces, `-tp-${id}`)), pids: {} };

const created = new Map<string, number>();
const done: { at: number; ms: number; phase: string }[] = [];
const waiters = new Map<string, () => void>();
const watches = await Promise.all(
  namespaces.map((ns) =>
    new k8s.Watch(kc).watch(
      `/apis/${GROUP}/${VERSION}/namespaces/${ns}/vectoractivations`,
      {},
      (_t, o: { metadata: { name: string; namespace: string }; status?: { phase?: string } }) => {
        const key = `${o.metadata.namespace}/${o.metadata.name}`;
        const start = created.get(key);
        if (start === undefined || !FINAL.includes(o.status?.phase ?? '')) return;
        created.delete(key);
        const at = performance.now();
        done.push({ at, ms: at - start, phase: o.status!.phase! });
        waiters.get(key)?.();
      },
      () => undefined,
    ),
  ),
);

const processes: Record<string, number | undefined> = {
  ...cpuProcesses(cp.pids, THIS_PROCESS),
  ...system.pids,
};
/** Our processes: this one, and with --deployed each role's. */
const isOurs = (name: string) => name === THIS_PROCESS || name in system.pids;
// The machine's CPU beside ours: on a shared machine other work takes cores from what is measured.
const cpu = () => ({ ...cpuNow(processes), machine: machineCpuSeconds() });

const deadline = performance.now() + (WARMUP + SECONDS) * 1000;
const windowStart = performance.now() + WARMUP * 1000;
// CPU and the core's SDK counters (--deployed) are read when the window opens and when it closes,
// not after the last laps drain.
interface WindowEdge {
  cpu: Record<string, number>;
  counts: Promise<SdkCounts | undefined>;
}
/** The core's counters, or undefined (said why) when they cannot be read: no figure rather than a wrong one. */
async function readCounts(): Promise<SdkCounts | undefined> {
  if (!system.coreMetrics) return undefined;
  try {
    const counts = sdkCounts(await system.coreMetrics());
    if (counts) return counts;
    console.error("  the core's /metrics has no Temporal SDK counters: its workflow work is not reported");
  } catch (err) {
    console.error(
      `  could not read the core's /metrics (${(err as Error).message}): its workflow work is not reported`,
    );
  }
  return undefined;
}
const edge = (): WindowEdge => ({ cpu: { ...cpu(), at: performance.now() }, counts: readCounts() });
let windowOpened: WindowEdge | undefined;
let windowClosed: WindowEdge | undefined;
const windowTimers = [
  setTimeout(() => (windowOpened = edge()), WARMUP * 1000),
  setTimeout(() => (windowClosed = edge()), (WARMUP + SECONDS) * 1000),
];

async function loop({ namespace, stage }: { namespace: string; stage: string }): Promise<void> {
  for (let r = 1; r <= REVISIONS && performance.now() < deadline; r++) {
    const name = `${stage}-to-${r}`;
    const key = `${namespace}/${name}`;
    const finished = new Promise<void>((resolve) => waiters.set(key, resolve));
    created.set(key, performance.now());
    await objects.create({
      apiVersion: API_VERSION,
      kind: 'VectorActivation',
      metadata: { name, namespace },
      spec: { stage, stageVersion: `${stage}-${r}` },
    });
    await finished;
    waiters.delete(key);
  }
}
await Promise.all(stages.map(loop));
for (const t of windowTimers) clearTimeout(t);
// Every Stage ran out of StageVersions before the window closed (or even opened: no figures then).
const opened = windowOpened !== undefined;
windowOpened ??= edge();
windowClosed ??= edge();
const windowEnd = Math.min(performance.now(), deadline);
const cpuAtStart = windowOpened.cpu;
const cpuAtEnd = windowClosed.cpu;
const [coreCountsAtStart, coreCountsAtEnd] = await Promise.all([windowOpened.counts, windowClosed.counts]);
for (const w of watches) w.abort();
await system.stop();

await removeNamespaces(kc, [...namespaces, systemNs]);
if (!opened) {
  console.error(
    `throughput: every Stage ran out of its ${REVISIONS} StageVersions before the window opened: raise --revisions or lower --warmup`,
  );
  process.exit(1);
}

// Only an activation that switched its Stage counts; any other ending is reported beside it.
const ended = done.filter((d) => d.at >= windowStart && d.at <= windowEnd);
const inWindow = ended.filter((d) => d.phase === 'Succeeded');
const otherEndings = Object.fromEntries(
  [...new Set(ended.map((d) => d.phase))]
    .filter((p) => p !== 'Succeeded')
    .map((p) => [p, ended.filter((d) => d.phase === p).length]),
);
const seconds = (windowEnd - windowStart) / 1000;
const perSecond = inWindow.length / seconds;
const cpuPerActivation =
  inWindow.length === 0
    ? {}
    : Object.fromEntries(
        Object.keys(processes).map((k) => [k, Math.round(((cpuAtEnd[k]! - cpuAtStart[k]!) * 1000) / inWindow.length)]),
      );
const cpuWindowSeconds = (cpuAtEnd.at! - cpuAtStart.at!) / 1000;
const ours = Object.keys(processes).reduce((sum, k) => sum + (cpuAtEnd[k]! - cpuAtStart[k]! || 0), 0);
/** Cores busy over the window: the whole machine's, and the share of it that is ours (servers and system). */
const coresBusy = {
  machine: Number(((cpuAtEnd.machine! - cpuAtStart.machine!) / cpuWindowSeconds).toFixed(2)),
  ours: Number((ours / cpuWindowSeconds).toFixed(2)),
  cores: availableParallelism(),
};
/**
 * The most this machine could do if our processes cost nothing: its cores over the servers' CPU per
 * activation (everything measured but our processes and the machine's own).
 */
const serversMs = Object.entries(cpuPerActivation)
  .filter(([k]) => !isOurs(k))
  .reduce((sum, [, ms]) => sum + ms, 0);
const serversAllowPerSecond =
  serversMs > 0 ? Number(((availableParallelism() * 1000) / serversMs).toFixed(2)) : undefined;
const figures = {
  stages: STAGES,
  deployed: DEPLOYED,
  namespaces: NAMESPACES,
  windowSeconds: Math.round(seconds),
  succeeded: inWindow.length,
  otherEndings,
  perSecond: Number(perSecond.toFixed(2)),
  latencyMs: {
    p50: Math.round(
      quantile(
        inWindow.map((d) => d.ms),
        0.5,
      ),
    ),
    p99: Math.round(
      quantile(
        inWindow.map((d) => d.ms),
        0.99,
      ),
    ),
  },
  cpuMsPerActivation: cpuPerActivation,
  ...(coreCountsAtStart && coreCountsAtEnd && inWindow.length > 0
    ? { coreWorkPerActivation: countsPerActivation(coreCountsAtStart, coreCountsAtEnd, inWindow.length) }
    : {}),
  serversMsPerActivation: serversMs,
  serversAllowPerSecond,
  coresBusy,
  ranOutOfRevisions: performance.now() < deadline,
};
console.log(
  `throughput: ${figures.perSecond} activations/s over ${figures.windowSeconds} s across ${STAGES} Stages in ${NAMESPACES} namespaces (goal ≥ 6/s; the servers' CPU alone allows ${serversAllowPerSecond ?? '?'}/s on ${availableParallelism()} cores); latency p50 ${figures.latencyMs.p50} ms, p99 ${figures.latencyMs.p99} ms`,
);
if (Object.keys(otherEndings).length) console.log(`  not counted, ended otherwise: ${JSON.stringify(otherEndings)}`);
console.log(
  `  CPU per succeeded activation (ms): ${Object.entries(cpuPerActivation)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ')}`,
);
console.log(
  `  cores busy over the window: ${coresBusy.ours} ours of ${coresBusy.machine} on the machine (${coresBusy.cores} cores)`,
);
if (DEPLOYED) {
  const roles = Object.keys(system.pids).reduce((sum, k) => sum + (cpuPerActivation[k] ?? 0), 0);
  console.log(`  our roles as deployed (${Object.keys(system.pids).join(' + ')}): ${roles} ms an activation`);
  if (figures.coreWorkPerActivation)
    console.log(`  the core worker per succeeded activation: ${describeCounts(figures.coreWorkPerActivation)}`);
}
if (figures.ranOutOfRevisions)
  console.log(`  note: the Stages ran out of their ${REVISIONS} StageVersions before the window ended (--revisions)`);
writeResult('throughput', figures);
process.exit(0);
