/**
 * High availability with replicas as separate processes (`tsx worker/main.ts watcher` and
 * `stage-controller`, two of each, leader election on, lease 5 s / renew deadline 3.5 s / retry
 * 0.5 s via env); the core and executor workers run in this process. SIGKILL both leaders during
 * a burst of activations on several Stages: the standbys take over within two lease durations, no
 * activation is lost or started twice, never two InProgress on a Stage, every Stage converges.
 * SIGSTOP the (new) leaders past their lease, let the standbys take over, SIGCONT: the old leaders
 * write nothing (KONFIDENCE_LOG_WRITES logs every write a process sends).
 * Each replica serves health on a port chosen here and advertises it as KONFIDENCE_ENDPOINT; a watch
 * on the ControllerStatus objects (docs/ha-publishing.md) records every value of
 * status.activeController: after the SIGKILL the new leader publishes itself within 10 s of the
 * takeover being seen (about one 2 s leadership check; a third of the publish interval); after the SIGSTOP/SIGCONT the field, once it names the new leader, never
 * names the resumed old one again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { WorkflowNotFoundError } from '@temporalio/client';
import { createInterface } from 'node:readline';
import { resumingWatch, type ResumingWatch } from './support/watch.js';
import { fileURLToPath } from 'node:url';
import { GROUP, VERSION } from '../api/group.js';
import { k8s } from '../k8s/client.js';
import { LEASE_NAMES } from '../k8s/leader-election.js';
import { pollUntil } from '../scripts/env/process.js';
import { freePort } from '../scripts/env/ports.js';
import { activationWorkflowId } from '../shared/activation.js';
import { activate, seedActive, seedStage } from './support/scenario.js';
import { quickDefaultPlan } from './support/stages.js';
import { startTestSystem, type TestSystem } from './support/system.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const LEASE_MS = 5_000;
const STAGES = ['red', 'green', 'blue'];
const REVISIONS = [1, 2, 3, 4, 5, 6, 7];
const FINAL = ['Succeeded', 'Failed', 'Skipped', 'Cancelled'];
type Role = 'watcher' | 'stage-controller';

interface Replica {
  role: Role;
  identity: string;
  child: ChildProcess;
  lines: string[];
  /** The health port as logged by the process (KONFIDENCE_HEALTH_PORT is chosen here). */
  port?: number;
  /** KONFIDENCE_ENDPOINT: what it publishes in its ControllerStatus while it leads. */
  endpoint: string;
}

/** One value of a ControllerStatus as the watch delivered it, and when (monotonic). */
interface Published {
  at: number;
  role: string;
  identity?: string;
  endpoint?: string;
  leaderSince?: string;
  lastUpdated?: string;
}

let s: TestSystem;
const replicas: Replica[] = [];
let watch: ResumingWatch | undefined;
/** Every change of the ControllerStatus objects in the system namespace, in the order received. */
const published: Published[] = [];
let statusWatch: ResumingWatch | undefined;
/** Per Stage: the most activations InProgress at one instant, seen on every status change. */
const maxInProgress = new Map<string, number>();
/** What broke the one-InProgress rule, to tell the story when it happens. */
const overlaps: string[] = [];
/** Per activation: its Stage and last phase, for the one-InProgress check. */
const phases = new Map<string, { stage: string; phase: string }>();
/** The phases and reasons each activation went through, as the watch saw them. */
const story = new Map<string, string[]>();

beforeAll(async () => {
  // Core and executor workers here; watcher and Stage controller only as the replicas below.
  s = await startTestSystem('ha', { watcher: false, stageController: false });
  await quickDefaultPlan(s, 1);
  watch = await resumingWatch(s.kc, `/apis/${GROUP}/${VERSION}/namespaces/${s.ns}/vectoractivations`, (_t, o) =>
    observeActivation(o),
  );
  statusWatch = await resumingWatch(
    s.kc,
    `/apis/${GROUP}/${VERSION}/namespaces/${s.systemNs}/controllerstatuses`,
    (_t, o) => {
      const a = o.status?.activeController;
      published.push({
        at: performance.now(),
        role: o.spec?.role ?? o.metadata?.name,
        identity: a?.identity,
        endpoint: a?.endpoint,
        leaderSince: a?.leaderSince,
        lastUpdated: a?.lastUpdated,
      });
    },
  );
});

