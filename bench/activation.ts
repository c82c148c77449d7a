/**
 * bench/activation — how fast activations go on the real local servers (not a test):
 *   latency: VectorActivation created → status Succeeded, two-step plan (Gateway API, then Istio);
 *   handoff: one activation's Succeeded → the next waiting one's InProgress on the same Stage.
 * Times are when this process receives the watch events. Run: npm run bench:activation [-- --runs N]
 */
import { randomBytes } from 'node:crypto';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { API_VERSION, GROUP, VERSION } from '../api/group.js';
import { apply, k8s, loadKubeConfig } from '../k8s/client.js';
import { applyCrds } from '../k8s/crds.js';
import { routeCrds } from '../scripts/route-crds.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { up } from '../scripts/env/control-plane.js';
import { pollUntil } from '../scripts/env/process.js';
import { startSystem } from '../worker/system.js';

const runsArg = process.argv.indexOf('--runs');
const RUNS = Math.min(runsArg > 0 ? Number(process.argv[runsArg + 1]) : 20, 33); // 3 StageVersions a run, history limit 100

Runtime.install({ logger: new DefaultLogger('ERROR') });
const cp = await up(() => undefined);
const kc = loadKubeConfig(cp.kubeconfig);
const objects = new CustomObjects(kc);
const generic = k8s.KubernetesObjectApi.makeApiClient(kc);
const id = randomBytes(3).toString('hex');
const ns = `bench-${id}`;
const systemNs = `bench-${id}-sys`;
await applyCrds(kc, routeCrds());
for (const n of [ns, systemNs]) await apply(generic, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: n } });

const cr = (kind: string, namespace: string, name: string, spec: unknown) =>
  objects.create({ apiVersion: API_VERSION, kind, metadata: { name, namespace }, spec });

const total = RUNS * 3 + 1;
// StageVersions before the Stage (else the Stage controller makes one for its vector), and a history
// limit that keeps them all until the runs have used them.
for (let r = 1; r <= total; r++) {
  await cr('StageVersion', ns, `bench-${r}`, { stage: 'bench', vector: `bench:${r}`, revision: r, backend: { service: `bench-v${r}`, port: 8080, subset: `v${r}` } });
}
await cr('Stage', ns, 'bench', { vector: `bench:${total}`, stageVersionHistoryLimit: 100 });
await generic.create({
  apiVersion: 'gateway.networking.k8s.io/v1',
  kind: 'HTTPRoute',
  metadata: { name: 'bench', namespace: ns },
  spec: { rules: [{ backendRefs: [{ name: 'bench-v1', port: 8080, weight: 100 }] }] },
});
await generic.create({
  apiVersion: 'networking.istio.io/v1',
  kind: 'VirtualService',
  metadata: { name: 'bench', namespace: ns },
  spec: { hosts: ['bench'], http: [{ name: 'primary', route: [{ destination: { host: 'bench', subset: 'v1' }, weight: 100 }] }] },
});
await cr('ActivationTaskRegistration', systemNs, 'gateway', { type: 'gateway-api', spec: { routes: [{ name: 'bench' }] } });
await cr('ActivationTaskRegistration', systemNs, 'mesh', { type: 'istio', spec: { virtualServices: [{ name: 'bench' }], host: 'bench' } });
await cr('ActivationExecutionPlan', systemNs, 'default', { steps: [{ name: 'gateway', tasks: ['gateway'] }, { name: 'mesh', tasks: ['mesh'] }] });

const system = await startSystem({
  temporalAddress: cp.temporalAddress,
  temporalNamespace: cp.temporalNamespace,
  kubeConfig: kc,
  systemNamespace: systemNs,
  namespaces: [ns],
  queueSuffix: `-${ns}`,
  log: () => undefined,
});

// Phase transitions as this process sees them.
const seen = new Map<string, Map<string, number>>();
const watch = await new k8s.Watch(kc).watch(`/apis/${GROUP}/${VERSION}/namespaces/${ns}/vectoractivations`, {}, (_t, o: any) => {
  const at = performance.now();
  const phases = seen.get(o.metadata.name) ?? new Map<string, number>();
  if (o.status?.phase && !phases.has(o.status.phase)) phases.set(o.status.phase, at);
  seen.set(o.metadata.name, phases);
}, () => undefined);
const phaseAt = (name: string, phase: string) => pollUntil(() => seen.get(name)?.get(phase), 120_000, `${name} ${phase}`, 5);

const activate = async (r: number) => {
  const t = performance.now();
  await cr('VectorActivation', ns, `to-${r}`, { stage: 'bench', stageVersion: `bench-${r}` });
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
for (let i = 0; i < RUNS; i++) {
  const first = ++revision;
  const second = ++revision;
  await activate(first);
  await phaseAt(`to-${first}`, 'InProgress');
  await activate(second);
  await phaseAt(`to-${second}`, 'Waiting');
  const done = await phaseAt(`to-${first}`, 'Succeeded');
  handoff.push((await phaseAt(`to-${second}`, 'InProgress')) - done);
  await phaseAt(`to-${second}`, 'Succeeded');
}
watch.abort();
await system.stop();

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (q: number) => s[Math.min(s.length - 1, Math.ceil(q * s.length) - 1)]!;
  return { runs: s.length, median: Math.round(at(0.5)), p95: Math.round(at(0.95)), min: Math.round(s[0]!), max: Math.round(s[s.length - 1]!) };
};
console.log('activation latency, create → Succeeded, two-step plan (ms):', JSON.stringify(stats(latency)));
console.log('handoff, Succeeded → next InProgress on the same Stage (ms):', JSON.stringify(stats(handoff)));
process.exit(0);
