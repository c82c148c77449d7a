/**
 * bench/progressive — what a progression costs, on the real local servers:
 *   canary: a canary of three weights (10 %, 50 %, then 100 %), no pauses, against a plain switch
 *     on the same Stage, create → Succeeded, in interleaved pairs (no analysis here, so no analysis
 *     intervals to add); its 4 steps more, each against the step of the same shape with nothing of
 *     ours in it that bench/step-shape.ts measures right after: goal ≤ 1.2×. Each role its own process, as deployed (--in-process: all
 *     of them in this one, where each status write's reactions share one event loop with the steps);
 *   gates: the CPU every process uses over a minute with --gates activations (default 1,000, one per
 *     Stage) waiting at an approval, against a minute of the same system with the same Stages and
 *     nothing waiting, measured in one run; goal: indistinguishable from idle. Each role runs as its
 *     own process (the compiled build, as its Deployment runs it), so each one's CPU, apiserver
 *     requests over the minute and peak RSS (VmHWM) over the run are told apart; goal: the watcher
 *     and the Stage controller within their 200 MB, the core worker within its Deployment's request.
 * Run: npx tsx bench/progressive.ts [--pairs 10] [--gates 1000] [--namespaces 20] [--seconds 60] [--batch 50] [--settle 120] [--hold 0] [--canary-only [--in-process] | --gates-only]
 *   --hold: seconds the activations go on waiting after the measured minute (an hour: 3600), the
 *   core worker's RSS sampled every 10 s from the last one at its gate to the end.
 *   --settle: seconds between the last activation at its gate and the measured minute, as idle is
 *   measured two minutes after the start (the steady wait, not the burst's garbage collection).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { API_VERSION, GROUP, VERSION } from '../api/group.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { pollUntil } from '../scripts/env/process.js';
import { forEachLimited } from '../shared/pool.js';
import { activationWorkflowId, approveUpdate } from '../shared/activation.js';
import { stageLockWorkflowId } from '../stage-lock/contract.js';
import { removeNamespaces } from '../test/support/namespaces.js';
import { resumingWatch } from '../test/support/watch.js';
import { Client, Connection } from '@temporalio/client';
import { buildDist } from '../scripts/dist.js';
import { deployedSleepySystem, seedBench, seededBenchSystem, seedSleepyPlan, startRole } from './fixture.js';
import { metricSamples } from './prometheus-text.js';
import {
  apiserverRequests,
  cpuNow,
  cpuProcesses,
  cpuSeconds,
  diff,
  runBench,
  numberArg,
  peakRssMiB,
  rssMiB,
  stats,
  writeResult,
} from './report.js';

const PAIRS = Math.min(numberArg('pairs', 10), 16); // 2 StageVersions a pair, history limit 100
const GATES = numberArg('gates', 1000);
const SECONDS = numberArg('seconds', 60);
const NAMESPACES = numberArg('namespaces', 20);
/** Seconds the activations go on waiting after the measured minute, the core worker's memory sampled throughout. */
const HOLD = numberArg('hold', 0);
/** Approvals timed at the end, of the activations that waited longest. */
const WOKEN = 20;
/** The canary's system in this process rather than each role in its own. */
const IN_PROCESS = process.argv.includes('--in-process');
const BATCH = numberArg('batch', 50);
Runtime.install({ logger: new DefaultLogger('ERROR') });

/** What each part started and must close, newest first: on its end, a failure or a signal alike. */
const cleanups: (() => Promise<unknown>)[] = [];
async function closeAll(): Promise<void> {
  while (cleanups.length) await cleanups.pop()!().catch((err: unknown) => console.error(`cleaning up: ${String(err)}`));
}
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.once(signal, () => void closeAll().finally(() => process.exit(130)));

/** CPU seconds of each of a process' threads by name (its task folder's comm; a thread's stat is /proc/TID/stat). */
function threadCpu(pid: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, 'utf8')
        .trim()
        .replace(/[0-9]+$/, '');
      const seconds = cpuSeconds(Number(tid));
      if (Number.isFinite(seconds)) out[name] = (out[name] ?? 0) + seconds;
    } catch {
      // the thread ended meanwhile
    }
  }
  return out;
}

