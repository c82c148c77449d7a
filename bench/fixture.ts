/**
 * What every benchmark starts from: a namespace with Stage `bench` and its StageVersions (created
 * before the Stage, else the Stage controller makes one for its vector; a history limit that keeps
 * them until the runs used them), an HTTPRoute and a VirtualService on revision 1, and in the
 * system namespace a two-step plan (Gateway API, then Istio).
 */
import { randomBytes } from 'node:crypto';
import { GROUP, VERSION } from '../api/group.js';
import { pollUntil } from '../scripts/env/process.js';
import { API_VERSION } from '../api/group.js';
import { apply, k8s, loadKubeConfig } from '../k8s/client.js';
import { applyCrds } from '../k8s/crds.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { routeCrds } from '../scripts/route-crds.js';
import { up } from '../scripts/env/control-plane.js';
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { resumingWatch } from '../test/support/watch.js';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { NativeConnection } from '@temporalio/worker';
import { builtInExecutors } from '../executors/index.js';
import type { ControlPlane } from '../scripts/env/control-plane.js';
import { repoRoot } from '../scripts/env/paths.js';
import { freePort } from '../scripts/env/ports.js';
import { buildDist, distMain, nodeFlagsOf } from '../scripts/dist.js';
import { executorTaskQueue } from '../shared/task-queues.js';
import { sleepyExecutor } from '../test/support/executors.js';
import { createExecutorWorker } from '../worker/executor-worker.js';
import { loadConfig } from '../worker/config.js';
import { startSystem, type SystemOptions } from '../worker/system.js';

export async function seedBench(kc: k8s.KubeConfig, ns: string, systemNs: string, revisions: number): Promise<void> {
  const objects = new CustomObjects(kc);
  const generic = k8s.KubernetesObjectApi.makeApiClient(kc);
  const cr = (kind: string, namespace: string, name: string, spec: unknown) =>
    objects.create({ apiVersion: API_VERSION, kind, metadata: { name, namespace }, spec });
  await applyCrds(kc, routeCrds());
  for (const n of [ns, systemNs]) await apply(generic, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: n } });
  for (let r = 1; r <= revisions; r++) {
    await cr('StageVersion', ns, `bench-${r}`, {
      stage: 'bench',
      vector: `bench:${r}`,
      revision: r,
      backend: { service: `bench-v${r}`, port: 8080, subset: `v${r}` },
    });
  }
  await cr('Stage', ns, 'bench', { vector: `bench:${revisions}`, stageVersionHistoryLimit: 100 });
  await generic.create({
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'bench', namespace: ns },
    spec: { rules: [{ backendRefs: [{ name: 'bench-v1', port: 8080, weight: 100 }] }] },
  });
  await generic.create({
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: { name: 'bench', namespace: ns },
    spec: {
      hosts: ['bench'],
      http: [{ name: 'primary', route: [{ destination: { host: 'bench', subset: 'v1' }, weight: 100 }] }],
    },
  });
  await cr('ActivationTaskRegistration', systemNs, 'gateway', {
    type: 'gateway-api',
    spec: { routes: [{ name: 'bench' }] },
  });
  await cr('ActivationTaskRegistration', systemNs, 'mesh', {
    type: 'istio',
    spec: { virtualServices: [{ name: 'bench' }], host: 'bench' },
  });
  await cr('ActivationExecutionPlan', systemNs, 'default', {
    steps: [
      { name: 'gateway', tasks: ['gateway'] },
      { name: 'mesh', tasks: ['mesh'] },
    ],
  });
}

/** The VectorActivation `to-<r>` that switches Stage `bench` to revision r. */
export const benchActivation = (ns: string, r: number) => ({
  apiVersion: API_VERSION,
  kind: 'VectorActivation',
  metadata: { name: `to-${r}`, namespace: ns },
  spec: { stage: 'bench', stageVersion: `bench-${r}` },
});

