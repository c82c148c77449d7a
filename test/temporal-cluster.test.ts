/**
 * Temporal beyond one process (the cluster profile, npm run test:cluster): the server's services
 * run apart, history twice, and our roles run as their Pods do: two core workers, two gateway-api
 * executors, the watcher and the Stage controller. A burst across 20 Stages meets the SIGKILL of a
 * history host (in the second test, of the matching service) and its restart: no activation is
 * lost, the newest of each Stage ends active with its route on it, and no Stage ever has two
 * activations InProgress.
 */
import { type ChildProcess } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { GROUP, VERSION } from '../api/group.js';
import { spawnRole } from '../bench/fixture.js';
import { cpuSeconds } from '../bench/report.js';
import { k8s } from '../k8s/client.js';
import { applyCrds } from '../k8s/crds.js';
import { CustomObjects, type CustomObject } from '../k8s/custom-objects.js';
import { buildDist } from '../scripts/dist.js';
import { current, up, type ControlPlane, type Pids } from '../scripts/env/control-plane.js';
import { freePort } from '../scripts/env/ports.js';
import { isAlive, logFile, pollUntil, stopProcess } from '../scripts/env/process.js';
import { routeCrds } from '../scripts/route-crds.js';
import { stageLockWorkflowId } from '../stage-lock/contract.js';
import { freshNamespace, kubeConfig } from './support/cluster.js';
import { removeNamespaces } from './support/namespaces.js';
import { seedBurst } from './support/cluster-burst.js';
import { HTTPROUTE } from './support/scenario.js';
import { temporalClient } from './support/temporal.js';
import { resumingWatch } from './support/watch.js';

// Only the cluster profile runs history and matching as processes of their own that a test can
// SIGKILL; the dev server and the postgres profile run every service in one process.
const describeOnCluster = process.env.KONFIDENCE_TEMPORAL === 'cluster' ? describe : describe.skip;

const STAGES = 20;
/** Each Stage's burst; revision 1 serves before it. */
const BURST = [2, 3, 4, 5];
const NEWEST = BURST.at(-1)!;
const FINAL = ['Succeeded', 'Failed', 'Skipped', 'Cancelled'];
const ROLES = [
  ['core'],
  ['core'],
  ['executor', 'gateway-api'],
  ['executor', 'gateway-api'],
  ['watcher'],
  ['stage-controller'],
] as const;

