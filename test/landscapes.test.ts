/**
 * Landscapes on real servers (docs/landscapes.md): a second kube-apiserver with its own etcd
 * (test/support/landscape-cluster.ts) holds the routes of a Stage whose spec names it, and the
 * landscape's executor workers hold only that cluster's kubeconfig. The control plane's cluster has
 * routes of the same names, which are other routes: nothing changes them.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { NativeConnection, type Worker } from '@temporalio/worker';
import { k8s } from '../k8s/client.js';
import { parseAllDocuments } from 'yaml';
import { executorFor } from '../executors/index.js';
import { pollUntil } from '../scripts/env/process.js';
import { executorTaskQueue, landscapeReportWorkflowId } from '../shared/task-queues.js';
import { ANNOTATION_SERVING } from '../api/group.js';
import { createExecutorWorker } from '../worker/executor-worker.js';
import { metricsText } from '../telemetry/metrics.js';
import { kubectl, objectApi } from './support/cluster.js';
import { sleepyExecutor } from './support/executors.js';
import { startLandscapeCluster, type LandscapeCluster } from './support/landscape-cluster.js';
import { activate, routes, seedActive, seedPlan, seedRoutes, seedStage } from './support/scenario.js';
import { create, object, phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';
import { temporalAddress, temporalNamespace } from './support/temporal.js';

const LANDSCAPE = 'far';
const SECOND = 'near';
const REPORT_SECONDS = 2;
/** Every Landscape this file creates: each has a report workflow, ended with the file. */
const HTTPROUTE_COORDINATES = { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'httproutes' };
const LANDSCAPES = [LANDSCAPE, SECOND, 'nobody', 'unpolled', 'crashy', 'watched'];

let s: TestSystem;
let far: LandscapeCluster | undefined;
let near: LandscapeCluster | undefined;
let connection: NativeConnection | undefined;
const workers: Worker[] = [];
const running: Promise<void>[] = [];
const children: ChildProcess[] = [];

beforeAll(async () => {
  [s, far, near] = await Promise.all([
    // Reports every 2 s: a landscape whose reports stop is told within seconds.
    startTestSystem('landscapes', { landscapeReportSeconds: REPORT_SECONDS }),
    startLandscapeCluster(LANDSCAPE),
    startLandscapeCluster(SECOND),
  ]);
  connection = await NativeConnection.connect({ address: temporalAddress() });
  for (const cluster of [far, near]) {
    // The Stage's namespace exists in the landscape too: its routes live there.
    await objectApi(cluster.kc).create({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: s.ns } });
    await create(s, object('Landscape', s.systemNs, cluster.name, { allowedNamespaces: [s.ns] }));
    // The landscape's agent: an executor worker per type, with the landscape's kubeconfig only.
    for (const executor of [executorFor('gateway-api')!, executorFor('istio')!, sleepyExecutor]) {
      const worker = await createExecutorWorker({
        connection,
        namespace: temporalNamespace(),
        kubeConfig: cluster.kc,
        executor,
        landscape: cluster.name,
        taskQueue: executorTaskQueue(executor.type, cluster.name) + `-${s.ns}`,
      });
      workers.push(worker);
      running.push(worker.run());
    }
  }
}, 180_000);

afterAll(async () => {
  await Promise.all(
    LANDSCAPES.map((name) =>
      s?.client.workflow
        .getHandle(landscapeReportWorkflowId(name, `-${s.ns}`))
        .terminate('the test file is done')
        .catch(() => undefined),
    ),
  );
  for (const child of children) child.kill('SIGKILL');
  for (const worker of workers) worker.shutdown();
  await Promise.allSettled(running);
  await connection?.close();
  await s?.stop();
  await Promise.all([far?.stop(), near?.stop()]);
}, 120_000);

/** The same scenario's view of a landscape's routes (default: the first). */
const inLandscape = (cluster = far!) => ({ ...s, kc: cluster.kc });