/**
 * The local servers (started if down), namespaces `<prefix>-<random>` and `…-sys` seeded by
 * seedBench with `revisions` StageVersions, and the whole system (workers, watcher, Stage
 * controller) serving them in the test Temporal namespace, apart from what a person looks at.
 */
export async function seededBenchSystem(prefix: string, revisions: number) {
  const cp = await up(() => undefined);
  const kc = loadKubeConfig(cp.kubeconfig);
  const id = randomBytes(3).toString('hex');
  const ns = `${prefix}-${id}`;
  const systemNs = `${prefix}-${id}-sys`;
  await seedBench(kc, ns, systemNs, revisions);
  const system = await startSystem({
    temporalAddress: cp.temporalAddress,
    temporalNamespace: cp.testTemporalNamespace,
    kubeConfig: kc,
    systemNamespace: systemNs,
    namespaces: [ns],
    queueSuffix: `-${ns}`,
    log: () => undefined,
  });
  return { cp, kc, ns, systemNs, system };
}

/**
 * Namespaces (applied) and, in the system namespace, the plan `default`: one step of the test
 * suite's `sleepy` executor sleeping `seconds`, so that what a benchmark measures is scheduling.
 */
export async function seedSleepyPlan(
  kc: k8s.KubeConfig,
  namespaces: readonly string[],
  systemNs: string,
  seconds: number,
): Promise<void> {
  const objects = new CustomObjects(kc);
  const generic = k8s.KubernetesObjectApi.makeApiClient(kc);
  for (const name of [systemNs, ...namespaces])
    await apply(generic, { apiVersion: 'v1', kind: 'Namespace', metadata: { name } });
  const cr = (kind: string, name: string, spec: unknown) =>
    objects.create({ apiVersion: API_VERSION, kind, metadata: { name, namespace: systemNs }, spec });
  await cr('ActivationTaskRegistration', 'sleepy', { type: 'sleepy', timeoutSeconds: 600, spec: { seconds } });
  await cr('ActivationExecutionPlan', 'default', { steps: [{ name: 'sleepy', tasks: ['sleepy'] }] });
}

/** The whole system in this process serving `namespaces`, with the built-in executors and `sleepy`. */
export function startSleepySystem(
  cp: ControlPlane,
  kc: k8s.KubeConfig,
  systemNs: string,
  namespaces: string[],
  queueSuffix: string,
  more: Partial<SystemOptions> = {},
) {
  return startSystem({
    temporalAddress: cp.temporalAddress,
    temporalNamespace: cp.testTemporalNamespace,
    kubeConfig: kc,
    systemNamespace: systemNs,
    namespaces,
    queueSuffix,
    executors: [...builtInExecutors, sleepyExecutor],
    log: () => undefined,
    // As a deployment runs it (KONFIDENCE_STAGES_PER_NAMESPACE, default in worker/config.ts).
    stagesPerNamespace: loadConfig().KONFIDENCE_STAGES_PER_NAMESPACE,
    ...more,
  });
}

/**
 * A role as its own process group on the local servers, in the test Temporal namespace, run as the
 * image runs it (compiled, dist/: call buildDist() once before) with the runtime settings of its
 * Deployment (its command's Node flags, NODE_OPTIONS and the malloc settings); `env` adds the role's settings,
 * `nodeFlags` Node flags NODE_OPTIONS refuses (`--cpu-prof`, say).
 * An executor is ['executor', TYPE]: its Deployment is executor-TYPE.
 */
export function spawnRole(
  cp: ControlPlane,
  role: string | readonly string[],
  systemNs: string,
  env: Record<string, string>,
  stdio: StdioOptions,
  nodeFlags: readonly string[] = [],
) {
  const argv = typeof role === 'string' ? [role] : [...role];
  const runtime = deployedRuntime(argv.join('-'));
  return spawn(process.execPath, [...runtime.nodeFlags, ...nodeFlags, distMain, ...argv], {
    cwd: repoRoot,
    env: {
      ...process.env,
      ...runtime.env,
      KUBECONFIG: cp.kubeconfig,
      TEMPORAL_ADDRESS: cp.temporalAddress,
      TEMPORAL_NAMESPACE: cp.testTemporalNamespace,
      KONFIDENCE_SYSTEM_NAMESPACE: systemNs,
      ...env,
    },
    stdio,
    detached: true,
  });
}

