/**
 * bench/cost — what one activation costs, and how far it is from the floor:
 *   cost:  apiserver requests of our processes (kube-apiserver's audit log, by user agent
 *          konfidence-activation/<role>; by verb and resource) from the activation's create until
 *          the apiserver's counters settle, and Temporal history events (the activation's workflow
 *          and its Stage lock's run) per two-step activation, the system otherwise idle;
 *   floor: our processes' requests from the activation's create to its Succeeded, made
 *          back to back by a plain client (a read as a GET or LIST of an object of the same
 *          resource, a write as a merge patch of one; see requestFloor), and the activation's
 *          create → Succeeded as a multiple of that time. Goal ≤ 2×. Each activation is measured
 *          right beside a floor (on a shared machine the speed of both drifts within a run); the
 *          figure is the median pair, its two times printed beside its ratio.
 * Run: npm run bench:cost [-- --runs N --pairs M]; figures also go to bench/results/cost-<time>.json.
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { k8s } from '../k8s/client.js';
import { resumingWatch } from '../test/support/watch.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { pollUntil } from '../scripts/env/process.js';
import { activationWorkflowId } from '../shared/activation.js';
import { stageLockWorkflowId } from '../stage-lock/contract.js';
import { benchActivation, seededBenchSystem } from './fixture.js';
import { apiserverRequests, auditLog, numberArg, ours, writeResult } from './report.js';

const RUNS = numberArg('runs', 5);
/** Activation and floor side by side this many times; the ratio is their median. */
const PAIRS = numberArg('pairs', 9);

Runtime.install({ logger: new DefaultLogger('ERROR') });
const { cp, kc, ns, systemNs, system } = await seededBenchSystem('cost', RUNS + PAIRS + 2);
const objects = new CustomObjects(kc);

const requestCounts = () => apiserverRequests(cp.kubeconfig);

/** Waits until the counters stop moving (the activation's trailing writes), at most 10 s. */
async function settledCounts(): Promise<Map<string, number>> {
  let last = requestCounts();
  await pollUntil(
    async () => {
      await new Promise((r) => setTimeout(r, 700));
      const now = requestCounts();
      const same = [...now].every(([k, v]) => last.get(k) === v);
      last = now;
      return same || undefined;
    },
    10_000,
    'the apiserver counters to settle',
    0,
  ).catch(() => undefined);
  return last;
}

// Phases as this process sees them, through a watch: a WATCH is not counted, polling would be.
const succeeded = new Set<string>();
const watch = await resumingWatch(
  kc,
  `/apis/landscape.konfidence.cloud/v1alpha1/namespaces/${ns}/vectoractivations`,
  (_t, o: { metadata: { name: string }; status?: { phase?: string } }) => {
    if (o.status?.phase === 'Succeeded') succeeded.add(o.metadata.name);
  },
);

/**
 * Creates to-<r> once the counters are still, and waits for it to succeed: its create → Succeeded,
 * and when (ms since the epoch) it was created and seen Succeeded, for the audit log's count.
 */
async function timedActivation(r: number) {
  await settledCounts();
  const createdAt = Date.now();
  const start = performance.now();
  const created = await objects.create(benchActivation(ns, r));
  await pollUntil(
    () => succeeded.has(`to-${r}`) || undefined,
    60_000,
    `to-${r} Succeeded${watch.ended ? ` (${watch.ended})` : ''}`,
    2,
  );
  return {
    createdAt,
    succeededAt: Date.now(),
    uid: created.object.metadata.uid!,
    activationMs: performance.now() - start,
  };
}

type Window = { ms: number; requests: Map<string, number> };
const runs: (Window & { toSucceeded: Window; historyEvents: number; lockEvents: number })[] = [];
/** The Stage lock's run and its history length: a lingering lock serves runs one after the other. */
async function lockNow(): Promise<{ runId: string; length: number }> {
  try {
    const d = await system.client.workflow.getHandle(stageLockWorkflowId(ns, 'bench')).describe();
    return { runId: d.runId, length: d.historyLength };
  } catch {
    return { runId: '', length: 0 }; // none runs yet
  }
}

