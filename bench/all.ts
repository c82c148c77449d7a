/**
 * npm run bench — every benchmark's figures in one run, each benchmark in a process of its own on
 * the same local servers, one after the other; then one table against the goals, also written as
 * bench/results/all-<time>.json. Each benchmark's own JSON stays in bench/results/ next to it.
 * Run: npm run bench [-- --quick] (quick: fewer runs, 40 Stages for throughput, smaller bursts: to try it out).
 * Exits 1, naming them, when any benchmark failed; a goal not met is a row marked NO and listed.
 * The whole run takes about 28 minutes on the 2-core machine.
 */
import { runBench, writeResult } from './report.js';

const quick = process.argv.includes('--quick');
const benches: { name: string; args: string[] }[] = [
  { name: 'activation', args: ['--runs', quick ? '5' : '20'] },
  { name: 'cost', args: ['--runs', quick ? '3' : '5'] },
  { name: 'burst', args: ['--burst', '50', '--rounds', quick ? '1' : '5'] },
  {
    name: 'throughput',
    args: quick
      ? ['--stages', '40', '--namespaces', '4', '--seconds', '20', '--warmup', '30']
      : ['--seconds', '60', '--warmup', '120'],
  },
  { name: 'fairness', args: ['--burst', quick ? '50' : '200', '--runs', quick ? '3' : '5'] },
  // The watch side at scale: one watcher over 200 namespaces × 50 finished VectorActivations.
  {
    name: 'shards',
    args: ['--namespaces', '200', '--per-namespace', quick ? '10' : '50', '--shards', '4', '--runs', '1'],
  },
  // 2000 Stages and 10,000 VectorActivations (40 unfinished): the Stage controller and the watcher, each started twice.
  {
    name: 'scale',
    args: quick ? ['--namespaces', '4', '--stages', '200', '--activations', '1000', '--unfinished', '8'] : [],
  },
  // A canary of three weights against a plain switch; 1,000 activations waiting at gates against idle.
  {
    name: 'progressive',
    args: quick ? ['--pairs', '4', '--gates', '100', '--namespaces', '4', '--seconds', '30'] : [],
  },
  // A core worker's start with the image's prebuilt workflow bundle against bundling at start.
  { name: 'startup', args: ['--runs', quick ? '2' : '5'] },
  // Requests through the local gateway: how soon a switch reaches them all, failures, a canary's split.
  { name: 'data-plane', args: ['--switches', quick ? '5' : '20'] },
];

const results: Record<string, any> = {};
/** The benchmarks that did not finish (a crash, an exit other than 0, or no result written): their figures are not shown. */
const failed: string[] = [];
for (const b of benches) {
  console.log(`\n=== bench/${b.name}.ts ${b.args.join(' ')}`);
  const run = runBench(b.name, b.args);
  // The SDK's warnings (slow workflow tasks under load) go to stderr: kept out of the table, counted.
  const warnings = (run.stderr.match(/WARN/g) ?? []).length;
  const { result } = run;
  if (run.status !== 0 || !result) {
    console.log(
      `bench/${b.name}.ts failed (exit ${run.status ?? run.signal}${result ? '' : ', no result written'}):\n${run.stderr.split('\n').slice(-20).join('\n')}`,
    );
    failed.push(b.name);
    continue;
  }
  results[b.name] = { ...result, sdkWarnings: warnings };
}

const a = results.activation,
  c = results.cost,
  u = results.burst,
  t = results.throughput,
  f = results.fairness;
const whole = results.shards?.summary?.find((s: any) => s.shards === 1);
const sc = results.scale;
const st = results.startup?.summary;
const pc = results.progressive?.canary,
  pg = results.progressive?.gates;