// --- a canary of three weights against a plain switch ------------------------------------------

/**
 * The bench namespace's Stage, StageVersions, routes and plans, and the system serving it: every role
 * its own process as deployed (the core worker, the watcher, the Stage controller, one executor
 * worker per type), or with --in-process all of them in this one.
 */
async function canarySystem(prefix: string, revisions: number) {
  if (IN_PROCESS) {
    const { kc, ns, systemNs, system } = await seededBenchSystem(prefix, revisions);
    cleanups.push(
      () => removeNamespaces(kc, [ns, systemNs]),
      () => system.stop(),
    );
    return { kc, ns, systemNs };
  }
  const { up } = await import('../scripts/env/control-plane.js');
  const { loadKubeConfig } = await import('../k8s/client.js');
  const cp = await up(() => undefined);
  const kc = loadKubeConfig(cp.kubeconfig);
  const ns = `${prefix}-${randomBytes(3).toString('hex')}`;
  const systemNs = `${ns}-sys`;
  cleanups.push(() => removeNamespaces(kc, [ns, systemNs]));
  await seedBench(kc, ns, systemNs, revisions);
  buildDist();
  const roles = await Promise.all([
    ...(['core', 'watcher', 'stage-controller'] as const).map((role) => startRole(cp, role, systemNs, [ns], `-${ns}`)),
    ...['gateway-api', 'istio'].map((type) =>
      startRole(cp, 'executor', systemNs, [ns], `-${ns}`, { executorType: type }),
    ),
  ]);
  cleanups.push(() => Promise.all(roles.map((r) => r.stop())));
  return { kc, ns, systemNs };
}

async function canaryAgainstPlain() {
  const { kc, ns, systemNs } = await canarySystem('prog', PAIRS * 2 + 1);
  const objects = new CustomObjects(kc);
  // The same two steps as the plain plan (Gateway API, then Istio), at 10 %, 50 %, then 100 %.
  await objects.create({
    apiVersion: API_VERSION,
    kind: 'ActivationExecutionPlan',
    metadata: { name: 'canary', namespace: systemNs },
    spec: {
      steps: [
        { name: 'gateway', tasks: ['gateway'] },
        { name: 'mesh', tasks: ['mesh'] },
      ],
      progression: { steps: [{ setWeight: 10 }, { setWeight: 50 }] },
    },
  });
  // The first switch makes revision 1 "previous" of the rest: every canary shares with a version.
  await objects.create({
    apiVersion: API_VERSION,
    kind: 'StageVersionUsage',
    metadata: { name: 'bench-active', namespace: ns },
    spec: { reason: 'bench', stageVersionRef: { name: 'bench-1' } },
  });
  const seen = new Map<string, number>();
  const watch = await resumingWatch(
    kc,
    `/apis/${GROUP}/${VERSION}/namespaces/${ns}/vectoractivations`,
    (_t, o: any) => {
      if (o.status?.phase === 'Succeeded' && !seen.has(o.metadata.name)) seen.set(o.metadata.name, Date.now());
    },
  );
  cleanups.push(async () => watch.stop());
  const run = async (r: number, plan?: string) => {
    const at = Date.now();
    await objects.create({
      apiVersion: API_VERSION,
      kind: 'VectorActivation',
      metadata: { name: `to-${r}`, namespace: ns },
      spec: { stage: 'bench', stageVersion: `bench-${r}`, ...(plan ? { executionPlan: plan } : {}) },
    });
    return (await pollUntil(() => seen.get(`to-${r}`), 120_000, `to-${r} Succeeded`, 5)) - at;
  };
  const plain: number[] = [];
  const canary: number[] = [];
  let r = 1;
  for (let i = 0; i < PAIRS; i++) {
    // Interleaved, and each side first in turn: a drift of the machine lands on both.
    if (i % 2 === 0) {
      plain.push(await run(++r));
      canary.push(await run(++r, 'canary'));
    } else {
      canary.push(await run(++r, 'canary'));
      plain.push(await run(++r));
    }
  }
  await closeAll();
  const p = stats(plain);
  const c = stats(canary);
  const ratio = +(c.median / p.median).toFixed(2);
  console.log(`plain switch, create → Succeeded (ms): ${JSON.stringify(p)}`);
  console.log(`canary 10 % → 50 % → 100 %, create → Succeeded (ms): ${JSON.stringify(c)}`);
  console.log(
    `canary / plain: ${ratio}× (${c.median} ms vs ${p.median} ms, medians of ${PAIRS} interleaved pairs; ${IN_PROCESS ? 'every role in this process' : 'each role its own process'})`,
  );
  // The canary's 4 steps more than the plain switch, each against one more step of the same shape
  // with nothing of ours in it (bench/step-shape.ts), measured right after on the same servers.
  const oursPerStepMs = Math.round((c.median - p.median) / 4);
  const shape = stepShape(PAIRS);
  const bare = shape?.bare?.perStepMs as number | undefined;
  const stepOverBare = bare ? +(oursPerStepMs / bare).toFixed(2) : undefined;
  console.log(
    `the canary's step: ${oursPerStepMs} ms; Temporal's bare step ${bare ?? '?'} ms, with a step's apiserver requests ${shape?.writes?.perStepMs ?? '?'} ms (bench/step-shape.ts); ours / bare ${stepOverBare ?? '?'}× (goal ≤ 1.2×)`,
  );
  return {
    plainMs: p,
    canaryMs: c,
    canaryOverPlain: ratio,
    oursPerStepMs,
    stepShape: shape,
    stepOverBare,
    met: stepOverBare !== undefined && stepOverBare <= 1.2,
    layout: IN_PROCESS ? 'in-process' : 'processes',
  };
}