describeOnCluster('a burst across 20 Stages on the cluster profile', () => {
  let cp: ControlPlane;
  let kc: k8s.KubeConfig;
  let objects: CustomObjects;
  let ns: string;
  let systemNs: string;
  const roles: ChildProcess[] = [];

  beforeAll(async () => {
    buildDist(); // the roles run as the image runs them: compiled
    cp = current()!;
    kc = kubeConfig();
    objects = new CustomObjects(kc);
    await applyCrds(kc, routeCrds());
    ns = await freshNamespace('cluster');
    systemNs = await freshNamespace('cluster-sys');
    for (const [i, argv] of ROLES.entries()) {
      const port = await freePort();
      const out = openSync(logFile(`cluster-test-${argv.join('-')}-${i}`), 'w');
      const child = spawnRole(
        cp,
        argv,
        systemNs,
        { KONFIDENCE_QUEUE_SUFFIX: `-${ns}`, KONFIDENCE_WATCH_NAMESPACES: ns, KONFIDENCE_HEALTH_PORT: String(port) },
        ['ignore', out, out],
      );
      closeSync(out);
      roles.push(child);
      // Ready: connected, caches synced, polling (worker/health.ts).
      await pollUntil(
        async () => (await fetch(`http://127.0.0.1:${port}/readyz`)).ok,
        120_000,
        `${argv.join(' ')} #${i} to be ready`,
        250,
      );
    }
  }, 600_000);

  afterAll(async () => {
    await Promise.all(roles.map((c) => stopProcess(c.pid, 15_000)));
    if (ns) await removeNamespaces(kc, [ns, systemNs]);
  }, 120_000);

  /**
   * Runs the burst on Stages `<prefix>0..19`: the first half of each Stage's activations, then
   * SIGKILL of `victim` once some activation runs, the second half while it is down, then its
   * restart by env:up (which restarts what died, on its ports). Returns what the watch saw.
   */
  async function burstThroughKill(prefix: string, victim: keyof Pids) {
    const stages = Array.from({ length: STAGES }, (_, i) => `${prefix}${i}`);
    await seedBurst(kc, ns, systemNs, stages, [1, ...BURST]);
    // One watch stream sees every status change of the namespace in order: the invariant is checked on each.
    const phases = new Map<string, { stage: string; phase: string }>();
    const violations: string[] = [];
    const inProgressSeen = new Set<string>();
    const watch = await resumingWatch(
      kc,
      `/apis/${GROUP}/${VERSION}/namespaces/${ns}/vectoractivations`,
      (_type, o: CustomObject) => {
        if (!o.metadata.name.startsWith(prefix)) return;
        phases.set(o.metadata.name, { stage: o.spec.stage, phase: o.status?.phase ?? 'none' });
        if (o.status?.phase === 'InProgress') inProgressSeen.add(o.metadata.name);
        const running = [...phases]
          .filter(([, v]) => v.stage === o.spec.stage && v.phase === 'InProgress')
          .map(([name]) => name);
        if (running.length > 1) violations.push(`${o.spec.stage}: ${running.join(', ')} InProgress at once`);
      },
    );
    const activate = (stage: string, r: number) =>
      objects.create({
        apiVersion: `${GROUP}/${VERSION}`,
        kind: 'VectorActivation',
        metadata: { name: `${stage}-to-${r}`, namespace: ns },
        spec: { stage, stageVersion: `${stage}-${r}`, executionPlan: `${stage}-plan` },
      });
    const cpuBefore = roles.map((c) => cpuSeconds(c.pid));
    const half = BURST.length / 2;
    let unfinishedAtKill = 0;
    try {
      await Promise.all(stages.flatMap((stage) => BURST.slice(0, half).map((r) => activate(stage, r))));
      await pollUntil(() => inProgressSeen.size > 0, 120_000, 'an activation of the burst to run');
      const pid = current()!.pids[victim]!;
      process.kill(-pid, 'SIGKILL');
      // The kill lands in the burst: activations of the first half are still on their way.
      unfinishedAtKill = [...phases.values()].filter((v) => !FINAL.includes(v.phase)).length;
      await pollUntil(() => !isAlive(pid), 10_000, `${victim} to die`);
      await Promise.all(stages.flatMap((stage) => BURST.slice(half).map((r) => activate(stage, r))));
      const restarted = await up(() => undefined);
      expect(restarted.pids[victim]).not.toBe(pid);
      await pollUntil(
        async () =>
          (await objects.list('VectorActivation', ns)).filter(
            (va) => va.metadata.name.startsWith(prefix) && FINAL.includes(va.status?.phase),
          ).length ===
          STAGES * BURST.length,
        420_000,
        'every activation of the burst to finish',
        500,
      ).catch(async (err: Error) => {
        const left = (await objects.list('VectorActivation', ns)).filter(
          (va) => va.metadata.name.startsWith(prefix) && !FINAL.includes(va.status?.phase),
        );
        throw new Error(
          `${err.message}; unfinished: ${JSON.stringify(left.map((va) => ({ name: va.metadata.name, phase: va.status?.phase, message: va.status?.message })))}`,
        );
      });
    } finally {
      watch.stop();
    }
    reportCpu(prefix, cpuBefore, [...phases.values()].filter((v) => v.phase === 'Succeeded').length);
    expect({ violations, watchEnded: watch.ended, killedMidBurst: unfinishedAtKill > 0 }).toEqual({
      violations: [],
      watchEnded: undefined,
      killedMidBurst: true,
    });
    await expectNewestWon(stages);
    await closeWorkflows(stages);
  }

  /** What each role's process cost per activation that ran, for sizing (docs/operations.md, "Sizing Temporal"). */
  function reportCpu(prefix: string, before: number[], ran: number): void {
    const ms = roles.map(
      (c, i) => `${ROLES[i]!.join(' ')} ${Math.round(((cpuSeconds(c.pid) - before[i]!) * 1000) / ran)}`,
    );
    console.log(
      `burst ${prefix}: ${ran} activations ran; CPU ms per activation that ran, by process: ${ms.join(', ')}`,
    );
  }

  /** The newest of each Stage Succeeded and serves; every older one was Skipped, or Succeeded before the next that did. */
  async function expectNewestWon(stages: string[]): Promise<void> {
    for (const stage of stages) {
      const vas = await Promise.all(BURST.map((r) => objects.get('VectorActivation', ns, `${stage}-to-${r}`)));
      const outcome = vas.map((va, i) => ({ r: BURST[i], phase: va?.status?.phase, reason: va?.status?.reason }));
      const newest = outcome.at(-1)!;
      expect({ stage, ...newest }).toEqual({ stage, r: NEWEST, phase: 'Succeeded', reason: 'Activated' });
      for (const o of outcome.slice(0, -1)) {
        const expected = o.phase === 'Succeeded' ? /^Activated$/ : /^(Superseded|OlderThanActive)$/;
        expect({ stage, ...o }).toEqual({
          stage,
          r: o.r,
          phase: expect.stringMatching(/^(Skipped|Succeeded)$/),
          reason: expect.stringMatching(expected),
        });
      }
      const done = vas
        .filter((va) => va?.status?.phase === 'Succeeded')
        .map((va) => Date.parse(va!.status.completionTime));
      expect({ stage, inOrder: done.every((t, i) => i === 0 || t >= done[i - 1]!) }).toEqual({ stage, inOrder: true });
      expect((await objects.get('StageVersionUsage', ns, `${stage}-active`))?.spec.stageVersionRef.name).toBe(
        `${stage}-${NEWEST}`,
      );
      const route = await kc.makeApiClient(k8s.CustomObjectsApi).getNamespacedCustomObject({
        group: HTTPROUTE[0],
        version: HTTPROUTE[1],
        plural: HTTPROUTE[2],
        namespace: ns,
        name: `${stage}-shop`,
      });
      expect({
        stage,
        backends: route.spec.rules[0].backendRefs.map((b: { name: string; weight: number }) => `${b.name}:${b.weight}`),
      }).toEqual({ stage, backends: [`${stage}-shop-v${NEWEST}:100`] });
    }
  }

  /** Every workflow of the burst ends: an idle Stage lock finishes by itself within seconds; any left running is terminated. */
  async function closeWorkflows(stages: string[]): Promise<void> {
    const { client, close } = await temporalClient();
    try {
      const handles = stages.map((stage) => client.workflow.getHandle(stageLockWorkflowId(ns, stage)));
      const running = async () =>
        (
          await Promise.all(
            handles.map((h) =>
              h.describe().then(
                (d) => (d.status.name === 'RUNNING' ? h : undefined),
                () => undefined,
              ),
            ),
          )
        ).filter(Boolean);
      const left = await pollUntil(
        async () => ((await running()).length === 0 ? [] : undefined),
        60_000,
        'the Stage locks to finish idle',
        1_000,
      ).catch(running);
      await Promise.all(left.map((h) => h!.terminate('test: the burst is over')));
    } finally {
      await close();
    }
  }

  it(
    'loses no activation and never runs two on a Stage when a history host is SIGKILLed mid-burst and restarted',
    () => burstThroughKill('h', 'temporalHistory'),
    900_000,
  );

  it(
    'loses no activation and never runs two on a Stage when the matching service is SIGKILLed mid-burst and restarted',
    () => burstThroughKill('m', 'temporalMatching'),
    900_000,
  );
});