// Our processes' requests, as the apiserver's audit log records them with their user agent: this
// process' own (the creates, the bench's reads) are not among them.
const audit = auditLog(kc);
for (let r = 2; r <= RUNS + 2; r++) {
  const lockBefore = await lockNow();
  const { createdAt, succeededAt, uid } = await timedActivation(r);
  await settledCounts();
  const settledAt = Date.now();
  const workflow = await system.client.workflow
    .getHandle(activationWorkflowId({ namespace: ns, name: `to-${r}`, uid }))
    .describe();
  const lock = await lockNow();
  // This activation's events of the lock: what its run gained, or all of a run it started.
  const lockEvents = lock.runId === lockBefore.runId ? lock.length - lockBefore.length : lock.length;
  if (r === 2) continue; // the first warms up
  // Its whole cost (until the counters settle), and what it asked on its way to Succeeded.
  const requests = await audit.count(createdAt, settledAt, ours);
  const toSucceeded = { ms: succeededAt - createdAt, requests: await audit.count(createdAt, succeededAt, ours) };
  runs.push({ ms: settledAt - createdAt, requests, toSucceeded, historyEvents: workflow.historyLength, lockEvents });
}

// What our processes ask when nothing happens (the elected roles' Lease renewals, the Stage
// controller's periodic pass), over as long as a run's window, is not the activation's: subtracted
// pro rata.
await settledCounts();
const idleFrom = Date.now();
await new Promise((r) => setTimeout(r, Math.max(...runs.map((x) => x.ms))));
const idle: Window = { ms: Date.now() - idleFrom, requests: await audit.count(idleFrom, Date.now(), ours) };
for (const window of runs.flatMap((run) => [run, run.toSucceeded])) {
  for (const [k, v] of idle.requests) {
    const left = (window.requests.get(k) ?? 0) - Math.round((v * window.ms) / idle.ms);
    if (left > 0) window.requests.set(k, left);
    else window.requests.delete(k);
  }
}

/**
 * The floor: the median run's requests from its create to its Succeeded, made one after the other by this process. A read is a GET
 * (or LIST) of an object of the same resource in the bench namespaces, a write a merge patch of an
 * annotation on one (a create is an Event, the commonest create); where the bench has no object of
 * the resource, a ConfigMap stands in.
 */
async function requestFloor(requests: Map<string, number>): Promise<{ ms: number; made: number }> {
  const api = k8s.KubernetesObjectApi.makeApiClient(kc);
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const scratch = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'floor', namespace: ns } };
  await api.create(scratch).catch(() => undefined);
  const targets: Record<string, { apiVersion: string; kind: string; metadata: { name: string; namespace: string } }> = {
    vectoractivations: {
      apiVersion: 'landscape.konfidence.cloud/v1alpha1',
      kind: 'VectorActivation',
      metadata: { name: 'to-2', namespace: ns },
    },
    stages: {
      apiVersion: 'landscape.konfidence.cloud/v1alpha1',
      kind: 'Stage',
      metadata: { name: 'bench', namespace: ns },
    },
    stageversions: {
      apiVersion: 'landscape.konfidence.cloud/v1alpha1',
      kind: 'StageVersion',
      metadata: { name: 'bench-1', namespace: ns },
    },
    httproutes: {
      apiVersion: 'gateway.networking.k8s.io/v1',
      kind: 'HTTPRoute',
      metadata: { name: 'bench', namespace: ns },
    },
    virtualservices: {
      apiVersion: 'networking.istio.io/v1',
      kind: 'VirtualService',
      metadata: { name: 'bench', namespace: ns },
    },
    activationexecutionplans: {
      apiVersion: 'landscape.konfidence.cloud/v1alpha1',
      kind: 'ActivationExecutionPlan',
      metadata: { name: 'default', namespace: systemNs },
    },
  };
  const target = (key: string) =>
    targets[
      key
        .split(' ')[1]!
        .split('/')
        .find((p) => targets[p]) ?? ''
    ] ?? scratch;
  let made = 0;
  const t = performance.now();
  for (const [key, count] of requests) {
    const verb = key.split(' ')[0]!;
    const o = target(key);
    for (let i = 0; i < count; i++, made++) {
      if (verb === 'GET') await api.read(o);
      else if (verb === 'LIST') await api.list(o.apiVersion, o.kind, o.metadata.namespace);
      else if (verb === 'POST' && key.includes('events'))
        await core.createNamespacedEvent({
          namespace: ns,
          body: {
            metadata: { generateName: 'floor-' },
            involvedObject: { kind: 'ConfigMap', name: 'floor', namespace: ns },
            reason: 'Floor',
            message: 'floor',
            type: 'Normal',
          },
        });
      else
        await api.patch(
          { ...o, metadata: { ...o.metadata, annotations: { 'bench/floor': String(made) } } },
          undefined,
          undefined,
          undefined,
          undefined,
          k8s.PatchStrategy.MergePatch,
        );
    }
  }
  return { ms: performance.now() - t, made };
}

