/**
 * bench/scale — the watch side at scale: --stages Stages (default 2000) and
 * --activations VectorActivations (default 10000) over --namespaces namespaces (default 20), all
 * activations final but --unfinished of them (default 40: 2 per namespace, each on a Stage of its
 * own, so that the per-namespace Stage limit admits them all and none supersedes another). The watcher and the Stage controller run as
 * `worker/main.ts <role>` processes with KONFIDENCE_LOG_WRITES (every apiserver and Temporal write
 * is a line), each started twice (a first start, then a restart):
 *   ready: spawn → /readyz 200 (its watches and informers listed everything);
 *   rss: its peak resident memory (VmHWM) from spawn until it went quiet (no write for
 *   --quiet-ms); heap: from its /metrics then;
 *   writes: the apiserver writes and Temporal workflow starts it sent, counted from its write log.
 * Goals: RSS ≤ 200 MB each; the watcher starts workflows for the unfinished activations only (no
 * thundering herd), and the Stage controller's restart writes nothing (its first start converges).
 * No core worker runs: the started workflows wait in a task queue of their own and are terminated
 * at the end, with the namespaces.
 * Run: npm run bench:scale [-- --namespaces 20 --stages 2000 --activations 10000 --unfinished 40]
 * Profiling one role: --roles stage-controller (or watcher) measures only it; --keep leaves the
 * seeded objects in place and prints the id to pass as --reuse ID next time (no seeding, minutes
 * saved); a run without --keep cleans up, also what a --reuse run used.
 */
import { randomBytes } from 'node:crypto';
import { createInterface } from 'node:readline';
import { Client, Connection } from '@temporalio/client';
import { API_VERSION } from '../api/group.js';
import { loadKubeConfig } from '../k8s/client.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { up } from '../scripts/env/control-plane.js';
import { freePort } from '../scripts/env/ports.js';
import { pollUntil } from '../scripts/env/process.js';
import { buildDist } from '../scripts/dist.js';
import { removeNamespaces } from '../test/support/namespaces.js';
import { seedSleepyPlan, spawnRole, untilReady, stopRole } from './fixture.js';
import { numberArg, peakRssMiB, stringArg, writeResult } from './report.js';
import { forEachLimited } from '../shared/pool.js';

buildDist(); // the roles run as the image runs them: compiled (scripts/dist.ts)

const NAMESPACES = numberArg('namespaces', 20);
const STAGES = numberArg('stages', 2000);
const ACTIVATIONS = numberArg('activations', 10_000);
const UNFINISHED = numberArg('unfinished', 40);
const QUIET_MS = numberArg('quiet-ms', 5_000);
const ROLES = (stringArg('roles') ?? 'stage-controller,watcher').split(',') as ('stage-controller' | 'watcher')[];
for (const role of ROLES)
  if (role !== 'stage-controller' && role !== 'watcher')
    throw new Error(`--roles: stage-controller, watcher or both (comma-separated), not ${role}`);
const KEEP = process.argv.includes('--keep');
const REUSE = stringArg('reuse');

const cp = await up(() => undefined);
const kc = loadKubeConfig(cp.kubeconfig);
const objects = new CustomObjects(kc);
const id = REUSE ?? randomBytes(3).toString('hex');
const systemNs = `scale-${id}-sys`;
const suffix = `-scale-${id}`;
const names = Array.from({ length: NAMESPACES }, (_, i) => `scale-${id}-${i}`);
const stagesPer = Math.ceil(STAGES / NAMESPACES);
const activationsPer = Math.ceil(ACTIVATIONS / NAMESPACES);
const unfinishedPer = Math.ceil(UNFINISHED / NAMESPACES);

const cr = (kind: string, namespace: string, name: string, spec: unknown) =>
  objects.create({ apiVersion: API_VERSION, kind, metadata: { name, namespace }, spec });

// --- seed: per namespace, Stages already serving their StageVersion, and mostly final activations
const stageWork = names.flatMap((ns) => Array.from({ length: stagesPer }, (_, i) => ({ ns, stage: `s${i}` })));
const activationWork = names.flatMap((ns) =>
  Array.from({ length: activationsPer }, (_, j) => ({ ns, j, open: j < unfinishedPer })),
);
const seeded = performance.now();
if (!REUSE) {
  await seedSleepyPlan(kc, names, systemNs, 0); // creates the namespaces too
  await forEachLimited(stageWork, 16, async ({ ns, stage }) => {
    await cr('StageVersion', ns, `${stage}-1`, { stage, vector: `bench/${stage}:1`, revision: 1 });
    await cr('StageVersionUsage', ns, `${stage}-active`, {
      reason: `serves Stage ${stage}`,
      stageVersionRef: { name: `${stage}-1` },
    });
    await cr('Stage', ns, stage, { vector: `bench/${stage}:1` });
  });
  await forEachLimited(activationWork, 16, async ({ ns, j, open }) => {
    // The unfinished ones on a Stage each (s0, s1, …: 2 per namespace by default, within the default
    // Stage limit), so that each needs a workflow: on one Stage the older would end Skipped unstarted.
    const stage = open ? `s${j}` : `s${j % stagesPer}`;
    const name = `${open ? 'open' : 'done'}-${j}`;
    await cr('VectorActivation', ns, name, { stage, stageVersion: `${stage}-1` });
    if (!open)
      await objects.patchStatus('VectorActivation', ns, name, {
        phase: 'Succeeded',
        reason: 'Bench',
        message: 'finished before the bench',
      });
  });
}
console.log(
  `${REUSE ? 'reused' : 'seeded'} ${names.length} namespaces: ${stageWork.length} Stages (with StageVersion and active usage), ${activationWork.length} VectorActivations (${names.length * unfinishedPer} unfinished) in ${Math.round((performance.now() - seeded) / 1000)} s`,
);