/**
 * A role as its own process on the local servers (spawnRole's), ready (its caches listed); stop()
 * SIGTERMs it and waits, metrics() reads its /metrics (the project's and the Temporal SDK's). `env`
 * adds to or overrides the role's settings (by default no fair-share limit of Stages per namespace).
 */
export async function startRole(
  cp: ControlPlane,
  role: 'core' | 'watcher' | 'stage-controller' | 'executor',
  systemNs: string,
  namespaces: string[],
  suffix: string,
  {
    executorType,
    env = {},
    nodeFlags = [],
  }: { executorType?: string; env?: Record<string, string>; nodeFlags?: readonly string[] } = {},
) {
  const port = await freePort();
  const child = spawnRole(
    cp,
    executorType ? [role, executorType] : role,
    systemNs,
    {
      KONFIDENCE_QUEUE_SUFFIX: suffix,
      KONFIDENCE_WATCH_NAMESPACES: namespaces.join(','),
      KONFIDENCE_HEALTH_PORT: String(port),
      KONFIDENCE_STAGES_PER_NAMESPACE: '0',
      KONFIDENCE_LOG_LEVEL: 'error',
      ...env,
    },
    ['ignore', 'ignore', 'inherit'],
    nodeFlags,
  );
  killOnExit(child);
  await untilReady(port, `the ${role}${executorType ? ` ${executorType}` : ''}`, 300_000, 100);
  const metrics = async () => {
    const res = await fetch(`http://127.0.0.1:${port}/metrics`, { signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`the ${role}'s /metrics answered ${res.status}`);
    return res.text();
  };
  return { role, pid: child.pid!, metrics, stop: () => stopRole(child) };
}

/**
 * The system as deployed: the core, the watcher and the Stage controller each its own process
 * (startRole), so each one's CPU and memory are its own; the test suite's `sleepy` executor's worker
 * runs in this process. stop() stops the roles, then the executor. `env` adds to every role's
 * settings, `coreNodeFlags` to the core's Node flags.
 */
export async function deployedSleepySystem(
  cp: ControlPlane,
  kc: k8s.KubeConfig,
  systemNs: string,
  namespaces: string[],
  suffix: string,
  { env = {}, coreNodeFlags = [] }: { env?: Record<string, string>; coreNodeFlags?: readonly string[] } = {},
) {
  buildDist();
  const connection = await NativeConnection.connect({ address: cp.temporalAddress });
  const executor = await createExecutorWorker({
    connection,
    namespace: cp.testTemporalNamespace,
    kubeConfig: kc,
    executor: sleepyExecutor,
    taskQueue: executorTaskQueue(sleepyExecutor.type) + suffix,
  });
  const executorRun = executor.run();
  const stopExecutor = async () => {
    executor.shutdown();
    await executorRun;
    await connection.close();
  };
  // A role that does not start stops the executor too (the roles started go as this process exits).
  const [core, watcher, stageController] = await Promise.all(
    (['core', 'watcher', 'stage-controller'] as const).map((role) =>
      startRole(cp, role, systemNs, namespaces, suffix, {
        env,
        ...(role === 'core' ? { nodeFlags: coreNodeFlags } : {}),
      }),
    ),
  ).catch(async (err: unknown) => {
    await stopExecutor();
    throw err;
  });
  return {
    pids: { core: core!.pid, watcher: watcher!.pid, 'stage-controller': stageController!.pid },
    coreMetrics: core!.metrics,
    stop: async () => {
      await Promise.all([core!, watcher!, stageController!].map((r) => r.stop()));
      await stopExecutor();
    },
  };
}

/** Signals the process group a detached child leads; a group gone already is no error. */
function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // the group is gone already
  }
}

