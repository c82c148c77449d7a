/**
 * bench/shards — what a shard saves (not a test): start-up time and memory of a sharded watcher
 * process (`tsx worker/main.ts watcher`, KONFIDENCE_SHARD=hash-0) that serves 1 of N hash shards,
 * against the same process serving all of them (hashShards 1), on the real local servers. It
 * creates NAMESPACES namespaces (labelled for this run only; the ShardingConfig's namespaceSelector
 * keeps every process away from anything else in the cluster) with PER_NAMESPACE finished
 * VectorActivations each (finished: the watcher lists and caches them and starts nothing), then
 * per variant and run measures:
 *   ready: spawn → /readyz 200 (its informers listed the shard's namespaces);
 *   serving: spawn → its ControllerStatus lists every namespace of the shard (it leads and serves);
 *   rss: its peak resident memory from spawn until then (VmHWM); heap: nodejs_heap_size_used_bytes from its /metrics then.
 * Run: npx tsx bench/shards.ts [-- --namespaces 200 --per-namespace 3 --shards 4 --runs 3]
 * Prints medians and writes them with every run to bench/results/. Deletes its namespaces at the end.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { API_VERSION } from '../api/group.js';
import { SHARDING_CONFIG_NAME } from '../api/sharding-config.js';
import { shardOf } from '../decisions/shards.js';
import { applyCrds, readCrdFiles } from '../k8s/crds.js';
import { k8s, loadKubeConfig } from '../k8s/client.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { up } from '../scripts/env/control-plane.js';
import { freePort } from '../scripts/env/ports.js';
import { pollUntil } from '../scripts/env/process.js';
import { buildDist } from '../scripts/dist.js';
import { removeNamespaces } from '../test/support/namespaces.js';
import { spawnRole, untilReady, stopRole } from './fixture.js';
import { numberArg, peakRssMiB } from './report.js';
import { forEachLimited } from '../shared/pool.js';

buildDist(); // the roles run as the image runs them: compiled (scripts/dist.ts)

const NAMESPACES = numberArg('namespaces', 200);
const PER_NAMESPACE = numberArg('per-namespace', 3);
const SHARDS = numberArg('shards', 4);
const RUNS = numberArg('runs', 3);

const cp = await up(() => undefined);
const kc = loadKubeConfig(cp.kubeconfig);
const objects = new CustomObjects(kc);
const core = kc.makeApiClient(k8s.CoreV1Api);
const id = randomBytes(3).toString('hex');
const LABEL = 'konfidence.cloud/bench-shards';
const systemNs = `bench-shards-${id}-sys`;
const names = Array.from({ length: NAMESPACES }, (_, i) => `bench-shards-${id}-${i}`);
// Only the kinds this bench needs (ControllerStatus gained status.serving).
await applyCrds(
  kc,
  readCrdFiles().filter((c) => ['shardingconfigs', 'controllerstatuses'].includes(c.spec.names.plural)),
);

const seeded = performance.now();
await core.createNamespace({ body: { metadata: { name: systemNs } } });
await forEachLimited(names, 8, async (ns) => {
  await core.createNamespace({ body: { metadata: { name: ns, labels: { [LABEL]: id } } } });
  for (let j = 0; j < PER_NAMESPACE; j++) {
    const name = `done-${j}`;
    await objects.create({
      apiVersion: API_VERSION,
      kind: 'VectorActivation',
      metadata: { name, namespace: ns },
      spec: { stage: 'bench', stageVersion: `bench-${j}` },
    });
    await objects.patchStatus('VectorActivation', ns, name, {
      phase: 'Succeeded',
      reason: 'Bench',
      message: 'finished before the bench',
    });
  }
});
console.log(
  `seeded ${NAMESPACES} namespaces × ${PER_NAMESPACE} VectorActivations in ${Math.round((performance.now() - seeded) / 1000)} s`,
);

async function setConfig(hashShards: number): Promise<void> {
  const spec = { namespaceSelector: { matchLabels: { [LABEL]: id } }, hashShards };
  const current = await objects.get('ShardingConfig', systemNs, SHARDING_CONFIG_NAME);
  if (!current)
    await objects.create({
      apiVersion: API_VERSION,
      kind: 'ShardingConfig',
      metadata: { name: SHARDING_CONFIG_NAME, namespace: systemNs },
      spec,
    });
  else await objects.mergeSpec('ShardingConfig', systemNs, SHARDING_CONFIG_NAME, spec);
}

const metric = (text: string, name: string) =>
  Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);

interface Run {
  shards: number;
  served: number;
  readyMs: number;
  servingMs: number;
  rssMiB: number;
  heapMiB: number;
}

async function measure(hashShards: number): Promise<Run> {
  await setConfig(hashShards);
  const served = names.filter(
    (n) => shardOf(n, { [LABEL]: id }, { hashShards, fallbackShard: 'default' }) === 'hash-0',
  ).length;
  const port = await freePort();
  const started = performance.now();
  const child = spawnRole(
    cp,
    'watcher',
    systemNs,
    {
      KONFIDENCE_QUEUE_SUFFIX: `-bench-shards-${id}`,
      KONFIDENCE_SHARD: 'hash-0',
      KONFIDENCE_IDENTITY: `bench-${id}-${hashShards}-${started}`,
      KONFIDENCE_RETRY_PERIOD_MS: '500',
      KONFIDENCE_LEASE_DURATION_MS: '3000',
      KONFIDENCE_RENEW_DEADLINE_MS: '2000',
      KONFIDENCE_HEALTH_PORT: String(port),
      KONFIDENCE_LOG_LEVEL: 'warn',
    },
    ['ignore', 'ignore', 'inherit'],
  );
  try {
    await untilReady(port, 'the watcher', 120_000, 50);
    const readyMs = performance.now() - started;
    await pollUntil(
      async () => {
        const st = await objects.get('ControllerStatus', systemNs, 'watcher-hash-0');
        return (
          st?.status?.serving?.namespaces?.length === served &&
          st.status.serving.generation ===
            (await objects.get('ShardingConfig', systemNs, SHARDING_CONFIG_NAME))?.metadata.generation
        );
      },
      120_000,
      `the shard to serve its ${served} namespaces`,
      50,
    );
    const servingMs = performance.now() - started;
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    return {
      shards: hashShards,
      served,
      readyMs,
      servingMs,
      rssMiB: peakRssMiB(child.pid!),
      heapMiB: metric(text, 'nodejs_heap_size_used_bytes') / 2 ** 20,
    };
  } finally {
    await stopRole(child);
  }
}

const runs: Run[] = [];
try {
  for (let r = 0; r < RUNS; r++) {
    for (const n of [SHARDS, 1]) {
      const run = await measure(n);
      runs.push(run);
      console.log(
        `run ${r + 1}: 1 of ${n} shards, ${run.served} namespaces: ready ${Math.round(run.readyMs)} ms, serving ${Math.round(run.servingMs)} ms, rss ${run.rssMiB.toFixed(1)} MiB, heap ${run.heapMiB.toFixed(1)} MiB`,
      );
    }
  }
} finally {
  await removeNamespaces(kc, [...names, systemNs]);
}
const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const summary = [SHARDS, 1].map((n) => {
  const of = runs.filter((r) => r.shards === n);
  return {
    shards: n,
    served: of[0]!.served,
    readyMs: Math.round(median(of.map((r) => r.readyMs))),
    servingMs: Math.round(median(of.map((r) => r.servingMs))),
    rssMiB: +median(of.map((r) => r.rssMiB)).toFixed(1),
    heapMiB: +median(of.map((r) => r.heapMiB)).toFixed(1),
  };
});
console.table(summary);
mkdirSync(new URL('./results/', import.meta.url), { recursive: true });
writeFileSync(
  new URL(`./results/shards-${new Date().toISOString().replace(/[:.]/g, '-')}.json`, import.meta.url),
  JSON.stringify({ namespaces: NAMESPACES, perNamespace: PER_NAMESPACE, summary, runs }, null, 2),
);
process.exit(0);
