/**
 * bench/activation — how fast activations go on the real local servers (not a test):
 *   latency: VectorActivation created → status Succeeded, two-step plan (Gateway API, then Istio);
 *   handoff: one activation's Succeeded → the next waiting one's InProgress on the same Stage.
 * Times are when this process receives the watch events. Run: npm run bench:activation [-- --runs N]
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { GROUP, VERSION } from '../api/group.js';
import { k8s } from '../k8s/client.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { pollUntil } from '../scripts/env/process.js';
import { benchActivation, seededBenchSystem } from './fixture.js';
import { handoffSegments, type HandoffSegments, type HandoffTimes } from './handoff-breakdown.js';
import { numberArg, stats, writeResult } from './report.js';

const RUNS = Math.min(numberArg('runs', 20), 33); // 3 StageVersions a run, history limit 100

Runtime.install({ logger: new DefaultLogger('ERROR') });
const { kc, ns, system } = await seededBenchSystem('bench', RUNS * 3 + 1);
const objects = new CustomObjects(kc);

// Phase transitions as this process sees them (wall-clock ms, comparable with Temporal's event times).
const seen = new Map<string, Map<string, number>>();
const workflowIds = new Map<string, string>();
const watch = await new k8s.Watch(kc).watch(`/apis/${GROUP}/${VERSION}/namespaces/${ns}/vectoractivations`, {}, (_t, o: any) => {
  const at = performance.timeOrigin + performance.now();
  if (o.status?.workflowId) workflowIds.set(o.metadata.name, o.status.workflowId);
  const phases = seen.get(o.metadata.name) ?? new Map<string, number>();
  if (o.status?.phase && !phases.has(o.status.phase)) phases.set(o.status.phase, at);
  seen.set(o.metadata.name, phases);
}, () => undefined);
const phaseAt = (name: string, phase: string) => pollUntil(() => seen.get(name)?.get(phase), 120_000, `${name} ${phase}`, 5);

const activate = async (r: number) => {
  const t = performance.timeOrigin + performance.now();
  await objects.create(benchActivation(ns, r));
  return t;
};

let revision = 1;
const latency: number[] = [];
for (let i = 0; i < RUNS; i++) {
  revision++;
  const created = await activate(revision);
  latency.push((await phaseAt(`to-${revision}`, 'Succeeded')) - created);
}
const handoff: number[] = [];
const handoffs: HandoffTimes[] = [];
for (let i = 0; i < RUNS; i++) {
  const first = ++revision;
  const second = ++revision;
  await activate(first);
  await phaseAt(`to-${first}`, 'InProgress');
  await activate(second);
  await phaseAt(`to-${second}`, 'Waiting');
  const done = await phaseAt(`to-${first}`, 'Succeeded');
  const next = await phaseAt(`to-${second}`, 'InProgress');
  handoff.push(next - done);
  await phaseAt(`to-${second}`, 'Succeeded');
  handoffs.push({ previousWorkflowId: workflowIds.get(`to-${first}`)!, nextWorkflowId: workflowIds.get(`to-${second}`)!, succeededSeen: done, inProgressSeen: next });
}
const segments = await Promise.all(handoffs.map((h) => handoffSegments(system.client, h)));
const segment = (k: keyof HandoffSegments) => stats(segments.map((s) => s[k]));
watch.abort();
await system.stop();

const figures = {
  latencyMs: stats(latency),
  handoffMs: stats(handoff),
  handoffSegmentsMs: { release: segment('release'), lock: segment('lock'), pickup: segment('pickup'), ours: segment('ours') },
};
console.log('activation latency, create → Succeeded, two-step plan (ms):', JSON.stringify(figures.latencyMs));
console.log('handoff, Succeeded → next InProgress on the same Stage (ms):', JSON.stringify(figures.handoffMs));
console.log('handoff by segment, median ms (bench/handoff-breakdown.ts):', JSON.stringify(Object.fromEntries(Object.entries(figures.handoffSegmentsMs).map(([k, v]) => [k, v.median]))));
writeResult('activation', figures);
process.exit(0);
