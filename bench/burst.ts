/**
 * bench/burst — 50 activations created at once on one Stage (issue 11): how many executed (goal
 * ≤ 2: the lock supersedes the older waiting ones) and the time until all are final, as a multiple
 * of one activation alone measured in the same run (goal ≤ 2×). The two-step plan of
 * bench/fixture.ts (Gateway API, then Istio). Run: npm run bench:burst [-- --burst 50 --singles 3]
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { CustomObjects } from '../k8s/custom-objects.js';
import { benchActivation, seededBenchSystem, watchFinal } from './fixture.js';
import { cpuNow, cpuProcesses, numberArg, quantile, writeResult } from './report.js';

const BURST = numberArg('burst', 50);
const SINGLES = numberArg('singles', 3);

Runtime.install({ logger: new DefaultLogger('ERROR') });
const { cp, kc, ns, system } = await seededBenchSystem('burst', 1 + SINGLES + BURST);
const objects = new CustomObjects(kc);

const finals = await watchFinal(kc, [ns]);
const finalOf = (name: string) => finals.of(ns, name);

const singles: number[] = [];
for (let r = 2; r < 2 + SINGLES; r++) {
  const t = performance.now();
  await objects.create(benchActivation(ns, r));
  singles.push((await finalOf(`to-${r}`)).at - t);
}

const revisions = Array.from({ length: BURST }, (_, i) => 2 + SINGLES + i);
// The creates go over connections already open, as the singles' did: Node's client opens one TLS
// connection per request in flight, where kubectl and client-go send them all over one HTTP/2
// connection. Fifty handshakes at once would be this client's cost, not the system's.
await Promise.all(revisions.map(() => objects.get('Stage', ns, 'bench')));
const processes = cpuProcesses(cp.pids);
const cpuBefore = cpuNow(processes);
const started = performance.now();
await Promise.all(revisions.map((r) => objects.create(benchActivation(ns, r))));
const ends = await Promise.all(revisions.map((r) => finalOf(`to-${r}`)));
const converged = Math.max(...ends.map((e) => e.at)) - started;
const cpuAfter = cpuNow(processes);
finals.stop();
await system.stop();

const single = quantile(singles, 0.5);
const byOutcome: Record<string, number> = {};
for (const e of ends) byOutcome[`${e.phase}${e.reason ? `/${e.reason}` : ''}`] = (byOutcome[`${e.phase}${e.reason ? `/${e.reason}` : ''}`] ?? 0) + 1;
const executed = ends.filter((e) => e.phase === 'Succeeded' || e.phase === 'Failed').length;
// Where the time goes: the executions one after the other, and the skips beside them.
const since = (at: number) => Math.round(at - started);
const executedAt = ends.filter((e) => e.phase === 'Succeeded' || e.phase === 'Failed').map((e) => since(e.at)).sort((a, b) => a - b);
const skippedAt = ends.filter((e) => e.phase === 'Skipped').map((e) => since(e.at));
const figures = {
  burst: BURST,
  singleMs: Math.round(single),
  convergedMs: Math.round(converged),
  convergedOverSingle: Number((converged / single).toFixed(2)),
  executed,
  outcomes: byOutcome,
  executionsEndedAtMs: executedAt,
  lastSkippedAtMs: skippedAt.length ? Math.max(...skippedAt) : undefined,
  newestActive: ends.at(-1)?.phase === 'Succeeded',
  // Where the time goes: CPU each process used from the creates until all were final (2 cores).
  cpuMsDuringBurst: Object.fromEntries(Object.keys(processes).map((k) => [k, Math.round((cpuAfter[k]! - cpuBefore[k]!) * 1000)])),
};
console.log(`burst: ${BURST} activations at once on one Stage: ${executed} executed (goal ≤ 2), all final after ${figures.convergedMs} ms = ${figures.convergedOverSingle} × one alone (${figures.singleMs} ms; goal ≤ 2 ×)`);
console.log(`  outcomes: ${JSON.stringify(byOutcome)}; the newest ${figures.newestActive ? 'Succeeded' : 'did NOT succeed'}`);
console.log(`  CPU from the creates until all were final (ms): ${Object.entries(figures.cpuMsDuringBurst).map(([k, v]) => `${k} ${v}`).join(', ')}`);
console.log(`  executions ended at ${executedAt.join(', ')} ms; the last skip at ${figures.lastSkippedAtMs ?? '-'} ms (from the creates)`);
writeResult('burst', figures);
process.exit(0);
