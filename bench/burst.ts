/**
 * bench/burst — 50 activations created at once on one Stage: how many executed (goal
 * ≤ 2: the lock supersedes the older waiting ones) and the time until all are final, as a multiple
 * of one activation alone measured just before it, on the same Stage (goal ≤ 2×). The two-step plan
 * of bench/fixture.ts (Gateway API, then Istio). Each round has a namespace and a system of its own;
 * the figure is the median round (a single burst on the 2-core machine swings by ±0.3×).
 * Run: npm run bench:burst [-- --burst 50 --singles 3 --rounds 5]
 */
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { k8s } from '../k8s/client.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { benchActivation, seededBenchSystem, watchFinal } from './fixture.js';
import { cpuNow, cpuProcesses, numberArg, quantile, writeResult } from './report.js';

const BURST = numberArg('burst', 50);
const SINGLES = numberArg('singles', 3);
const ROUNDS = Math.max(1, numberArg('rounds', 5));

Runtime.install({ logger: new DefaultLogger('ERROR') });

/**
 * The bench's own client, on connections of its own: the shared agents of k8s/client.ts are keyed
 * by cluster, so a renamed cluster gets an agent the system in this process does not use.
 */
function benchClient(kc: k8s.KubeConfig): CustomObjects {
  const own = new k8s.KubeConfig();
  const rename = (name: string) => `${name}-bench-client`;
  own.loadFromOptions({
    clusters: kc.clusters.map((c) => ({ ...c, name: rename(c.name) })),
    users: kc.users,
    contexts: kc.contexts.map((c) => ({ ...c, cluster: rename(c.cluster) })),
    currentContext: kc.currentContext,
  });
  return new CustomObjects(own);
}

async function round() {
  const { cp, kc, ns, system } = await seededBenchSystem('burst', 1 + SINGLES + BURST);
  const objects = benchClient(kc);
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
  // connection. Fifty handshakes at once would be this client's cost, not the system's (whose own
  // connections are not opened here: the client has an agent of its own).
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
  const outcomes: Record<string, number> = {};
  for (const e of ends) {
    const key = `${e.phase}${e.reason ? `/${e.reason}` : ''}`;
    outcomes[key] = (outcomes[key] ?? 0) + 1;
  }
  // Where the time goes: the executions one after the other, and the skips beside them.
  const since = (at: number) => Math.round(at - started);
  const executedAt = ends
    .filter((e) => e.phase === 'Succeeded' || e.phase === 'Failed')
    .map((e) => since(e.at))
    .sort((a, b) => a - b);
  const skippedAt = ends.filter((e) => e.phase === 'Skipped').map((e) => since(e.at));
  return {
    singleMs: Math.round(single),
    convergedMs: Math.round(converged),
    convergedOverSingle: Number((converged / single).toFixed(2)),
    executed: executedAt.length,
    outcomes,
    executionsEndedAtMs: executedAt,
    lastSkippedAtMs: skippedAt.length ? Math.max(...skippedAt) : undefined,
    newestActive: ends.at(-1)?.phase === 'Succeeded',
    // CPU each process used from the creates until all were final (2 cores); this process runs the
    // whole system, and the bench's creates and watch.
    cpuMsDuringBurst: Object.fromEntries(
      Object.keys(processes).map((k) => [k, Math.round((cpuAfter[k]! - cpuBefore[k]!) * 1000)]),
    ),
  };
}

const rounds: Awaited<ReturnType<typeof round>>[] = [];
for (let i = 0; i < ROUNDS; i++) {
  const r = await round();
  rounds.push(r);
  console.log(
    `round ${i + 1}: ${r.executed} executed, all final after ${r.convergedMs} ms = ${r.convergedOverSingle} × one alone (${r.singleMs} ms); CPU (ms): ${Object.entries(
      r.cpuMsDuringBurst,
    )
      .map(([k, v]) => `${k} ${v}`)
      .join(', ')}`,
  );
}
// The median round by its ratio, and that round's own figures beside it: the ratio printed is the
// ratio of the two times printed.
const medianRound = [...rounds].sort((a, b) => a.convergedOverSingle - b.convergedOverSingle)[
  Math.floor((rounds.length - 1) / 2)
]!;
const figures = {
  burst: BURST,
  rounds: rounds.length,
  // Executed counts the worst round (every round must run at most 2).
  convergedOverSingle: medianRound.convergedOverSingle,
  convergedMs: medianRound.convergedMs,
  singleMs: medianRound.singleMs,
  executed: Math.max(...rounds.map((r) => r.executed)),
  newestActive: rounds.every((r) => r.newestActive),
  ratios: rounds.map((r) => r.convergedOverSingle),
  perRound: rounds,
};
console.log(
  `burst: ${BURST} activations at once on one Stage, ${rounds.length} rounds: at most ${figures.executed} executed (goal ≤ 2); the median round: all final after ${figures.convergedMs} ms = ${figures.convergedOverSingle} × one alone (${figures.singleMs} ms; goal ≤ 2 ×); rounds ${figures.ratios.join(', ')}`,
);
console.log(`  the newest ${figures.newestActive ? 'Succeeded in every round' : 'did NOT succeed in some round'}`);
writeResult('burst', figures);
process.exit(0);
