/**
 * bench/activation — how fast activations go on the real local servers (not a test):
 *   latency: VectorActivation created → status Succeeded, two-step plan (Gateway API, then Istio);
 *   handoff: one activation's Succeeded → the next waiting one's InProgress on the same Stage.
 *   slowest workflow task: of every activation's workflow here (the first on a freshly started
 *   core worker among them) and of its Stage lock's last run, from their histories; goal ≤ 1 s.
 * Times are when this process receives the watch events. Run: npm run bench:activation [-- --runs N]
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { GROUP, VERSION } from '../api/group.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { pollUntil } from '../scripts/env/process.js';
import { activationWorkflowId } from '../shared/activation.js';
import { stageLockWorkflowId } from '../stage-lock/contract.js';
import { resumingWatch } from '../test/support/watch.js';
import { benchActivation, seededBenchSystem } from './fixture.js';
import { handoffSegments, lockHistory, type HandoffSegments, type HandoffTimes } from './handoff-breakdown.js';
import { numberArg, stats, writeResult } from './report.js';
import { slowestWorkflowTasks } from './workflow-tasks.js';

const RUNS = Math.min(numberArg('runs', 20), 33); // 3 StageVersions a run, history limit 100

Runtime.install({ logger: new DefaultLogger('ERROR') });
const { kc, ns, system } = await seededBenchSystem('bench', RUNS * 3 + 1);
const objects = new CustomObjects(kc);

// Phase transitions as this process sees them, by the wall clock (Date.now(): Temporal stamps its
// events by it, and handoff-breakdown.ts compares the two).
const seen = new Map<string, Map<string, number>>();
const watch = await resumingWatch(kc, `/apis/${GROUP}/${VERSION}/namespaces/${ns}/vectoractivations`, (_t, o: any) => {
  const at = Date.now();
  const phases = seen.get(o.metadata.name) ?? new Map<string, number>();
  if (o.status?.phase && !phases.has(o.status.phase)) phases.set(o.status.phase, at);
  seen.set(o.metadata.name, phases);
});
const phaseAt = (name: string, phase: string) =>
  pollUntil(() => seen.get(name)?.get(phase), 120_000, `${name} ${phase}${watch.ended ? ` (${watch.ended})` : ''}`, 5);

/** Creates to-<r>: when, and its workflow's id. */
const activate = async (r: number) => {
  const at = Date.now();
  const { object } = await objects.create(benchActivation(ns, r));
  return {
    at,
    workflowId: activationWorkflowId({ namespace: ns, name: object.metadata.name, uid: object.metadata.uid! }),
  };
};

let revision = 1;
const latency: number[] = [];
const workflowIds: string[] = [];
for (let i = 0; i < RUNS; i++) {
  revision++;
  const created = await activate(revision);
  workflowIds.push(created.workflowId);
  latency.push((await phaseAt(`to-${revision}`, 'Succeeded')) - created.at);
}
const handoffs: HandoffTimes[] = [];
for (let i = 0; i < RUNS; i++) {
  const first = ++revision;
  const second = ++revision;
  const previous = await activate(first);
  await phaseAt(`to-${first}`, 'InProgress');
  const next = await activate(second);
  await phaseAt(`to-${second}`, 'Waiting');
  const succeededSeen = await phaseAt(`to-${first}`, 'Succeeded');
  const inProgressSeen = await phaseAt(`to-${second}`, 'InProgress');
  await phaseAt(`to-${second}`, 'Succeeded');
  // The lock run that served the pair (pairs within its idle linger share one run).
  const lock = await lockHistory(system.client, stageLockWorkflowId(ns, 'bench'));
  handoffs.push({
    previousWorkflowId: previous.workflowId,
    nextWorkflowId: next.workflowId,
    lockHistory: lock,
    succeededSeen,
    inProgressSeen,
  });
}
const segments = await Promise.all(handoffs.map((h) => handoffSegments(system.client, h)));
workflowIds.push(...handoffs.flatMap((h) => [h.previousWorkflowId, h.nextWorkflowId]));
const tasks = await slowestWorkflowTasks(system.client, [...workflowIds, stageLockWorkflowId(ns, 'bench')]);
const segment = (k: keyof HandoffSegments) => stats(segments.map((s) => s[k]));
watch.stop();
await system.stop();

const figures = {
  latencyMs: stats(latency),
  handoffMs: stats(handoffs.map((h) => h.inProgressSeen - h.succeededSeen)),
  handoffSegmentsMs: {
    release: segment('release'),
    lock: segment('lock'),
    pickup: segment('pickup'),
    ours: segment('ours'),
  },
  workflowTasks: tasks,
};
console.log('activation latency, create → Succeeded, two-step plan (ms):', JSON.stringify(figures.latencyMs));
console.log('handoff, Succeeded → next InProgress on the same Stage (ms):', JSON.stringify(figures.handoffMs));
console.log(
  'handoff by segment, median ms (bench/handoff-breakdown.ts):',
  JSON.stringify(Object.fromEntries(Object.entries(figures.handoffSegmentsMs).map(([k, v]) => [k, v.median]))),
);
console.log(
  `slowest workflow task of ${tasks.tasks}: ${tasks.slowest.ms} ms (${tasks.slowest.workflowId}, event ${tasks.slowest.eventId}); slowest first task: ${tasks.slowestFirst.ms} ms (goal ≤ 1000 ms)`,
);
writeResult('activation', figures);
process.exit(0);
