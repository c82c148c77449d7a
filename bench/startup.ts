/**
 * bench/startup — a core worker's start as its Pod runs it (`node dist/worker/main.js core`, the
 * Deployment's runtime settings), loading the workflow bundle the image names
 * (KONFIDENCE_WORKFLOW_BUNDLE, made at build time) against bundling the workflows at start, the two
 * alternating. Per start, from spawn to /readyz 200: the time, the CPU seconds the process used and
 * its peak resident memory (VmHWM). No goal: the figures say what the prebuilt bundle saves.
 * Run: npm run bench:startup [-- --runs 5]
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { apply, k8s, loadKubeConfig } from '../k8s/client.js';
import { up } from '../scripts/env/control-plane.js';
import { buildDist } from '../scripts/dist.js';
import { repoRoot } from '../scripts/env/paths.js';
import { freePort } from '../scripts/env/ports.js';
import { spawnRole, untilReady, stopRole } from './fixture.js';
import { cpuSeconds, numberArg, peakRssMiB, stats, writeResult } from './report.js';

const RUNS = numberArg('runs', 5);
// The roles get this process's environment: without the variable, a start bundles.
delete process.env.KONFIDENCE_WORKFLOW_BUNDLE;
type Way = 'prebuilt' | 'bundled at start';
interface Start {
  way: Way;
  readyMs: number;
  cpuSeconds: number;
  peakRssMiB: number;
}

buildDist();
const dir = mkdtempSync(join(tmpdir(), 'konfidence-bundle-'));
const bundle = join(dir, 'workflow-bundle.js');
// As `npm run build` makes it for the image: the compiled script, from the compiled workflows.
execFileSync(process.execPath, [join(repoRoot, 'dist', 'worker', 'workflow-bundle.js'), bundle], { stdio: 'inherit' });

const cp = await up(() => undefined);
const systemNs = `bench-startup-${process.pid}`;
const objects = k8s.KubernetesObjectApi.makeApiClient(loadKubeConfig(cp.kubeconfig));
const namespace = { apiVersion: 'v1', kind: 'Namespace', metadata: { name: systemNs } };
await apply(objects, namespace);

async function start(way: Way): Promise<Start> {
  const port = await freePort();
  const begun = performance.now();
  const env: Record<string, string> = {
    KONFIDENCE_QUEUE_SUFFIX: `-${systemNs}`,
    KONFIDENCE_HEALTH_PORT: String(port),
    KONFIDENCE_LOG_LEVEL: 'warn',
  };
  if (way === 'prebuilt') env.KONFIDENCE_WORKFLOW_BUNDLE = bundle;
  const child = spawnRole(cp, 'core', systemNs, env, ['ignore', 'ignore', 'inherit']);
  try {
    await untilReady(port, 'the core worker', 120_000, 20);
    return {
      way,
      readyMs: Math.round(performance.now() - begun),
      cpuSeconds: cpuSeconds(child.pid),
      peakRssMiB: peakRssMiB(child.pid!),
    };
  } finally {
    await stopRole(child);
  }
}

const starts: Start[] = [];
try {
  for (let i = 0; i < RUNS; i++) {
    for (const way of (i % 2 === 0 ? ['prebuilt', 'bundled at start'] : ['bundled at start', 'prebuilt']) as Way[]) {
      const s = await start(way);
      starts.push(s);
      console.log(`${way}: ready ${s.readyMs} ms, CPU ${s.cpuSeconds.toFixed(2)} s, peak RSS ${s.peakRssMiB} MiB`);
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
  await objects.delete(namespace).catch(() => undefined);
}

const summary = Object.fromEntries(
  (['prebuilt', 'bundled at start'] as Way[]).map((way) => {
    const of = starts.filter((s) => s.way === way);
    return [
      way,
      {
        readyMs: stats(of.map((s) => s.readyMs)),
        cpuSeconds: stats(of.map((s) => s.cpuSeconds * 1000)),
        peakRssMiB: stats(of.map((s) => s.peakRssMiB)),
      },
    ];
  }),
);
const p = summary.prebuilt!,
  b = summary['bundled at start']!;
console.log(
  `core worker start, median of ${RUNS}: prebuilt bundle ready ${p.readyMs.median} ms, CPU ${p.cpuSeconds.median} ms, peak RSS ${p.peakRssMiB.median} MiB; ` +
    `bundled at start ready ${b.readyMs.median} ms, CPU ${b.cpuSeconds.median} ms, peak RSS ${b.peakRssMiB.median} MiB`,
);
console.log(`results: ${writeResult('startup', { runs: RUNS, summary, starts })}`);
process.exit(0);
