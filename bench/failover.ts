/**
 * bench/failover — how long a failover of the elected roles takes on the real local servers (not a
 * test). Each run starts two watcher and two stage-controller replicas as processes
 * (`tsx worker/main.ts ROLE`, leader election on, each with its own health port as
 * KONFIDENCE_ENDPOINT); the core and executor workers run in this process. It SIGKILLs the leader
 * of each role, creates a VectorActivation right after, and measures:
 *   published: SIGKILL → the new leader named (identity and endpoint) in its role's ControllerStatus;
 *   activation: SIGKILL → that VectorActivation InProgress (it waits for the new watcher leader).
 * Times are when this process receives the watch events. The survivors are stopped with SIGTERM
 * (they release their Leases) before the next run. Defaults are the shipped durations.
 * Run: npm run bench:failover [-- --runs N --lease-ms 15000 --renew-deadline-ms 10000 --retry-ms 2000]
 * Prints median and max, and writes them with every run's figures to bench/results/.
 */
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { GROUP, VERSION } from '../api/group.js';
import { k8s, loadKubeConfig } from '../k8s/client.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { LEASE_NAMES } from '../k8s/leader-election.js';
import { up } from '../scripts/env/control-plane.js';
import { freePort } from '../scripts/env/ports.js';
import { pollUntil } from '../scripts/env/process.js';
import { startSystem } from '../worker/system.js';
import { buildDist } from '../scripts/dist.js';
import { benchActivation, seedBench, spawnRole } from './fixture.js';
import { numberArg } from './report.js';

buildDist(); // the roles run as the image runs them: compiled (scripts/dist.ts)

const RUNS = Math.min(numberArg('runs', 5), 90); // one StageVersion a run, history limit 100
const LEASE_MS = numberArg('lease-ms', 15_000);
const RENEW_DEADLINE_MS = numberArg('renew-deadline-ms', 10_000);
const RETRY_MS = numberArg('retry-ms', 2_000);
const ROLES = ['watcher', 'stage-controller'] as const;
type Role = (typeof ROLES)[number];

Runtime.install({ logger: new DefaultLogger('ERROR') });
const cp = await up(() => undefined);
const kc = loadKubeConfig(cp.kubeconfig);
const objects = new CustomObjects(kc);
const leases = kc.makeApiClient(k8s.CoordinationV1Api);
const id = randomBytes(3).toString('hex');
const ns = `bench-failover-${id}`;
const systemNs = `bench-failover-${id}-sys`;
const total = RUNS + 1;
await seedBench(kc, ns, systemNs, total);

// Core and executor workers here; watcher and Stage controller only as the replica processes.
const system = await startSystem({
  temporalAddress: cp.temporalAddress,
  temporalNamespace: cp.testTemporalNamespace, // apart from what a person looks at
  kubeConfig: kc,
  systemNamespace: systemNs,
  namespaces: [ns],
  queueSuffix: `-${ns}`,
  watcher: false,
  stageController: false,
  log: () => undefined,
});

interface Replica {
  role: Role;
  identity: string;
  endpoint: string;
  child: ChildProcess;
  lines: string[];
}
const replicas: Replica[] = [];

async function startReplica(role: Role, identity: string): Promise<Replica> {
  const port = await freePort();
  const endpoint = `http://127.0.0.1:${port}`;
  const child = spawnRole(
    cp,
    role,
    systemNs,
    {
      KONFIDENCE_QUEUE_SUFFIX: `-${ns}`,
      KONFIDENCE_WATCH_NAMESPACES: ns,
      KONFIDENCE_LEADER_ELECTION: 'true',
      KONFIDENCE_IDENTITY: identity,
      KONFIDENCE_LEASE_DURATION_MS: String(LEASE_MS),
      KONFIDENCE_RENEW_DEADLINE_MS: String(RENEW_DEADLINE_MS),
      KONFIDENCE_RETRY_PERIOD_MS: String(RETRY_MS),
      KONFIDENCE_HEALTH_PORT: String(port),
      KONFIDENCE_ENDPOINT: endpoint,
    },
    ['ignore', 'pipe', 'pipe'],
  );
  const r: Replica = { role, identity, endpoint, child, lines: [] };
  for (const stream of [child.stdout!, child.stderr!])
    createInterface({ input: stream }).on('line', (l) => r.lines.push(l));
  replicas.push(r);
  await pollUntil(
    async () => (await fetch(`${endpoint}/readyz`)).status === 200,
    120_000,
    `${identity} to be ready (log: ${r.lines.slice(-5).join(' | ')})`,
    250,
  );
  return r;
}

const signal = (r: Replica, sig: NodeJS.Signals) => {
  try {
    process.kill(-r.child.pid!, sig);
  } catch {
    // gone
  }
};
const exited = (r: Replica) => r.child.exitCode !== null || r.child.signalCode !== null;

async function holder(role: Role): Promise<string> {
  try {
    return (
      (await leases.readNamespacedLease({ name: LEASE_NAMES[role], namespace: systemNs })).spec?.holderIdentity ?? ''
    );
  } catch {
    return '';
  }
}

