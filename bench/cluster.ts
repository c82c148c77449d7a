/**
 * bench/cluster — bench/throughput on each Temporal profile in turn, in one run, side by side: by
 * default the dev server (one process, SQLite) and the cluster profile (temporal-server's services
 * as five processes on PostgreSQL, history twice). Each profile runs on a state folder of its own,
 * .cache/env-<profile>, started when down and stopped again afterwards (a control plane that
 * already ran is left running), so the profile measured does not share the cores with the other's
 * idle servers. Besides activations/s and latency it shows each process's CPU as cores busy over
 * the window (CPU ms per activation × activations/s), and the whole machine's beside ours: on a
 * shared machine what others take is what the profile measured did not get.
 * Run: npm run bench:cluster [-- --profiles dev,cluster --stages 40 --namespaces 4 --seconds 30 --warmup 30]
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../scripts/env/paths.js';
import { resultsDir, writeResult } from './report.js';

const argv = process.argv.slice(2);
const profilesAt = argv.indexOf('--profiles');
const profiles = (profilesAt >= 0 ? argv[profilesAt + 1]! : 'dev,cluster').split(',');
const passed = profilesAt >= 0 ? [...argv.slice(0, profilesAt), ...argv.slice(profilesAt + 2)] : argv;
/** Short by default: the figures compare the profiles; bench:throughput's defaults measure the goal. */
const defaults: Record<string, string> = { '--stages': '40', '--namespaces': '4', '--seconds': '30', '--warmup': '30' };
const throughputArgs = [
  ...Object.entries(defaults)
    .filter(([k]) => !passed.includes(k))
    .flat(),
  ...passed,
];
const tsx = join(repoRoot, 'node_modules', 'tsx', 'dist', 'cli.mjs');

function run(script: string, args: string[], env: NodeJS.ProcessEnv, capture: boolean) {
  const r = spawnSync(process.execPath, [tsx, join(repoRoot, script), ...args], {
    cwd: repoRoot,
    env: { ...process.env, ...env },
    stdio: ['ignore', capture ? 'pipe' : 'inherit', 'inherit'],
    encoding: 'utf8',
  });
  if (r.status !== 0) throw new Error(`${script} ${args.join(' ')} failed (exit ${r.status ?? r.signal})`);
  return r.stdout;
}

/** bench/results/throughput-*.json written after `since`, the newest. */
function newestThroughput(since: number): any {
  const files = readdirSync(resultsDir)
    .filter((f) => f.startsWith('throughput-') && f.endsWith('.json'))
    .map((f) => join(resultsDir, f))
    .filter((f) => statSync(f).mtimeMs >= since)
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  if (!files[0]) throw new Error('bench/throughput.ts wrote no result');
  return JSON.parse(readFileSync(files[0], 'utf8'));
}

const figures: Record<string, any> = {};
for (const profile of profiles) {
  const env = { KONFIDENCE_TEMPORAL: profile, KONFIDENCE_ENV_DIR: join(repoRoot, '.cache', `env-${profile}`) };
  console.log(`\n=== ${profile}: bench/throughput.ts ${throughputArgs.join(' ')} (${env.KONFIDENCE_ENV_DIR})`);
  const up = JSON.parse(run('scripts/env-up.ts', ['--json'], env, true).trim().split('\n').pop()!);
  const since = Date.now();
  try {
    run('bench/throughput.ts', throughputArgs, env, false);
  } finally {
    if (up.started) run('scripts/env-down.ts', [], env, false);
  }
  const t = newestThroughput(since);
  const processCores = Object.fromEntries(
    Object.entries(t.cpuMsPerActivation as Record<string, number>).map(([k, ms]) => [
      k,
      Number(((ms * t.perSecond) / 1000).toFixed(2)),
    ]),
  );
  figures[profile] = { ...t, processCores };
}

const rows = [
  ['succeeded activations/s', (f: any) => f.perSecond],
  ['latency p50 (ms)', (f: any) => f.latencyMs.p50],
  ['latency p99 (ms)', (f: any) => f.latencyMs.p99],
  ['succeeded in window', (f: any) => `${f.succeeded} in ${f.windowSeconds} s`],
  ['cores busy: ours/machine', (f: any) => `${f.coresBusy.ours}/${f.coresBusy.machine} of ${f.coresBusy.cores}`],
] as const;
const pad = (s: unknown, n: number) => String(s).padEnd(n);
console.log(`\nthroughput by Temporal profile (${throughputArgs.join(' ')}):`);
console.log(`  ${pad('', 26)}${profiles.map((p) => pad(p, 18)).join('')}`);
for (const [label, of] of rows)
  console.log(`  ${pad(label, 26)}${profiles.map((p) => pad(of(figures[p]), 18)).join('')}`);
for (const p of profiles) {
  const busy = Object.entries(figures[p].processCores as Record<string, number>).sort((a, b) => b[1] - a[1]);
  console.log(`  cores busy, ${p}: ${busy.map(([k, v]) => `${k} ${v}`).join(', ')}`);
}
writeResult('cluster', { args: throughputArgs, profiles: figures });