it("an activation on the control plane switches the routes in the landscape's cluster, through its workers, and leaves the control plane's routes of the same names alone", async () => {
  const stage = 'remote';
  await seedStage(s, stage, [1, 2], { landscape: LANDSCAPE });
  await seedRoutes(inLandscape(), stage, 1);
  // Routes of the same names in the control plane's cluster: other routes, which stay as they are.
  await seedRoutes(s, stage, 1);
  await seedPlan(s, stage);
  await seedActive(s, stage, 1);

  await activate(s, `${stage}-to-2`, stage, 2);
  const done = await waitFor(s, 'VectorActivation', `${stage}-to-2`, phaseIs('Succeeded', 'Failed'), 90_000);

  expect(done.status.phase).toBe('Succeeded');
  expect(await routes(inLandscape(), stage)).toEqual({
    api: ['mirror-sink:0', `${stage}-shop-v2:100`],
    static: ['static-files'],
    primary: ['shop/v2:100'],
    legacy: ['legacy-shop'],
  });
  expect((await routes(s, stage)).api).toEqual(['mirror-sink:0', `${stage}-shop-v1:100`]);
  // The core wrote each execution's record and final status: the landscape's worker could not.
  const execution = await s.objects.get('ActivationExecution', s.ns, `${stage}-to-2-0-${stage}-gateway`);
  expect(execution?.status).toMatchObject({ phase: 'Succeeded' });
  expect(execution?.status?.record?.rules?.[0]?.traffic).toEqual({ [`${stage}-1`]: 100 });
  // The Stage's status tells the landscape's traffic, from its executions.
  await pollUntil(
    async () => {
      const traffic = (await s.objects.get('Stage', s.ns, stage))?.status?.traffic ?? [];
      return traffic.length === 2 && traffic.every((t: any) => t.weights[`${stage}-2`] === 100) ? true : undefined;
    },
    30_000,
    "the Stage's status to tell the landscape's traffic",
    200,
  );
});

it('a landscape with no worker polling: the activation fails after the schedule-to-start bound, naming the landscape and the queue, and no route changes', async () => {
  const stage = 'unserved';
  const nobody = 'nobody';
  await create(s, object('Landscape', s.systemNs, nobody, { allowedNamespaces: ['*'] }));
  await seedStage(s, stage, [1, 2], { landscape: nobody });
  await seedRoutes(s, stage, 1);
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, `${stage}-gateway`, {
      type: 'gateway-api',
      timeoutSeconds: 4,
      spec: { routes: [{ name: `${stage}-shop`, namespace: s.ns, rules: [0] }] },
    }),
  );
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, {
      onFailure: 'Revert',
      steps: [{ name: 'gateway', tasks: [`${stage}-gateway`] }],
    }),
  );
  await seedActive(s, stage, 1);

  await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });
  const done = await waitFor(s, 'VectorActivation', `${stage}-to-2`, phaseIs('Succeeded', 'Failed'), 60_000);

  expect(done.status.phase).toBe('Failed');
  const execution = await s.objects.get('ActivationExecution', s.ns, `${stage}-to-2-0-${stage}-gateway`);
  expect(execution?.status).toMatchObject({ phase: 'Error', reason: 'NotTakenUp' });
  expect(execution?.status?.message).toContain(
    `no gateway-api executor worker of Landscape ${nobody} took the task from task queue ${executorTaskQueue('gateway-api', nobody)}-${s.ns} within 2s`,
  );
  expect((await routes(s, stage)).api).toEqual(['mirror-sink:0', `${stage}-shop-v1:100`]);
});

it("the landscape's apiserver stopped mid-run: the next step fails with the landscape's error, and the revert puts its routes back once the apiserver is back", async () => {
  const stage = 'outage';
  await seedStage(s, stage, [1, 2], { landscape: LANDSCAPE });
  await seedRoutes(inLandscape(), stage, 1);
  await seedActive(s, stage, 1);
  const registration = (name: string, type: string, timeoutSeconds: number, spec: unknown) =>
    create(s, object('ActivationTaskRegistration', s.systemNs, name, { type, timeoutSeconds, spec }));
  await registration(`${stage}-gateway`, 'gateway-api', 60, {
    routes: [{ name: `${stage}-shop`, namespace: s.ns, rules: [0] }],
  });
  await registration(`${stage}-pause`, 'sleepy', 30, { seconds: 2 });
  await registration(`${stage}-mesh`, 'istio', 6, {
    virtualServices: [{ name: `${stage}-shop`, namespace: s.ns, routes: ['primary'] }],
    host: 'shop',
  });
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, {
      onFailure: 'Revert',
      steps: [
        { name: 'gateway', tasks: [`${stage}-gateway`] },
        { name: 'pause', tasks: [`${stage}-pause`] },
        { name: 'mesh', tasks: [`${stage}-mesh`] },
      ],
    }),
  );

  await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });
  // The gateway's route moved; while the pause runs, the landscape's apiserver goes away.
  await waitFor(s, 'ActivationExecution', `${stage}-to-2-0-${stage}-gateway`, phaseIs('Succeeded'), 60_000);
  await far!.stopApiserver();
  try {
    const failed = await waitFor(s, 'ActivationExecution', `${stage}-to-2-2-${stage}-mesh`, phaseIs('Error'), 60_000);
    // The landscape's own error, retried within the task's timeout, then the task's end.
    expect(failed.status.message).toMatch(/^reading VirtualService .*\/outage-shop: .*ECONNREFUSED/);
  } finally {
    await far!.startApiserver();
  }
  const done = await waitFor(s, 'VectorActivation', `${stage}-to-2`, phaseIs('Succeeded', 'Failed'), 90_000);

  expect(done.status.phase).toBe('Failed');
  expect((await routes(inLandscape(), stage)).api).toEqual(['mirror-sink:0', `${stage}-shop-v1:100`]);
  expect(done.status.message).toContain('every task that ran was reverted: its routes are back as it found them');
  expect((await routes(inLandscape(), stage)).primary).toEqual(['shop/v1:100']);
});

