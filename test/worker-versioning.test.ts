/**
 * Controller versions with Temporal Worker Versioning (docs/scale.md): two builds of the core
 * worker run side by side as subprocesses (`tsx worker/main.ts core`, KONFIDENCE_BUILD_ID v1 and
 * v2), the watcher and the executors in this process, `konfidence rollout` in process too. Each
 * VectorActivation's status names the build that wrote it (status.coreBuildId): the observable
 * difference between the two builds.
 * v1 current, v2 on canary for namespace B: B's activations run on v2, A's on v1. An activation in
 * flight on v1 when v2 is promoted finishes on v1, and the Stage lock it holds (which follows the
 * current build) hands the Stage to an activation started on v2. After promotion new activations
 * run on v2; after a rollback on v1 again. Nothing is lost: every activation Succeeded, one run each.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { run } from '../cli/run.js';
import { pollUntil } from '../scripts/env/process.js';
import { activationWorkflowId } from '../shared/activation.js';
import { stageLockWorkflowId } from '../stage-lock/contract.js';
import { ActivationController } from '../controllers/activation/controller.js';
import { freshNamespace } from './support/cluster.js';
import { activate, seedActive, seedSleepyPlan, seedStage } from './support/scenario.js';
import { quickDefaultPlan } from './support/stages.js';
import { create, object, startTestSystem, type TestSystem } from './support/system.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const SLOW_SECONDS = 8;

let s: TestSystem;
let b: TestSystem;
let watcher: ActivationController;
const workers: { build: string; child: ChildProcess; lines: string[] }[] = [];

beforeAll(async () => {
  // Executors here; the core only as the two builds below; our own watcher over two namespaces.
  s = await startTestSystem('wv', { core: false, stageController: false, watcher: false });
  b = { ...s, ns: await freshNamespace('wv-b') };
  watcher = new ActivationController({
    kubeConfig: s.kc,
    client: s.client,
    taskQueue: s.coreTaskQueue,
    queueSuffix: `-${s.ns}`,
    namespaces: [s.ns, b.ns],
    systemNamespace: s.systemNs,
    log: () => undefined,
  });
  await watcher.start();
  await quickDefaultPlan(s, 0);
  await seedSleepyPlan(s, 'slow', SLOW_SECONDS);
  for (const [t, stage] of [
    [s, 'alpha'],
    [s, 'slow'],
    [b, 'beta'],
  ] as const) {
    await seedStage(t, stage, [1, 2, 3, 4, 5]);
    await seedActive(t, stage, 1);
  }
}, 120_000);

afterAll(async () => {
  await watcher?.stop();
  for (const w of workers) {
    try {
      process.kill(-w.child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await s?.stop();
});

function startCore(build: string): void {
  const child = spawn('npx', ['tsx', 'worker/main.ts', 'core'], {
    cwd: root,
    env: {
      ...process.env,
      KONFIDENCE_SYSTEM_NAMESPACE: s.systemNs,
      KONFIDENCE_QUEUE_SUFFIX: `-${s.ns}`,
      KONFIDENCE_BUILD_ID: build,
      KONFIDENCE_HEALTH_PORT: '0',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group: the kill reaches tsx's node child too
  });
  const w = { build, child, lines: [] as string[] };
  for (const stream of [child.stdout!, child.stderr!])
    createInterface({ input: stream }).on('line', (l) => w.lines.push(l));
  workers.push(w);
}

async function konfidence(...argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out: string[] = [];
  const err: string[] = [];
  const code = await run(
    [...argv, '--deployment', `konfidence-core-${s.ns}`, '--system-namespace', s.systemNs],
    { out: (t) => out.push(t), err: (t) => err.push(t) },
    'konfidence',
  );
  return { code, out: out.join('\n'), err: err.join('\n') };
}

/** Waits for a build's worker to have polled: the deployment knows the version. */
async function knownBuild(build: string): Promise<void> {
  await pollUntil(
    async () => {
      const r = await konfidence('rollout', 'status', '-o', 'json');
      return r.code === 0 && (JSON.parse(r.out) as { builds: string[] }).builds.includes(build);
    },
    90_000,
    `core worker ${build} to poll (log: ${workers
      .find((w) => w.build === build)
      ?.lines.slice(-3)
      .join(' | ')})`,
    500,
  );
}