/** bench/step-shape.ts run now, in a process of its own: its figures, or undefined when it failed. */
function stepShape(pairs: number): any {
  const run = runBench('step-shape', ['--pairs', String(pairs)]);
  if (run.status !== 0) process.stderr.write(run.stderr);
  return run.status === 0 ? run.result : undefined;
}

// --- a thousand activations waiting at gates, against idle ----------------------------------------

async function gatesAgainstIdle() {
  const { up } = await import('../scripts/env/control-plane.js');
  const { loadKubeConfig } = await import('../k8s/client.js');
  const cp = await up(() => undefined);
  const kc = loadKubeConfig(cp.kubeconfig);
  const id = randomBytes(3).toString('hex');
  // Spread over namespaces as Stages are (bench/scale.ts likewise): NAMESPACES of GATES / NAMESPACES Stages each.
  const namespaces = Array.from({ length: NAMESPACES }, (_, i) => `gates-${id}-${i}`);
  const systemNs = `gates-${id}-sys`;
  const objects = new CustomObjects(kc);
  cleanups.push(() => removeNamespaces(kc, [...namespaces, systemNs]));
  await seedSleepyPlan(kc, namespaces, systemNs, 0);
  // The default plan's one step at 10 %, then an approval that waits a day.
  await objects.mergeSpec('ActivationExecutionPlan', systemNs, 'default', {
    progression: { steps: [{ setWeight: 10 }, { pause: { timeoutSeconds: 86400 } }] },
  });
  const stages = Array.from({ length: GATES }, (_, i) => ({ ns: namespaces[i % NAMESPACES]!, stage: `g${i}` }));
  console.log(`seeding ${GATES} Stages in ${NAMESPACES} namespaces, each with two StageVersions, the first active...`);
  const cr = (ns: string, kind: string, name: string, spec: unknown) =>
    objects.create({ apiVersion: API_VERSION, kind, metadata: { name, namespace: ns }, spec });
  await forEachLimited(stages, 16, async ({ ns, stage }) => {
    await cr(ns, 'StageVersion', `${stage}-1`, { stage, vector: 'gate:1', revision: 1 });
    await cr(ns, 'StageVersion', `${stage}-2`, { stage, vector: 'gate:2', revision: 2 });
    await cr(ns, 'StageVersionUsage', `${stage}-active`, { reason: 'bench', stageVersionRef: { name: `${stage}-1` } });
    await cr(ns, 'Stage', stage, { vector: 'gate:2' });
  });
  const suffix = `-${id}`;
  // Closed after the system (its watcher would close the terminated runs out): the activations'
  // workflows and their Stages' locks, then (above) the namespaces.
  const client = new Client({
    connection: await Connection.connect({ address: cp.temporalAddress }),
    namespace: cp.testTemporalNamespace,
  });
  const refs: string[] = [];
  cleanups.push(async () => {
    const locks = stages.map(({ ns, stage }) => stageLockWorkflowId(ns, stage));
    await forEachLimited([...refs, ...locks], 16, (wf) =>
      client.workflow
        .getHandle(wf)
        .terminate('bench/progressive is done')
        .catch(() => undefined),
    );
    await client.connection.close();
  });
  // Each role as its own process, as a deployment runs it, so that each one's CPU and peak memory
  // is its own; the `sleepy` executor does nothing while activations wait.
  const system = await deployedSleepySystem(cp, kc, systemNs, namespaces, suffix);
  cleanups.push(system.stop);
  const corePid = system.pids.core;
  const processes = { ...cpuProcesses(cp.pids), ...system.pids };
  const settle = async () => new Promise((r) => setTimeout(r, numberArg('settle', 120) * 1000));
  /** What Temporal's server did (its own metrics): persistence requests and tasks, summed by name. */
  const temporalWork = async () => {
    const text = await (await fetch(`http://127.0.0.1:${cp.ports.temporalMetrics}/metrics`)).text().catch(() => '');
    const sums: Record<string, number> = {};
    for (const { name, labels, value } of metricSamples(text)) {
      if (name !== 'persistence_requests' && name !== 'service_requests') continue;
      const key = `${name}:${labels.operation ?? ''}`;
      sums[key] = (sums[key] ?? 0) + value;
    }
    return sums;
  };
  const minute = async () => {
    const before = cpuNow(processes);
    const threadsBefore = threadCpu(corePid);
    const requestsBefore = apiserverRequests(cp.kubeconfig);
    const workBefore = await temporalWork();
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, SECONDS * 1000));
    const wall = (performance.now() - t0) / 1000;
    const after = cpuNow(processes);
    const workAfter = await temporalWork();
    const work = Object.fromEntries(
      Object.keys(workAfter)
        .map((k) => [k, Math.round(workAfter[k]! - (workBefore[k] ?? 0))] as const)
        .filter(([, n]) => n > 0)
        .sort((a, b) => b[1] - a[1])
        .slice(0, 10),
    );
    console.log(`  Temporal's server over the ${SECONDS} s: ${JSON.stringify(work)}`);
    const threadsAfter = threadCpu(corePid);
    const threads = Object.keys(threadsAfter)
      .map((k) => [k, +(((threadsAfter[k]! - (threadsBefore[k] ?? 0)) / wall) * 100).toFixed(2)] as const)
      .filter(([, pct]) => pct > 0)
      .sort((a, b) => b[1] - a[1]);
    console.log(`  the core worker's threads, CPU % of one core: ${JSON.stringify(Object.fromEntries(threads))}`);
    const requests = [...diff(apiserverRequests(cp.kubeconfig), requestsBefore)].sort((x, y) => y[1] - x[1]);
    console.log(`  kube-apiserver's requests over the ${SECONDS} s: ${JSON.stringify(Object.fromEntries(requests))}`);
    return Object.fromEntries(
      Object.keys(processes).map((k) => [k, +(((after[k]! - before[k]!) / wall) * 100).toFixed(2)]),
    );
  };
  // Idle: the same Stages, nothing running, once the system is done with its start (two minutes:
  // the Stage controller's first passes over a thousand Stages take most of one).
  await new Promise((r) => setTimeout(r, 120_000));
  const idle = await minute();
  console.log(`idle, ${GATES} Stages, CPU % of one core over ${SECONDS} s: ${JSON.stringify(idle)}`);

  console.log(`starting ${GATES} activations, each to wait at its approval...`);
  const atGate = new Set<string>();
  const watches = await Promise.all(
    namespaces.map((ns) =>
      resumingWatch(kc, `/apis/${GROUP}/${VERSION}/namespaces/${ns}/vectoractivations`, (_t, o: any) => {
        if (o.status?.progression?.gate?.type === 'Approval') atGate.add(`${ns}/${o.metadata.name}`);
      }),
    ),
  );
  cleanups.push(async () => watches.forEach((w) => w.stop()));
  const started = Date.now();
  // In waves of BATCH, each at its gate before the next starts: what is measured is the wait, not
  // how a burst of a thousand at once is absorbed (bench/throughput.ts measures that).
  for (let i = 0; i < stages.length; i += BATCH) {
    await forEachLimited(stages.slice(i, i + BATCH), 16, async ({ ns, stage }) => {
      const { object } = await cr(ns, 'VectorActivation', `${stage}-to-2`, { stage, stageVersion: `${stage}-2` });
      refs.push(activationWorkflowId({ namespace: ns, name: object.metadata.name, uid: object.metadata.uid! }));
    });
    const wave = Math.min(i + BATCH, stages.length);
    await pollUntil(
      () => atGate.size >= wave,
      600_000,
      `${wave} activations at their gates (${atGate.size} so far)`,
      500,
    );
  }
  const reachedMs = Date.now() - started;
  console.log(`${GATES} at their gates after ${Math.round(reachedMs / 1000)} s`);
  // The core worker's memory while they wait, every 10 s: it must stay flat, not grow with time.
  const waitStarted = Date.now();
  const coreRss: { seconds: number; rssMiB: number }[] = [];
  const sample = () =>
    coreRss.push({ seconds: Math.round((Date.now() - waitStarted) / 1000), rssMiB: rssMiB(corePid) });
  sample();
  const sampler = setInterval(sample, 10_000);
  await settle();
  const gated = await minute();
  if (HOLD > 0) {
    console.log(`holding the ${GATES} at their gates for ${HOLD} s more...`);
    await new Promise((r) => setTimeout(r, HOLD * 1000));
  }
  clearInterval(sampler);
  sample();
  // What a gate woken after its workflow left the worker's cache costs: the first activations to
  // reach their gates are the least recently used, so their approvals replay the workflow first.
  const woken: number[] = [];
  for (const workflowId of refs.slice(0, WOKEN)) {
    const t0 = performance.now();
    await client.workflow.getHandle(workflowId).executeUpdate(approveUpdate, { args: [{ by: 'bench' }] });
    woken.push(Math.round(performance.now() - t0));
  }
  console.log(`approvals of the ${WOKEN} longest waiting, answered in ms: ${JSON.stringify(stats(woken))}`);
  const waiting = coreRss.map((x) => x.rssMiB);
  const coreWhileWaiting = {
    first: waiting[0]!,
    last: waiting.at(-1)!,
    max: Math.max(...waiting),
    minutes: +(coreRss.at(-1)!.seconds / 60).toFixed(1),
  };
  console.log(`the core worker's RSS while they wait, MiB: ${JSON.stringify(coreWhileWaiting)}`);
  const peakRss = {
    ...Object.fromEntries(Object.entries(system.pids).map(([role, pid]) => [role, peakRssMiB(pid)])),
    'sleepy executor (this process, with its watches)': peakRssMiB('self'),
  };
  console.log(`${GATES} waiting at gates, CPU % of one core over ${SECONDS} s: ${JSON.stringify(gated)}`);
  console.log(`peak RSS (VmHWM) of each role over the run, MiB: ${JSON.stringify(peakRss)}`);
  await closeAll();
  const total = (x: Record<string, number>) =>
    +Object.values(x)
      .reduce((a, b) => a + b, 0)
      .toFixed(2);
  return {
    gates: GATES,
    namespaces: NAMESPACES,
    seconds: SECONDS,
    reachedGatesMs: reachedMs,
    idleCpuPercent: idle,
    gatedCpuPercent: gated,
    totalIdle: total(idle),
    totalGated: total(gated),
    peakRssMiB: peakRss,
    coreRssWhileWaitingMiB: coreWhileWaiting,
    coreRssSamples: coreRss,
    wokenApprovalMs: stats(woken),
  };
}

const part = process.argv.includes('--gates-only')
  ? 'gates'
  : process.argv.includes('--canary-only')
    ? 'canary'
    : 'both';
const figures: Record<string, unknown> = {};
try {
  if (part !== 'gates') figures.canary = await canaryAgainstPlain();
  if (part !== 'canary') figures.gates = await gatesAgainstIdle();
} finally {
  await closeAll();
}
writeResult('progressive', figures);
process.exit(0);