const metric = (text: string, name: string) =>
  Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

interface Start {
  role: string;
  start: 'first' | 'restart';
  readyMs: number;
  quietMs: number;
  rssMiB: number;
  heapMiB: number;
  heapTotalMiB: number;
  externalMiB: number;
  apiserverWrites: number;
  workflowStarts: number;
}

/** One start of a role: until it is ready and then quiet; its figures; then SIGTERM. */
async function measure(role: 'watcher' | 'stage-controller', start: Start['start']): Promise<Start> {
  const port = await freePort();
  const begun = performance.now();
  const child = spawnRole(
    cp,
    role,
    systemNs,
    {
      KONFIDENCE_QUEUE_SUFFIX: suffix,
      KONFIDENCE_WATCH_NAMESPACES: names.join(','),
      KONFIDENCE_HEALTH_PORT: String(port),
      KONFIDENCE_LOG_WRITES: 'true',
      KONFIDENCE_LOG_LEVEL: 'warn',
    },
    ['ignore', 'pipe', 'inherit'],
  );
  const writes: { at: number; what: string }[] = [];
  createInterface({ input: child.stdout! }).on(
    'line',
    (l) => l.startsWith('[write] ') && writes.push({ at: performance.now(), what: l }),
  );
  try {
    await untilReady(port, `the ${role}`, 300_000, 50);
    const readyMs = performance.now() - begun;
    // Quiet: no write for QUIET_MS (its start-up work is done).
    await pollUntil(
      () => performance.now() - (writes.at(-1)?.at ?? begun + readyMs) >= QUIET_MS,
      600_000,
      `the ${role} to go quiet`,
      200,
    );
    const quietMs = (writes.at(-1)?.at ?? begun + readyMs) - begun;
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return {
      role,
      start,
      readyMs: Math.round(readyMs),
      quietMs: Math.round(quietMs),
      rssMiB: peakRssMiB(child.pid!),
      heapMiB: +(metric(text, 'nodejs_heap_size_used_bytes') / 2 ** 20).toFixed(1),
      heapTotalMiB: +(metric(text, 'nodejs_heap_size_total_bytes') / 2 ** 20).toFixed(1),
      externalMiB: +(metric(text, 'nodejs_external_memory_bytes') / 2 ** 20).toFixed(1),
      apiserverWrites: writes.filter((w) => / k8s /.test(w.what)).length,
      workflowStarts: writes.filter((w) => / temporal start /.test(w.what)).length,
    };
  } finally {
    await stopRole(child);
  }
}

const starts: Start[] = [];
const connection = await Connection.connect({ address: cp.temporalAddress });
const client = new Client({ connection, namespace: cp.testTemporalNamespace });
try {
  for (const role of ROLES) {
    for (const start of ['first', 'restart'] as const) {
      const s = await measure(role, start);
      starts.push(s);
      console.log(
        `${role}, ${start} start: ready ${s.readyMs} ms, quiet after ${s.quietMs} ms, rss ${s.rssMiB} MiB, heap ${s.heapMiB} MiB, apiserver writes ${s.apiserverWrites}, workflow starts ${s.workflowStarts}`,
      );
    }
  }
} finally {
  if (KEEP) console.log(`kept the seeded objects: --reuse ${id}`);
  else await cleanUp();
}
async function cleanUp() {
  for await (const wf of client.workflow.list({
    query: `TaskQueue = 'konfidence-core${suffix}' AND ExecutionStatus = 'Running'`,
  })) {
    await client.workflow
      .getHandle(wf.workflowId)
      .terminate('bench/scale is done')
      .catch(() => undefined);
  }
  await removeNamespaces(kc, [...names, systemNs]);
}
await connection.close();
console.table(starts);
const unfinished = names.length * unfinishedPer;
writeResult('scale', {
  namespaces: names.length,
  stages: stageWork.length,
  activations: activationWork.length,
  unfinished,
  starts,
});
process.exit(0);