const dp = results['data-plane'];
/** Within noise: no more than a tenth more, plus one percent of a core. */
const indistinguishable = (idle: number, loaded: number) => loaded <= idle * 1.1 + 1;
const started = (role: string, start: string) => sc?.starts?.find((x: any) => x.role === role && x.start === start);
const [scFirst, scRestart, wFirst, wRestart] = [
  started('stage-controller', 'first'),
  started('stage-controller', 'restart'),
  started('watcher', 'first'),
  started('watcher', 'restart'),
];
const row = (figure: string, value: string, goal: string, met?: boolean) => ({
  figure,
  value,
  goal,
  met: met === undefined ? '–' : met ? 'yes' : 'NO',
});
const table = [
  row(
    'activation create → Succeeded (2 steps)',
    a ? `p50 ${a.latencyMs.median} ms, p95 ${a.latencyMs.p95} ms` : 'not measured',
    '–',
  ),
  row(
    'slowest workflow task (bench:activation, the first on a fresh worker among them)',
    a?.workflowTasks
      ? `${a.workflowTasks.slowest.ms} ms of ${a.workflowTasks.tasks} (slowest first task ${a.workflowTasks.slowestFirst.ms} ms)`
      : 'not measured',
    '≤ 1000 ms',
    a?.workflowTasks && a.workflowTasks.slowest.ms <= 1000,
  ),
  row(
    'activation / apiserver floor',
    c
      ? `${c.activationOverFloor}× (${c.activationMs} ms vs ${c.floorRequests} requests in ${c.floorMs} ms)`
      : 'not measured',
    '≤ 2×',
    c && c.activationOverFloor <= 2,
  ),
  row(
    'handoff on one Stage',
    a ? `p50 ${a.handoffMs.median} ms, p95 ${a.handoffMs.p95} ms` : 'not measured',
    'p50 ≤ 100 ms',
    a && a.handoffMs.median <= 100,
  ),
  row(
    'burst of 50 on one Stage: executed (worst round)',
    u ? String(u.executed) : 'not measured',
    '≤ 2',
    u && u.executed <= 2,
  ),
  row(
    'burst of 50: converged / one alone (median round)',
    u
      ? `${u.convergedOverSingle}× (${u.convergedMs} vs ${u.singleMs} ms; rounds ${u.ratios?.join(', ')})`
      : 'not measured',
    '≤ 2×',
    u && u.convergedOverSingle <= 2,
  ),
  row(
    `throughput, ${t?.stages ?? 200} Stages`,
    t
      ? `${t.perSecond}/s, p50 ${t.latencyMs.p50} ms, p99 ${t.latencyMs.p99} ms; the servers' CPU alone allows ${t.serversAllowPerSecond}/s on ${t.coresBusy.cores} cores`
      : 'not measured',
    '≥ 6/s',
    t && t.perSecond >= 6,
  ),
  row(
    'throughput: CPU ms per activation',
    t
      ? Object.entries(t.cpuMsPerActivation)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')
      : 'not measured',
    'ours ≤ 80',
    t ? (t.cpuMsPerActivation['konfidence (this process)'] ?? Infinity) <= 80 : false,
  ),
  row(
    `fairness: B during A's burst of ${f?.burst ?? 200} / idle`,
    f ? `${f.loadedOverIdle}× (${f.loadedMs} vs ${f.idleMs} ms)` : 'not measured',
    '≤ 2×',
    f && f.loadedOverIdle <= 2,
  ),
  row(
    `watcher RSS, ${whole ? `${results.shards.namespaces * results.shards.perNamespace}` : '?'} finished VectorActivations`,
    whole ? `${whole.rssMiB} MiB (heap ${whole.heapMiB} MiB), ready ${whole.readyMs} ms` : 'not measured',
    '≤ 200 MB',
    whole && whole.rssMiB * 1.048576 <= 200,
  ),
  row(
    'cost: apiserver requests / writes per activation',
    c ? `${c.apiserverRequests} / ${c.apiserverWrites}` : 'not measured',
    '≤ 40 / ≤ 28',
    c ? c.apiserverRequests <= 40 && c.apiserverWrites <= 28 : false,
  ),
  row(
    'cost: history events per activation',
    c ? `workflow ${c.historyEvents}, Stage lock ${c.lockHistoryEvents}` : 'not measured',
    '–',
  ),
  row(
    `Stage controller, ${sc?.stages ?? '?'} Stages: RSS first start / restart`,
    scFirst
      ? `${scFirst.rssMiB} / ${scRestart.rssMiB} MiB (converged after ${scFirst.quietMs} ms, ${scFirst.apiserverWrites} writes; restart ready ${scRestart.readyMs} ms, ${scRestart.apiserverWrites} writes)`
      : 'not measured',
    '≤ 200 MB',
    scFirst && Math.max(scFirst.rssMiB, scRestart.rssMiB) * 1.048576 <= 200,
  ),
  row(
    `watcher, ${sc?.activations ?? '?'} VectorActivations: RSS, ready`,
    wFirst ? `${wFirst.rssMiB} MiB, ready ${wFirst.readyMs} ms` : 'not measured',
    '≤ 200 MB',
    wFirst && wFirst.rssMiB * 1.048576 <= 200,
  ),
  row(
    "canary 10 → 50 → 100 %: its step / Temporal's bare step",
    pc?.stepOverBare
      ? `${pc.stepOverBare}× (${pc.oursPerStepMs} vs ${pc.stepShape.bare.perStepMs} ms; with a step's apiserver requests ${pc.stepShape.writes.perStepMs} ms; canary ${pc.canaryMs.median} vs plain ${pc.plainMs.median} ms)`
      : 'not measured',
    '≤ 1.2×',
    pc?.stepOverBare !== undefined && pc.stepOverBare <= 1.2,
  ),
  row(
    `${pg?.gates ?? 1000} activations at gates: CPU % of a core, all processes`,
    pg ? `${pg.totalGated} % vs ${pg.totalIdle} % idle` : 'not measured',
    'as idle',
    pg && indistinguishable(pg.totalIdle, pg.totalGated),
  ),
  row(
    `${pg?.gates ?? 1000} activations at gates: peak RSS, watcher / Stage controller / core`,
    pg ? `${pg.peakRssMiB.watcher} / ${pg.peakRssMiB['stage-controller']} / ${pg.peakRssMiB.core} MiB` : 'not measured',
    '≤ 200 MB (watcher, Stage controller), ≤ 300 MiB (core)',
    pg &&
      Math.max(pg.peakRssMiB.watcher, pg.peakRssMiB['stage-controller']) * 1.048576 <= 200 &&
      pg.peakRssMiB.core <= 300,
  ),
  row(
    `${pg?.gates ?? 1000} activations at gates: the core worker's RSS while they wait, first / last / max`,
    pg?.coreRssWhileWaitingMiB
      ? `${pg.coreRssWhileWaitingMiB.first} / ${pg.coreRssWhileWaitingMiB.last} / ${pg.coreRssWhileWaitingMiB.max} MiB over ${pg.coreRssWhileWaitingMiB.minutes} min; a woken gate's approval p50 ${pg.wokenApprovalMs.median} ms`
      : 'not measured',
    'flat (last ≤ first + 10 %)',
    pg?.coreRssWhileWaitingMiB && pg.coreRssWhileWaitingMiB.last <= pg.coreRssWhileWaitingMiB.first * 1.1,
  ),
  row(
    'core worker start: prebuilt workflow bundle / bundled at start, median',
    st
      ? `ready ${st.prebuilt.readyMs.median} / ${st['bundled at start'].readyMs.median} ms, CPU ${st.prebuilt.cpuSeconds.median} / ${st['bundled at start'].cpuSeconds.median} ms, peak RSS ${st.prebuilt.peakRssMiB.median} / ${st['bundled at start'].peakRssMiB.median} MiB`
      : 'not measured',
    '–',
  ),
  row(
    `data plane: route write → every request on the new version, ${dp?.switches ?? '?'} switches`,
    dp ? `p50 ${dp.switchedInMs.median} ms, p95 ${dp.switchedInMs.p95} ms` : 'not measured',
    'p95 ≤ 1000 ms',
    dp && dp.switchedInMs.p95 <= 1000,
  ),
  row(
    'data plane: failed requests (switches and a canary, 200 req/s)',
    dp ? `${dp.failedRequests} of ${dp.requests}` : 'not measured',
    '0',
    dp && dp.failedRequests === 0,
  ),
  row(
    "data plane: a canary's largest split error (10 → 50 → 100 %)",
    dp ? `${dp.worstSplitErrorPoints} points (${dp.canaryWindows.length} windows)` : 'not measured',
    '≤ 5 points',
    dp && dp.worstSplitErrorPoints <= 5,
  ),
  row(
    'watcher: workflow starts at start-up / restart',
    wFirst ? `${wFirst.workflowStarts} / ${wRestart.workflowStarts} (${sc.unfinished} unfinished)` : 'not measured',
    '= unfinished',
    wFirst && wFirst.workflowStarts === sc.unfinished && wRestart.workflowStarts === sc.unfinished,
  ),
];
console.log('\nkonfidence-activation benchmark (npm run bench)');
console.table(table);
const unmet = table.filter((r) => r.met === 'NO').map((r) => r.figure);
console.log(`written: ${writeResult('all', { quick, table, results, failed, unmet })}`);
if (unmet.length) console.log(`goals not met: ${unmet.join('; ')}`);
if (failed.length) {
  console.log(`FAILED: ${failed.map((n) => `bench/${n}.ts`).join(', ')}`);
  process.exit(1);
}
process.exit(0);