type Va = {
  metadata: { name: string; namespace: string; uid: string };
  status?: { phase?: string; coreBuildId?: string; attempt?: number };
};
async function va(t: TestSystem, name: string): Promise<Va | undefined> {
  return (await t.objects.get('VectorActivation', t.ns, name)) as Va | undefined;
}
async function finished(t: TestSystem, name: string, timeoutMs = 60_000): Promise<Va> {
  return pollUntil(
    async () => {
      const o = await va(t, name);
      return o && ['Succeeded', 'Failed', 'Skipped', 'Cancelled'].includes(o.status?.phase ?? '') ? o : undefined;
    },
    timeoutMs,
    `VectorActivation ${t.ns}/${name} to finish (now ${JSON.stringify((await va(t, name))?.status?.phase)})`,
    200,
  );
}

/** The versioning behaviour and build the server recorded for a workflow's latest run. */
async function versioning(workflowId: string): Promise<{ behavior?: string; buildId?: string }> {
  const info = (await s.client.workflow.getHandle(workflowId).describe()).raw.workflowExecutionInfo?.versioningInfo;
  const behavior = { 1: 'PINNED', 2: 'AUTO_UPGRADE' }[Number(info?.behavior ?? 0)];
  const buildId = info?.deploymentVersion?.buildId ?? undefined;
  return { ...(behavior ? { behavior } : {}), ...(buildId ? { buildId } : {}) };
}

/** The build each activation ran on, by name. */
const ran: { system: TestSystem; name: string; build: string }[] = [];
async function expectRanOn(t: TestSystem, name: string, build: string): Promise<void> {
  const o = await finished(t, name);
  expect({ name, phase: o.status?.phase, build: o.status?.coreBuildId }).toEqual({ name, phase: 'Succeeded', build });
  ran.push({ system: t, name, build });
}