// What this process sees, when: VectorActivation phases and ControllerStatus values.
const phases = new Map<string, Map<string, number>>();
const vaWatch = await new k8s.Watch(kc).watch(
  `/apis/${GROUP}/${VERSION}/namespaces/${ns}/vectoractivations`,
  {},
  (_t, o: any) => {
    const at = performance.now();
    const seen = phases.get(o.metadata.name) ?? new Map<string, number>();
    if (o.status?.phase && !seen.has(o.status.phase)) seen.set(o.status.phase, at);
    phases.set(o.metadata.name, seen);
  },
  () => undefined,
);
const published: { at: number; role: string; identity?: string; endpoint?: string }[] = [];
const statusWatch = await new k8s.Watch(kc).watch(
  `/apis/${GROUP}/${VERSION}/namespaces/${systemNs}/controllerstatuses`,
  {},
  (_t, o: any) => {
    published.push({
      at: performance.now(),
      role: o.spec?.role,
      identity: o.status?.activeController?.identity,
      endpoint: o.status?.activeController?.endpoint,
    });
  },
  () => undefined,
);
const phaseAt = (name: string, phase: string, timeoutMs = 120_000) =>
  pollUntil(() => phases.get(name)?.get(phase), timeoutMs, `${name} ${phase}`, 5);
/** When the watch first saw `role`'s ControllerStatus name `r` at or after index `from`. */
const publishedAt = (role: Role, r: Replica, from: number, timeoutMs: number) =>
  pollUntil(
    () =>
      published.slice(from).find((p) => p.role === role && p.identity === r.identity && p.endpoint === r.endpoint)?.at,
    timeoutMs,
    `${r.identity} published in ControllerStatus ${role}`,
    5,
  );

interface Run {
  run: number;
  watcherPublishedMs: number;
  stageControllerPublishedMs: number;
  activationInProgressMs: number;
  newLeaders: Record<Role, string>;
}
const runs: Run[] = [];
const waitLimit = 2 * LEASE_MS + 60_000;
try {
  for (let run = 1; run <= RUNS; run++) {
    const revision = run + 1;
    const started = await Promise.all(
      ROLES.flatMap((role) =>
        ['a', 'b'].map((x) => startReplica(role, `${role === 'watcher' ? 'watcher' : 'sc'}-${run}${x}`)),
      ),
    );
    // The leaders of this run, published (the claim a new leader has to replace).
    const leaders = {} as Record<Role, Replica>;
    for (const role of ROLES) {
      const h = await pollUntil(
        async () => {
          const now = await holder(role);
          return started.some((r) => r.identity === now) ? now : undefined;
        },
        waitLimit,
        `a ${role} leader among this run's replicas`,
      );
      leaders[role] = started.find((r) => r.identity === h)!;
      await publishedAt(role, leaders[role], 0, 30_000);
    }
    const from = published.length;
    const killedAt = performance.now();
    for (const role of ROLES) signal(leaders[role], 'SIGKILL');
    await objects.create(benchActivation(ns, revision));
    const standby = (role: Role) => started.find((r) => r.role === role && r !== leaders[role])!;
    const [w, c, inProgress] = await Promise.all([
      publishedAt('watcher', standby('watcher'), from, waitLimit),
      publishedAt('stage-controller', standby('stage-controller'), from, waitLimit),
      phaseAt(`to-${revision}`, 'InProgress', waitLimit),
    ]);
    const result: Run = {
      run,
      watcherPublishedMs: Math.round(w - killedAt),
      stageControllerPublishedMs: Math.round(c - killedAt),
      activationInProgressMs: Math.round(inProgress - killedAt),
      newLeaders: { watcher: standby('watcher').identity, 'stage-controller': standby('stage-controller').identity },
    };
    runs.push(result);
    console.log(`run ${run}/${RUNS}: ${JSON.stringify(result)}`);
    await phaseAt(`to-${revision}`, 'Succeeded');
    // The survivors release their Leases on SIGTERM: the next run's replicas take them at once.
    for (const r of started) if (!exited(r)) signal(r, 'SIGTERM');
    await pollUntil(() => started.every(exited), 30_000, `run ${run}'s replicas to exit`);
  }
} finally {
  for (const r of replicas) if (!exited(r)) signal(r, 'SIGKILL');
  vaWatch.abort();
  statusWatch.abort();
  await system.stop();
}

const stats = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const median = s.length % 2 ? s[(s.length - 1) / 2]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  return { runs: s.length, median: Math.round(median), max: Math.round(s[s.length - 1]!) };
};
const summary = {
  'SIGKILL → new watcher leader published': stats(runs.map((r) => r.watcherPublishedMs)),
  'SIGKILL → new stage-controller leader published': stats(runs.map((r) => r.stageControllerPublishedMs)),
  'SIGKILL → next activation InProgress': stats(runs.map((r) => r.activationInProgressMs)),
};
console.log(
  `\nfailover, lease ${LEASE_MS} ms, renew deadline ${RENEW_DEADLINE_MS} ms, retry ${RETRY_MS} ms, ${runs.length} runs (ms):`,
);
const width = Math.max(...Object.keys(summary).map((k) => k.length));
console.log(`${'measure'.padEnd(width)}  ${'median'.padStart(7)}  ${'max'.padStart(7)}`);
for (const [k, v] of Object.entries(summary))
  console.log(`${k.padEnd(width)}  ${String(v.median).padStart(7)}  ${String(v.max).padStart(7)}`);

const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
mkdirSync(resultsDir, { recursive: true });
const file = `${resultsDir}failover-${new Date().toISOString().replace(/[:.]/g, '-')}.json`;
writeFileSync(
  file,
  `${JSON.stringify({ date: new Date().toISOString(), leaseDurationMs: LEASE_MS, renewDeadlineMs: RENEW_DEADLINE_MS, retryPeriodMs: RETRY_MS, summary, runs }, null, 2)}\n`,
);
console.log(`written to ${file}`);
process.exit(0);