/** The exit guards killOnExit set, by child: stopRole takes its child's away. */
const guards = new WeakMap<ChildProcess, () => void>();

/** A benchmark that fails or is interrupted leaves no role running: the group is SIGKILLed as this process exits. */
export function killOnExit(child: ChildProcess): void {
  const guard = () => signalGroup(child, 'SIGKILL');
  guards.set(child, guard);
  process.once('exit', guard);
}

/**
 * Stops a process group started detached (spawnRole's): SIGTERM, as a Pod gets, then SIGKILL after
 * `graceMs`; resolves once its leader exited (at once if it had).
 */
export async function stopRole(child: ChildProcess, graceMs = 30_000): Promise<void> {
  const guard = guards.get(child);
  if (guard) process.off('exit', guard);
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  signalGroup(child, 'SIGTERM');
  const killer = setTimeout(() => signalGroup(child, 'SIGKILL'), graceMs);
  await exited;
  clearTimeout(killer);
}

/** Until the role on health port `port` answers /readyz with 200 (its informers listed, its workers run). */
export function untilReady(port: number, what: string, timeoutMs: number, intervalMs: number): Promise<unknown> {
  return pollUntil(
    async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200,
    timeoutMs,
    `${what} to be ready`,
    intervalMs,
  );
}

/** The Node and libc settings a role's Deployment gives its container (deploy/base/workloads/). */
export function deployedRuntime(role: string): { env: Record<string, string>; nodeFlags: string[] } {
  const file = [
    join(repoRoot, 'deploy/base/workloads', `${role}.yaml`),
    join(repoRoot, 'deploy/base/workloads/elected', `${role}.yaml`),
  ].find((f) => existsSync(f));
  const env: Record<string, string> = {};
  const nodeFlags: string[] = [];
  for (const doc of file ? parseAllDocuments(readFileSync(file, 'utf8')) : []) {
    type Container = { command?: string[]; env?: { name: string; value?: string }[] };
    type Deployment = { spec?: { template?: { spec?: { containers?: Container[] } } } };
    for (const c of (doc.toJS() as Deployment | null)?.spec?.template?.spec?.containers ?? []) {
      nodeFlags.push(...nodeFlagsOf(c));
      for (const e of c.env ?? []) if (RUNTIME_ENV.has(e.name) && e.value !== undefined) env[e.name] = e.value;
    }
  }
  return { env, nodeFlags };
}
const RUNTIME_ENV = new Set(['NODE_OPTIONS', 'MALLOC_ARENA_MAX', 'MALLOC_MMAP_THRESHOLD_']);

const FINAL = ['Succeeded', 'Failed', 'Skipped', 'Cancelled'];
export interface FinalPhase {
  phase: string;
  reason?: string;
  at: number;
}

/**
 * When each VectorActivation of `namespaces` reached a final phase, as seen through one watch per
 * namespace: a WATCH costs the apiserver nothing per object, polling would load what is measured.
 */
export async function watchFinal(kc: k8s.KubeConfig, namespaces: readonly string[]) {
  const final = new Map<string, FinalPhase>();
  const watches = await Promise.all(
    namespaces.map((ns) =>
      resumingWatch(
        kc,
        `/apis/${GROUP}/${VERSION}/namespaces/${ns}/vectoractivations`,
        (_t, o: { metadata: { name: string; namespace: string }; status?: { phase?: string; reason?: string } }) => {
          const key = `${o.metadata.namespace}/${o.metadata.name}`;
          const phase = o.status?.phase;
          if (phase && FINAL.includes(phase) && !final.has(key))
            final.set(key, { phase, reason: o.status?.reason, at: performance.now() });
        },
      ),
    ),
  );
  return {
    of: (namespace: string, name: string) =>
      pollUntil(() => final.get(`${namespace}/${name}`), 600_000, `${namespace}/${name} final`, 2),
    stop: () => watches.forEach((w) => w.stop()),
  };
}
