/**
 * bench/request-cost — our CPU per apiserver request: a custom resource read (GET) and a merge
 * patch of its labels, sent by the Kubernetes client's generated API (CustomObjectsApi) and by
 * k8s/json-requests.ts (through CustomObjects), in alternating rounds on the local servers. The
 * process's CPU (user + system) over each round, per request; the figure is each way's median
 * round, and their ratio is of those two medians. No server is started but the local ones.
 * Run: npx tsx bench/request-cost.ts [-- --rounds 6 --requests 1000]
 */
import { randomBytes } from 'node:crypto';
import { API_VERSION, GROUP, VERSION } from '../api/group.js';
import { apply, k8s, loadKubeConfig } from '../k8s/client.js';
import { CustomObjects, pluralOf } from '../k8s/custom-objects.js';
import { up } from '../scripts/env/control-plane.js';
import { removeNamespaces } from '../test/support/namespaces.js';
import { numberArg, quantile, writeResult } from './report.js';

const ROUNDS = numberArg('rounds', 6);
const REQUESTS = numberArg('requests', 1000);

const cp = await up(() => undefined);
const kc = loadKubeConfig(cp.kubeconfig);
const ns = `request-cost-${randomBytes(3).toString('hex')}`;
await apply(k8s.KubernetesObjectApi.makeApiClient(kc), { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
const objects = new CustomObjects(kc);
// A StageVersion as the system keeps them: its spec, labels and the apiserver's managedFields.
await objects.create({
  apiVersion: API_VERSION,
  kind: 'StageVersion',
  metadata: { name: 'web-1', namespace: ns },
  spec: { stage: 'web', vector: 'web:1', revision: 1, backend: { service: 'web-v1', port: 8080, subset: 'v1' } },
});

const generated = kc.makeApiClient(k8s.CustomObjectsApi);
const target = { group: GROUP, version: VERSION, namespace: ns, plural: pluralOf('StageVersion'), name: 'web-1' };
const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
const label = (i: number) => ({ metadata: { labels: { 'request-cost': String(i) } } });

const ways = {
  'generated API': {
    read: () => generated.getNamespacedCustomObject(target),
    write: (i: number) => generated.patchNamespacedCustomObject({ ...target, body: label(i) }, mergePatch),
  },
  'json-requests': {
    read: () => objects.get('StageVersion', ns, 'web-1'),
    write: (i: number) => objects.mergeMetadata('StageVersion', ns, 'web-1', label(i).metadata),
  },
};
type Way = keyof typeof ways;

/** Our CPU per request (µs) over `count` requests one after the other. */
async function cpuPerRequest(send: (i: number) => Promise<unknown>, count: number): Promise<number> {
  const before = process.cpuUsage();
  for (let i = 0; i < count; i++) await send(i);
  const used = process.cpuUsage(before);
  return (used.user + used.system) / count;
}

const rounds: Record<Way, { read: number[]; write: number[] }> = {
  'generated API': { read: [], write: [] },
  'json-requests': { read: [], write: [] },
};
// A warm-up of each way first: connections open, code compiled. The namespace goes whatever happens.
try {
  for (const way of Object.values(ways)) {
    await cpuPerRequest(way.read, 100);
    await cpuPerRequest(way.write, 50);
  }
  for (let round = 0; round < ROUNDS; round++) {
    // Each way first in every other round: what one leaves behind (garbage) lands on both alike.
    const order = (Object.keys(ways) as Way[])[round % 2 ? 'reverse' : 'slice']();
    for (const name of order) {
      rounds[name].read.push(await cpuPerRequest(ways[name].read, REQUESTS));
      rounds[name].write.push(await cpuPerRequest(ways[name].write, REQUESTS / 2));
    }
  }
} finally {
  await removeNamespaces(kc, [ns]);
}

const median = (xs: number[]) => quantile(xs, 0.5);
const figuresOf = (way: Way) => ({
  readMicros: median(rounds[way].read),
  writeMicros: median(rounds[way].write),
  rounds: rounds[way],
});
const figures = { 'generated API': figuresOf('generated API'), 'json-requests': figuresOf('json-requests') };
const before = figures['generated API'];
const after = figures['json-requests'];
console.log(
  `our CPU per request, median of ${ROUNDS} alternating rounds (${REQUESTS} reads, ${REQUESTS / 2} writes each):`,
);
for (const [way, f] of Object.entries(figures))
  console.log(`  ${way.padEnd(14)} read ${f.readMicros.toFixed(0)} µs, write ${f.writeMicros.toFixed(0)} µs`);
console.log(
  `  json-requests / generated API: read ${(after.readMicros / before.readMicros).toFixed(2)}×, write ${(after.writeMicros / before.writeMicros).toFixed(2)}×`,
);
console.log(`  written to ${writeResult('request-cost', { rounds: ROUNDS, requests: REQUESTS, figures })}`);
process.exit(0);