it('canaries, promotes and rolls back the core build per namespace; in-flight activations stay on their build', async () => {
  startCore('v1');
  await knownBuild('v1');
  // A build nobody runs cannot be made current: the message says what to start.
  const refused = await konfidence('rollout', 'promote', 'v9');
  expect(refused.code).toBe(1);
  expect(refused.err).toContain('start core workers with KONFIDENCE_BUILD_ID=v9');
  expect((await konfidence('rollout', 'promote', 'v1')).code).toBe(0);
  startCore('v2');
  await knownBuild('v2');

  // Canary: B's new activations start pinned to v2, A's follow the current version v1.
  const canary = await konfidence('rollout', 'canary', 'v2', '--namespaces', b.ns);
  expect(canary).toMatchObject({ code: 0, out: `new activations of ${b.ns} start on v2` });
  await activate(s, 'alpha-2', 'alpha', 2);
  await activate(b, 'beta-2', 'beta', 2);
  await expectRanOn(s, 'alpha-2', 'v1');
  await expectRanOn(b, 'beta-2', 'v2');

  // An activation in flight on v1 when v2 is promoted.
  await activate(s, 'slow-2', 'slow', 2, { executionPlan: 'slow-plan' });
  await pollUntil(async () => (await va(s, 'slow-2'))?.status?.phase === 'InProgress', 30_000, 'slow-2 to run');
  expect((await va(s, 'slow-2'))?.status?.coreBuildId).toBe('v1');
  const promoted = await konfidence('rollout', 'promote', 'v2');
  expect(promoted).toMatchObject({ code: 0, out: 'v2 is current' });
  const status = JSON.parse((await konfidence('rollout', 'status', '-o', 'json')).out);
  expect(status).toMatchObject({ current: 'v2' });
  expect(status.canary).toBeUndefined(); // promotion ends the canary

  // New activations run on v2 meanwhile; slow-3 queues at the lock slow-2 (on v1) holds.
  await activate(s, 'alpha-3', 'alpha', 3);
  await activate(s, 'slow-3', 'slow', 3);
  await expectRanOn(s, 'alpha-3', 'v2');
  expect((await va(s, 'slow-2'))?.status?.phase).toBe('InProgress');
  await expectRanOn(s, 'slow-2', 'v1');
  await expectRanOn(s, 'slow-3', 'v2');

  // What the server recorded: activations PINNED to their build, the Stage lock AUTO_UPGRADE, which
  // moved to v2 at the promotion while slow-2 (on v1) held it.
  expect(
    await versioning(
      activationWorkflowId({ namespace: s.ns, name: 'alpha-2', uid: (await va(s, 'alpha-2'))!.metadata.uid }),
    ),
  ).toEqual({ behavior: 'PINNED', buildId: 'v1' });
  expect(
    await versioning(
      activationWorkflowId({ namespace: b.ns, name: 'beta-2', uid: (await va(b, 'beta-2'))!.metadata.uid }),
    ),
  ).toEqual({ behavior: 'PINNED', buildId: 'v2' });
  expect(await versioning(stageLockWorkflowId(s.ns, 'slow'))).toEqual({ behavior: 'AUTO_UPGRADE', buildId: 'v2' });

  // Rollback: v1 current again; every namespace's new activations on v1.
  expect((await konfidence('rollout', 'rollback', 'v1')).code).toBe(0);
  expect(JSON.parse((await konfidence('rollout', 'status', '-o', 'json')).out)).toMatchObject({
    current: 'v1',
    rampingPercent: 0,
  });
  await activate(s, 'alpha-4', 'alpha', 4);
  await activate(b, 'beta-3', 'beta', 3);
  await expectRanOn(s, 'alpha-4', 'v1');
  await expectRanOn(b, 'beta-3', 'v1');

  // A ramp shows in the status; a rollback ends it (no activation starts meanwhile: the test stays deterministic).
  expect((await konfidence('rollout', 'ramp', 'v2', '30')).code).toBe(0);
  expect(JSON.parse((await konfidence('rollout', 'status', '-o', 'json')).out)).toMatchObject({
    current: 'v1',
    ramping: 'v2',
    rampingPercent: 30,
  });
  expect((await konfidence('rollout', 'rollback', 'v1')).code).toBe(0);
  const after = JSON.parse((await konfidence('rollout', 'status', '-o', 'json')).out);
  expect(after).toMatchObject({ current: 'v1', rampingPercent: 0 });
  expect(after.ramping).toBeUndefined();

  // Nothing lost: every activation ran once (one workflow run, attempt 1), Succeeded above.
  for (const { system: t, name } of ran) {
    const o = (await va(t, name))!;
    expect({ name, attempt: o.status?.attempt }).toEqual({ name, attempt: 1 });
    const workflowId = activationWorkflowId({ namespace: t.ns, name, uid: o.metadata.uid });
    const runs = await pollUntil(
      async () => {
        let n = 0;
        for await (const _ of s.client.workflow.list({ query: `WorkflowId = '${workflowId}'` })) n++;
        return n; // visibility follows within moments: wait for the first, then count
      },
      10_000,
      `the runs of ${workflowId} to be listed`,
    );
    expect({ name, runs }).toEqual({ name, runs: 1 });
  }
  expect(ran).toHaveLength(7);
}, 300_000);

it('rollout run stops while a CircuitBreaker is Open, and goes canary → ramp → promote once it is not', async () => {
  await create(s, object('CircuitBreaker', s.systemNs, 'everything', {}));
  await s.objects.patchStatus('CircuitBreaker', s.systemNs, 'everything', { phase: 'Open' });
  const runArgs = ['rollout', 'run', 'v2', '--groups', `${s.ns};${b.ns}`, '--ramp', '50', '--soak', '1s'];
  const stopped = await konfidence(...runArgs);
  expect(stopped.code).toBe(1);
  expect(stopped.err).toContain('CircuitBreaker everything is Open');
  expect(stopped.err).toContain('konfidence rollout rollback v1');
  expect(JSON.parse((await konfidence('rollout', 'status', '-o', 'json')).out)).toMatchObject({ current: 'v1' });

  await s.objects.patchStatus('CircuitBreaker', s.systemNs, 'everything', { phase: 'Closed' });
  const done = await konfidence(...runArgs);
  expect(done).toMatchObject({ code: 0, out: `v2 is the current version of konfidence-core-${s.ns}` });
  expect(done.err.split('\n')).toEqual([
    `canary v2 on group 1 (namespaces ${s.ns})`,
    `canary v2 on group 2 (namespaces ${s.ns}, ${b.ns})`,
    "ramp v2 to 50% of the other namespaces' new activations",
    'promote v2: current version, every new activation',
  ]);
  const status = JSON.parse((await konfidence('rollout', 'status', '-o', 'json')).out);
  expect(status).toMatchObject({ current: 'v2', rampingPercent: 0 });
  expect(status.canary).toBeUndefined();
}, 120_000);