it("the landscape agent (deploy/landscape-agent) installs in the landscape's cluster, which has none of the project's kinds, and may touch its route kinds only", async () => {
  const agent = fileURLToPath(new URL('../deploy/landscape-agent', import.meta.url));
  // Applied for real: the landscape is this file's own cluster, where no node runs its Pods.
  const applied = await kubectl('--kubeconfig', far!.kubeconfig, 'apply', '-k', agent);
  expect(applied).toContain('deployment.apps/konfidence-executor-gateway-api created');
  const manifests = parseAllDocuments(await kubectl('kustomize', agent)).map((d) => d.toJS());
  const granted = manifests
    .filter((m) => m.kind === 'ClusterRole' || m.kind === 'Role')
    .flatMap((m) => m.rules.flatMap((r: { apiGroups: string[] }) => r.apiGroups));
  expect([...new Set(granted)].sort()).toEqual(['gateway.networking.k8s.io', 'networking.istio.io']);
  const config = manifests.find((m) => m.kind === 'ConfigMap' && m.metadata.name.startsWith('konfidence-config'));
  expect(config.data.KONFIDENCE_LANDSCAPE).toBeDefined();
});

it('two landscapes at once stay apart, and a burst across them keeps one activation per Stage: each Stage ends on its newest, in its own landscape only', async () => {
  const stages = [
    { stage: 'east', cluster: far! },
    { stage: 'west', cluster: near! },
  ];
  for (const { stage, cluster } of stages) {
    await seedStage(s, stage, [1, 2, 3, 4], { landscape: cluster.name });
    // Both landscapes have routes of both Stages' names: only the Stage's own landscape's may move.
    for (const other of [far!, near!]) await seedRoutes(inLandscape(other), stage, 1);
    await seedPlan(s, stage, { plan: `${stage}-plan` });
    await seedActive(s, stage, 1);
  }
  // A burst on both Stages at once: revisions 2, 3 and 4 of each.
  await Promise.all(
    stages.flatMap(({ stage }) =>
      [2, 3, 4].map((r) => activate(s, `${stage}-to-${r}`, stage, r, { executionPlan: `${stage}-plan` })),
    ),
  );
  for (const { stage, cluster } of stages) {
    const newest = await waitFor(s, 'VectorActivation', `${stage}-to-4`, phaseIs('Succeeded', 'Failed'), 90_000);
    expect(newest.status.phase).toBe('Succeeded');
    // The older ones ran before it or were skipped (an older version never overwrites a newer one).
    for (const r of [2, 3]) await waitFor(s, 'VectorActivation', `${stage}-to-${r}`, phaseIs('Succeeded', 'Skipped'));
    const other = cluster === far ? near! : far!;
    expect((await routes(inLandscape(cluster), stage)).api).toEqual(['mirror-sink:0', `${stage}-shop-v4:100`]);
    expect((await routes(inLandscape(other), stage)).api).toEqual(['mirror-sink:0', `${stage}-shop-v1:100`]);
    expect((await s.objects.get('StageVersionUsage', s.ns, `${stage}-active`))?.spec?.stageVersionRef?.name).toBe(
      `${stage}-4`,
    );
  }
  // One at a time per Stage: no two activations of a Stage held its Lease at once (their
  // executions' runs did not overlap).
  for (const { stage } of stages) {
    const executions = (await s.objects.list('ActivationExecution', s.ns)).filter(
      (e) => e.spec?.stage === stage && e.spec?.action === 'Apply' && e.status?.startTime && e.status?.completionTime,
    );
    const byActivation = new Map<string, { start: number; end: number }>();
    for (const e of executions) {
      const owner = e.metadata.ownerReferences?.[0]?.name ?? '';
      const run = byActivation.get(owner) ?? { start: Infinity, end: -Infinity };
      run.start = Math.min(run.start, Date.parse(e.status.startTime));
      run.end = Math.max(run.end, Date.parse(e.status.completionTime));
      byActivation.set(owner, run);
    }
    const runs = [...byActivation.values()].sort((a, b) => a.start - b.start);
    for (let i = 1; i < runs.length; i++) expect(runs[i]!.start).toBeGreaterThanOrEqual(runs[i - 1]!.end);
  }
});