function observeActivation(o: any): void {
  phases.set(o.metadata.name, { stage: o.spec.stage, phase: o.status?.phase ?? 'none' });
  const step = `${o.status?.phase ?? 'none'}/${o.status?.reason ?? ''}`;
  const seen = story.get(o.metadata.name) ?? [];
  if (seen.at(-1) !== step) story.set(o.metadata.name, [...seen, step]);
  const running = [...phases.entries()]
    .filter(([, p]) => p.stage === o.spec.stage && p.phase === 'InProgress')
    .map(([name]) => name);
  if (running.length > (maxInProgress.get(o.spec.stage) ?? 0)) {
    maxInProgress.set(o.spec.stage, running.length);
    if (running.length > 1)
      overlaps.push(`${running.join(' and ')} InProgress together at resourceVersion ${o.metadata.resourceVersion}`);
  }
}

afterAll(async () => {
  watch?.stop();
  statusWatch?.stop();
  for (const r of replicas) {
    try {
      process.kill(-r.child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await s?.stop();
});

/**
 * Waits until the watch saw `role`'s ControllerStatus name `r` (identity and endpoint) at or after
 * index `from` of `published`; returns that value and its index.
 */
async function publishedBy(
  role: Role,
  r: Replica,
  from: number,
  timeoutMs: number,
): Promise<{ value: Published; index: number }> {
  return pollUntil(
    () => {
      const index = published.findIndex(
        (p, i) => i >= from && p.role === role && p.identity === r.identity && p.endpoint === r.endpoint,
      );
      return index >= 0 ? { value: published[index]!, index } : undefined;
    },
    timeoutMs,
    `${r.identity} to publish itself in ControllerStatus ${role} (seen: ${JSON.stringify(published.filter((p) => p.role === role).slice(-3))})`,
    25,
  );
}

async function startReplica(role: Role, identity: string): Promise<Replica> {
  // The endpoint is known before start: a free port chosen here, served by the replica.
  const healthPort = await freePort();
  const endpoint = `http://127.0.0.1:${healthPort}`;
  const child = spawn('npx', ['tsx', 'worker/main.ts', role], {
    cwd: root,
    env: {
      ...process.env,
      KONFIDENCE_SYSTEM_NAMESPACE: s.systemNs,
      KONFIDENCE_QUEUE_SUFFIX: `-${s.ns}`,
      KONFIDENCE_WATCH_NAMESPACES: s.ns,
      KONFIDENCE_LEADER_ELECTION: 'true',
      KONFIDENCE_IDENTITY: identity,
      KONFIDENCE_LEASE_DURATION_MS: String(LEASE_MS),
      KONFIDENCE_RENEW_DEADLINE_MS: '3500',
      KONFIDENCE_RETRY_PERIOD_MS: '500',
      KONFIDENCE_HEALTH_PORT: String(healthPort),
      KONFIDENCE_ENDPOINT: endpoint,
      KONFIDENCE_LOG_WRITES: 'true',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group: signals reach tsx's node child too
  });
  const r: Replica = { role, identity, child, lines: [], endpoint };
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => {
      r.lines.push(line);
      const port = /health server listening on port (\d+)/.exec(line)?.[1];
      if (port) r.port = Number(port);
    });
  }
  replicas.push(r);
  return r;
}

const signal = (r: Replica, sig: NodeJS.Signals) => process.kill(-r.child.pid!, sig);

async function ready(r: Replica): Promise<void> {
  await pollUntil(
    async () => r.port !== undefined && (await fetch(`http://127.0.0.1:${r.port}/readyz`)).status === 200,
    90_000,
    `${r.identity} to be ready (log: ${r.lines.slice(-5).join(' | ')})`,
    250,
  );
  expect(`http://127.0.0.1:${r.port}`).toBe(r.endpoint);
  expect((await fetch(`http://127.0.0.1:${r.port}/healthz`)).status).toBe(200);
}

async function holder(role: Role): Promise<string> {
  try {
    const lease = await s.kc
      .makeApiClient(k8s.CoordinationV1Api)
      .readNamespacedLease({ name: LEASE_NAMES[role], namespace: s.systemNs });
    return lease.spec?.holderIdentity ?? '';
  } catch {
    return '';
  }
}

/** Waits until `role`'s Lease is held by someone other than `old`; the time it took since `since`. */
async function takeover(role: Role, old: string, since: number): Promise<{ by: string; ms: number }> {
  const by = await pollUntil(
    async () => {
      const h = await holder(role);
      return h && h !== old ? h : undefined;
    },
    30_000,
    `a standby to take the ${role} Lease from ${old}`,
    50,
  );
  return { by, ms: performance.now() - since };
}

const writes = (r: Replica, from = 0) => r.lines.slice(from).filter((l) => l.startsWith(`[write] ${r.identity} `));

async function allFinal(names: string[], timeoutMs: number): Promise<void> {
  await pollUntil(
    async () => {
      const vas = await s.objects.list('VectorActivation', s.ns);
      return names.every((n) => FINAL.includes(vas.find((va) => va.metadata.name === n)?.status?.phase));
    },
    timeoutMs,
    'every activation to finish',
    250,
  ).catch(async (err: Error) => {
    const left = (await s.objects.list('VectorActivation', s.ns)).filter((va) => !FINAL.includes(va.status?.phase));
    throw new Error(
      `${err.message}; unfinished: ${JSON.stringify(left.map((va) => ({ name: va.metadata.name, status: va.status?.phase })))}`,
    );
  });
}

/**
 * Every activation has exactly one workflow run (none lost, none started twice), except one the
 * watcher superseded before it started (a newer one of its Stage started with it): that has none.
 */
async function oneRunEach(names: string[]): Promise<void> {
  for (const name of names) {
    const va = await s.objects.get('VectorActivation', s.ns, name);
    const workflowId = activationWorkflowId({ namespace: s.ns, name, uid: va!.metadata.uid! });
    if (va?.status?.reason === 'Superseded' && String(va.status.message).startsWith('superseded before it started')) {
      await expect(s.client.workflow.getHandle(workflowId).describe()).rejects.toBeInstanceOf(WorkflowNotFoundError);
      continue;
    }
    const runs = await pollUntil(
      async () => {
        const found: string[] = [];
        for await (const w of s.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) found.push(w.runId);
        return found.length ? found : undefined;
      },
      30_000,
      `the workflow of ${name} in visibility`,
    );
    expect({ name, runs: runs.length }).toEqual({ name, runs: 1 });
  }
}

async function converged(revision: number): Promise<void> {
  for (const stage of STAGES) {
    const newest = await s.objects.get('VectorActivation', s.ns, `${stage}-to-${revision}`);
    const { phase, reason, message } = newest?.status ?? {};
    expect({ stage, phase, reason, message }).toEqual({ stage, phase: 'Succeeded', reason, message });
    expect((await s.objects.get('StageVersionUsage', s.ns, `${stage}-active`))?.spec.stageVersionRef.name).toBe(
      `${stage}-${revision}`,
    );
    // Written by the Stage controller's leader: the Stage's status follows the active usage.
    await pollUntil(
      async () => (await s.objects.get('Stage', s.ns, stage))?.status?.activeStageVersion === `${stage}-${revision}`,
      30_000,
      `Stage ${stage} to report ${stage}-${revision} active`,
    );
  }
}

it('SIGKILLed leaders of watcher and Stage controller during a burst: standbys take over within two lease durations; nothing lost, nothing twice, one InProgress per Stage', async () => {
  for (const stage of STAGES) {
    await seedStage(s, stage, REVISIONS, { stageVersionHistoryLimit: REVISIONS.length });
    await seedActive(s, stage, 1);
  }
  const all = await Promise.all([
    startReplica('watcher', 'watcher-a'),
    startReplica('stage-controller', 'sc-a'),
    startReplica('watcher', 'watcher-b'),
    startReplica('stage-controller', 'sc-b'),
  ]);
  await Promise.all(all.map(ready)); // standbys are ready too
  const leaderOf = async (role: Role) => {
    const h = await pollUntil(() => holder(role), 30_000, `a ${role} leader`);
    return replicas.find((r) => r.identity === h)!;
  };
  const [watcherLeader, scLeader] = [await leaderOf('watcher'), await leaderOf('stage-controller')];
  // The first leaders publish themselves (the claim the takeover has to replace).
  await Promise.all([
    publishedBy('watcher', watcherLeader, 0, 10_000),
    publishedBy('stage-controller', scLeader, 0, 10_000),
  ]);

  const burst = STAGES.flatMap((stage) => [2, 3, 4].map((r) => ({ stage, r, name: `${stage}-to-${r}` })));
  await Promise.all(burst.map(({ stage, r, name }) => activate(s, name, stage, r)));
  await pollUntil(
    async () => (await s.objects.list('VectorActivation', s.ns)).some((va) => va.status?.phase === 'InProgress'),
    60_000,
    'an activation to run',
  );
  const killedAt = performance.now();
  const seenBeforeKill = published.length;
  signal(watcherLeader, 'SIGKILL');
  signal(scLeader, 'SIGKILL');
  const [w, c] = await Promise.all([
    takeover('watcher', watcherLeader.identity, killedAt),
    takeover('stage-controller', scLeader.identity, killedAt),
  ]);
  console.log(
    `SIGKILL: watcher taken over by ${w.by} after ${Math.round(w.ms)} ms, stage-controller by ${c.by} after ${Math.round(c.ms)} ms (lease ${LEASE_MS} ms)`,
  );
  // One lease duration, and as much again for the standbys' retries and a loaded machine's late
  // timers and slow apiserver; a standby that does not take a dead leader's Lease never gets there.
  expect(w.ms).toBeLessThanOrEqual(2 * LEASE_MS);
  expect(c.ms).toBeLessThanOrEqual(2 * LEASE_MS);
  // The new leaders publish themselves, identity and endpoint, within about one leadership check
  // (2 s) of taking the Lease; the bound is a third of the 30 s publish interval, which a
  // publisher that waited for its next interval would overrun, with seconds to spare for load.
  const publishedAfterKill = await Promise.all(
    (
      [
        ['watcher', w],
        ['stage-controller', c],
      ] as const
    ).map(async ([role, t]) => {
      const { value } = await publishedBy(
        role,
        replicas.find((r) => r.identity === t.by)!,
        seenBeforeKill,
        15_000,
      );
      const afterTakeover = value.at - (killedAt + t.ms);
      // On the new leader's own clock: from taking the Lease (leaderSince) to the write (lastUpdated).
      const inProcess = Date.parse(value.lastUpdated!) - Date.parse(value.leaderSince!);
      return { role, identity: t.by, afterTakeover, inProcess };
    }),
  );
  console.log(
    `SIGKILL: published ${publishedAfterKill.map((p) => `${p.role} ${p.identity} ${Math.round(p.afterTakeover)} ms after the takeover was seen (${p.inProcess} ms after leaderSince)`).join(', ')}`,
  );
  for (const p of publishedAfterKill) {
    expect({ role: p.role, withinMs: p.afterTakeover <= 10_000 }).toEqual({ role: p.role, withinMs: true });
    expect({ role: p.role, withinMs: p.inProcess <= 10_000 }).toEqual({ role: p.role, withinMs: true });
  }

  await allFinal(
    burst.map((b) => b.name),
    150_000,
  );
  await oneRunEach(burst.map((b) => b.name));
  for (const stage of STAGES) {
    // On a failure, what each of the Stage's activations went through says why.
    const stories = Object.fromEntries(burst.filter((b) => b.stage === stage).map((b) => [b.name, story.get(b.name)]));
    expect({ stage, max: maxInProgress.get(stage), overlaps, watchEnded: watch?.ended, stories }).toEqual({
      stage,
      max: 1,
      overlaps: [],
      watchEnded: undefined,
      stories,
    });
  }
  await converged(4);
  survivors = [w.by, c.by].sort();
}, 300_000);

/** The leaders after the first test (whichever of each pair won the first election survived the kill). */
let survivors: string[] = [];

it('a leader SIGSTOPped past its lease and resumed after a standby took over writes nothing', async () => {
  // Two replicas of each role again: the survivors of the first test lead, fresh standbys join.
  const standbys = await Promise.all([startReplica('watcher', 'watcher-c'), startReplica('stage-controller', 'sc-c')]);
  await Promise.all(standbys.map(ready));
  const holders = [await holder('watcher'), await holder('stage-controller')];
  const paused = holders.map((h) => replicas.find((r) => r.identity === h)!);
  expect(paused.map((r) => r.identity).sort()).toEqual(survivors);

  // Work for the current leaders first, so their write log is known to record writes.
  await Promise.all(STAGES.map((stage) => activate(s, `${stage}-to-5`, stage, 5)));
  await allFinal(
    STAGES.map((st) => `${st}-to-5`),
    120_000,
  );
  for (const r of paused)
    await pollUntil(() => writes(r).length > 0, 30_000, `${r.identity} to have written as leader`);

  const stoppedAt = performance.now();
  const seenBeforeStop = published.length;
  for (const r of paused) signal(r, 'SIGSTOP');
  let resumedAt: number[] = [];
  /** Per paused replica: the index in `published` where its successor first named itself. */
  let successorPublishedAt: number[] = [];
  try {
    const [w, c] = await Promise.all(paused.map((r) => takeover(r.role, r.identity, stoppedAt)));
    console.log(
      `SIGSTOP: watcher taken over by ${w!.by} after ${Math.round(w!.ms)} ms, stage-controller by ${c!.by} after ${Math.round(c!.ms)} ms`,
    );
    expect([w!.by, c!.by].sort()).toEqual(['sc-c', 'watcher-c']);
    // As after the SIGKILL: a lease duration, and as much again for a loaded machine.
    expect(Math.max(w!.ms, c!.ms)).toBeLessThanOrEqual(2 * LEASE_MS);
    successorPublishedAt = (
      await Promise.all(
        paused.map((r) =>
          publishedBy(
            r.role,
            standbys.find((x) => x.role === r.role)!,
            seenBeforeStop,
            15_000,
          ),
        ),
      )
    ).map((p) => p.index);
    // Work while the old leaders are frozen, done by the new ones.
    await Promise.all(STAGES.map((stage) => activate(s, `${stage}-to-6`, stage, 6)));
    await allFinal(
      STAGES.map((st) => `${st}-to-6`),
      120_000,
    );
  } finally {
    resumedAt = paused.map((r) => r.lines.length);
    for (const r of paused) signal(r, 'SIGCONT');
  }
  // More work after the resume, which the old leaders see in their (stale, then refreshed) caches.
  await Promise.all(STAGES.map((stage) => activate(s, `${stage}-to-7`, stage, 7)));
  await allFinal(
    STAGES.map((st) => `${st}-to-7`),
    120_000,
  );
  await oneRunEach(STAGES.flatMap((st) => [`${st}-to-6`, `${st}-to-7`]));
  await converged(7);
  // The resumed processes noticed they lost the Lease, and wrote nothing since the resume.
  for (const r of paused) {
    await pollUntil(
      () => r.lines.some((l) => l.includes(`${r.identity} stopped leading`)),
      30_000,
      `${r.identity} to notice it lost the Lease`,
    );
  }
  // Their publishers ran a pass since the resume (and found they do not lead): the watch below
  // covers what a resumed publisher could have written. A leader's publisher sleeps its 30 s
  // publish interval, part of which passed while it was stopped.
  const resumeCheckedFrom = performance.now();
  for (const [i, r] of paused.entries()) {
    await pollUntil(
      () => r.lines.slice(resumedAt[i]).some((l) => l.includes(`${r.identity} does not lead ${r.role}`)),
      35_000,
      `the publisher of the resumed ${r.identity} to find it does not lead`,
      100,
    );
  }
  console.log(
    `SIGCONT: the resumed publishers' first passes seen ${Math.round(performance.now() - resumeCheckedFrom)} ms after the work following the resume; ${published.length - seenBeforeStop} ControllerStatus changes watched since the SIGSTOP`,
  );
  // No flapping: once the successor published, the ControllerStatus never named the old leader again.
  expect(
    paused.map((r, i) => ({
      role: r.role,
      namingOldLeader: published
        .slice(successorPublishedAt[i])
        .filter((p) => p.role === r.role && p.identity === r.identity),
    })),
  ).toEqual(paused.map((r) => ({ role: r.role, namingOldLeader: [] })));
  for (const r of paused) {
    const now = (await s.objects.get('ControllerStatus', s.systemNs, r.role))?.status?.activeController;
    expect({ role: r.role, identity: now?.identity, endpoint: now?.endpoint }).toEqual({
      role: r.role,
      identity: standbys.find((x) => x.role === r.role)!.identity,
      endpoint: standbys.find((x) => x.role === r.role)!.endpoint,
    });
  }
  expect(paused.map((r, i) => ({ identity: r.identity, writesAfterResume: writes(r, resumedAt[i]) }))).toEqual(
    paused.map((r) => ({ identity: r.identity, writesAfterResume: [] })),
  );
  // They are standbys now.
  expect([await holder('watcher'), await holder('stage-controller')].sort()).toEqual(['sc-c', 'watcher-c']);
  expect(paused.every((r) => r.child.exitCode === null)).toBe(true);
}, 300_000);