const median = <T>(xs: T[], by: (x: T) => number) => [...xs].sort((a, b) => by(a) - by(b))[Math.floor(xs.length / 2)]!;
const typical = median(runs, (x) => [...x.requests.values()].reduce((a, b) => a + b, 0));
const typicalToSucceeded = median(runs, (x) =>
  [...x.toSucceeded.requests.values()].reduce((a, b) => a + b, 0),
).toSucceeded;
// Side by side: an activation, then the floor of the typical one's requests, PAIRS times.
const pairs: { activationMs: number; floorMs: number; made: number }[] = [];
for (let r = RUNS + 3; r <= RUNS + PAIRS + 2; r++) {
  const { activationMs } = await timedActivation(r);
  await settledCounts();
  const floor = await requestFloor(typicalToSucceeded.requests);
  pairs.push({ activationMs, floorMs: floor.ms, made: floor.made });
}
watch.stop();
// The median pair by its ratio, and that pair's own times beside it: the ratio printed is the
// ratio of the two times printed.
const ratio = median(pairs, (p) => p.activationMs / p.floorMs);
const floor = { ms: ratio.floorMs, made: pairs[0]!.made };
const latency = ratio.activationMs;
const total = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
const writes = (m: Map<string, number>) =>
  [...m].filter(([k]) => !/^(GET|LIST) /.test(k)).reduce((a, [, v]) => a + v, 0);

const result = {
  runs: runs.length,
  idleRequestsPerSecond: Number(((total(idle.requests) * 1000) / idle.ms).toFixed(1)),
  activationMs: Math.round(latency),
  apiserverRequests: total(typical.requests),
  apiserverWrites: writes(typical.requests),
  requestsByKind: Object.fromEntries([...typical.requests].sort((a, b) => b[1] - a[1])),
  requestsToSucceeded: total(typicalToSucceeded.requests),
  writesToSucceeded: writes(typicalToSucceeded.requests),
  historyEvents: median(runs, (x) => x.historyEvents).historyEvents,
  lockHistoryEvents: median(runs, (x) => x.lockEvents).lockEvents,
  floorMs: Math.round(floor.ms),
  floorRequests: floor.made,
  activationOverFloor: Number((Math.round(ratio.activationMs) / Math.round(ratio.floorMs)).toFixed(2)),
  pairs: pairs.map((p) => ({ activationMs: Math.round(p.activationMs), floorMs: Math.round(p.floorMs) })),
  everyRun: runs.map((x) => ({ requests: total(x.requests), writes: writes(x.requests) })),
};
console.log(
  `cost of one two-step activation, our processes' requests by the apiserver's audit log (median of ${runs.length} runs; their idle background ${result.idleRequestsPerSecond} requests/s subtracted):`,
);
console.log(
  `  apiserver requests ${result.apiserverRequests} (writes ${result.apiserverWrites}); Temporal history events: workflow ${result.historyEvents}, Stage lock ${result.lockHistoryEvents}`,
);
for (const [k, v] of Object.entries(result.requestsByKind)) console.log(`    ${String(v).padStart(3)}  ${k}`);
console.log(`  every run (requests/writes): ${result.everyRun.map((x) => `${x.requests}/${x.writes}`).join(' ')}`);
console.log(
  `  of them from its create to its Succeeded: ${result.requestsToSucceeded} (writes ${result.writesToSucceeded})`,
);
console.log(
  `  floor: those ${floor.made} requests back to back; the median of ${pairs.length} side-by-side pairs: activation ${result.activationMs} ms / floor ${result.floorMs} ms = ${result.activationOverFloor} × (goal ≤ 2 ×)`,
);
console.log(
  `  every pair (activation/floor ms): ${pairs.map((p) => `${Math.round(p.activationMs)}/${Math.round(p.floorMs)}`).join(' ')}`,
);
writeResult('cost', result);
await system.stop();
process.exit(0);