it('konfidence_landscape_pollers tells a landscape whose workers poll from one whose workers do not', async () => {
  await create(s, object('Landscape', s.systemNs, 'unpolled', { allowedNamespaces: [s.ns] }));
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, 'pollers-gateway', {
      type: 'gateway-api',
      timeoutSeconds: 30,
      spec: { routes: [{ name: 'any' }] },
    }),
  );
  const line = (landscape: string) => `konfidence_landscape_pollers{landscape="${landscape}",type="gateway-api"}`;
  const text = await pollUntil(
    async () => {
      const scraped = await metricsText();
      return scraped.includes(line('unpolled')) ? scraped : undefined;
    },
    30_000,
    'the new Landscape in the metric',
    200,
  );
  expect(text).toContain(`${line(LANDSCAPE)} 1`);
  expect(text).toContain(`${line(SECOND)} 1`);
  expect(text).toContain(`${line('unpolled')} 0`);
});

/** A landscape's sleepy worker in a process of its own (test/support/landscape-worker.ts), with the landscape's kubeconfig. */
function startLandscapeWorker(landscape: string, kubeconfig: string) {
  const child = spawn(process.execPath, ['--import', 'tsx', 'test/support/landscape-worker.ts'], {
    cwd: fileURLToPath(new URL('..', import.meta.url)),
    env: {
      ...process.env,
      KONFIDENCE_LANDSCAPE: landscape,
      KUBECONFIG: kubeconfig,
      TEMPORAL_ADDRESS: temporalAddress(),
      TEMPORAL_NAMESPACE: temporalNamespace(),
      KONFIDENCE_QUEUE_SUFFIX: `-${s.ns}`,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += String(d)));
  children.push(child);
  return Object.assign(child, { said: (line: string) => output.split('\n').includes(line) });
}

it("a landscape's worker SIGKILLed mid-step: the task is taken up again by its next worker, which finishes it on the record the core kept", async () => {
  const stage = 'crash';
  const landscape = 'crashy';
  await create(s, object('Landscape', s.systemNs, landscape, { allowedNamespaces: [s.ns] }));
  await seedStage(s, stage, [1, 2], { landscape });
  await seedActive(s, stage, 1);
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, `${stage}-sleepy`, {
      type: 'sleepy',
      timeoutSeconds: 60,
      heartbeatTimeoutSeconds: 2,
      spec: { seconds: 3, records: true },
    }),
  );
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, {
      steps: [{ name: 'wait', tasks: [`${stage}-sleepy`] }],
    }),
  );
  const first = startLandscapeWorker(landscape, far!.kubeconfig);
  await pollUntil(() => first.said('polling') || undefined, 60_000, 'the landscape worker to poll', 100);
  await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });
  const execution = `${stage}-to-2-0-${stage}-sleepy`;
  await pollUntil(() => first.said(`started ${execution}`) || undefined, 60_000, 'the step to start', 50);
  first.kill('SIGKILL');
  const recorded = await s.objects.get('ActivationExecution', s.ns, execution);

  const second = startLandscapeWorker(landscape, far!.kubeconfig);
  const done = await waitFor(s, 'VectorActivation', `${stage}-to-2`, phaseIs('Succeeded', 'Failed'), 90_000);

  expect(done.status.phase).toBe('Succeeded');
  expect(second.said(`started ${execution}`)).toBe(true);
  // The record the core wrote before the first change is the one kept: the second attempt did not record again.
  const finished = await s.objects.get('ActivationExecution', s.ns, execution);
  expect(recorded?.status?.record?.rules).toHaveLength(1);
  expect(finished?.status?.record).toEqual(recorded?.status?.record);
  expect(finished?.status?.phase).toBe('Succeeded');
});

it("the landscape's workers report what its routes hold: a person's edit there reaches the Stage's status, and reports that stop leave its StageVersions protected and say so", async () => {
  const stage = 'reported';
  const landscape = 'watched';
  await create(s, object('Landscape', s.systemNs, landscape, { allowedNamespaces: [s.ns] }));
  await seedStage(s, stage, [1, 2], { landscape, drainSeconds: 0 });
  await seedRoutes(inLandscape(), stage, 1);
  await seedPlan(s, stage, { plan: `${stage}-plan`, gatewayOnly: true });
  await seedActive(s, stage, 1);
  /** The landscape's gateway-api worker, with the landscape's kubeconfig only. */
  const startWorker = async () => {
    const worker = await createExecutorWorker({
      connection: connection!,
      namespace: temporalNamespace(),
      kubeConfig: far!.kc,
      executor: executorFor('gateway-api')!,
      landscape,
      taskQueue: executorTaskQueue('gateway-api', landscape) + `-${s.ns}`,
    });
    return { worker, run: worker.run() };
  };
  const reportedAs = (reason: string) =>
    pollUntil(
      async () => {
        const found = await s.objects.get('Stage', s.ns, stage);
        const condition = found?.status?.conditions?.find((c: any) => c.type === 'LandscapeReported');
        return condition?.reason === reason ? found : undefined;
      },
      60_000,
      `the Stage's LandscapeReported condition to say ${reason}`,
      200,
    );
  const api = far!.kc.makeApiClient(k8s.CustomObjectsApi);
  const httpRoute = { ...HTTPROUTE_COORDINATES, namespace: s.ns, name: `${stage}-shop` };
  /** A person's edit of the managed rule in the landscape: these weights for v1 and v2. */
  const editRoute = async (v1: number, v2: number) => {
    const route: any = await api.getNamespacedCustomObject(httpRoute);
    route.spec.rules[0].backendRefs = [
      { name: 'mirror-sink', port: 9090, weight: 0 },
      { name: `${stage}-shop-v1`, port: 8080, weight: v1 },
      { name: `${stage}-shop-v2`, port: 8080, weight: v2 },
    ];
    await api.replaceNamespacedCustomObject({ ...httpRoute, body: route });
  };
  const servingMark = async (r: number) =>
    (await s.objects.get('StageVersion', s.ns, `${stage}-${r}`))?.metadata.annotations?.[ANNOTATION_SERVING];
  const weightsIn = (found: any) => found?.status?.traffic?.map((t: any) => t.weights);

  let agent = await startWorker();
  try {
    await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });
    const done = await waitFor(s, 'VectorActivation', `${stage}-to-2`, phaseIs('Succeeded', 'Failed'), 60_000);
    expect(`${done.status.phase}: ${done.status.message}`).toMatch(/^Succeeded/);
    await reportedAs('Reported');

    // A person puts 30 % back on v1 in the landscape: the next report brings it to the Stage.
    await editRoute(30, 70);
    const edited = await pollUntil(
      async () => {
        const found = await s.objects.get('Stage', s.ns, stage);
        return weightsIn(found)?.[0]?.[`${stage}-1`] === 30 ? found : undefined;
      },
      30_000,
      "the person's edit in the Stage's status",
      200,
    );
    expect(weightsIn(edited)).toEqual([{ [`${stage}-1`]: 30, [`${stage}-2`]: 70 }]);
    await pollUntil(async () => (await servingMark(1)) === stage || undefined, 30_000, 'v1 marked serving again', 200);

    // Its workers stop, and the rule goes back to v2 alone unseen: the Stage says the reports
    // stopped, and v1 stays protected as last known.
    agent.worker.shutdown();
    await agent.run;
    await editRoute(0, 100);
    const stopped = await reportedAs('ReportsStopped');
    expect(stopped.status.conditions.find((c: any) => c.type === 'LandscapeReported').message).toContain(
      "the Stage's StageVersions stay protected as last known",
    );
    expect(weightsIn(stopped)).toEqual([{ [`${stage}-1`]: 30, [`${stage}-2`]: 70 }]);
    expect(await servingMark(1)).toBe(stage);

    // A worker again: its report shows v2 alone, and v1 is let go (its drain is 0 s).
    agent = await startWorker();
    await reportedAs('Reported');
    await pollUntil(async () => (await servingMark(1)) === undefined || undefined, 30_000, 'v1 let go', 200);
    expect(weightsIn(await s.objects.get('Stage', s.ns, stage))).toEqual([{ [`${stage}-2`]: 100 }]);

    // The Landscape deleted: its report workflow ends by itself.
    await s.objects.delete('Landscape', s.systemNs, landscape);
    const reports = s.client.workflow.getHandle(landscapeReportWorkflowId(landscape, `-${s.ns}`));
    await pollUntil(
      async () => ((await reports.describe()).status.name === 'COMPLETED' ? true : undefined),
      30_000,
      "the Landscape's report workflow to end",
      200,
    );
  } finally {
    if (agent.worker.getState() === 'RUNNING') agent.worker.shutdown();
    await agent.run.catch(() => undefined);
  }
});
