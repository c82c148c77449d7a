/**
 * Metrics and logs of a real process: `tsx worker/main.ts all` (watcher, Stage controller, core and
 * executor workers) on this file's namespaces and task queues, with a health port. /metrics is
 * scraped before and after activations; the project's series (activations by phase and reason,
 * activation duration, executor tasks, event lag, handoff, waiting activations, circuit breaker)
 * and the Temporal SDK's (workflow completions, activity latency) move as the activations run.
 * Its stdout is JSON records, the Temporal SDK's among them with the activation's fields.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { k8s } from '../k8s/client.js';
import { pollUntil } from '../scripts/env/process.js';
import { freePort } from '../scripts/env/ports.js';
import { stageLeaseName } from '../shared/names.js';
import { activate, routes, seedActive, seedPlan, seedRoutes, seedStage } from './support/scenario.js';
import { phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';

const root = fileURLToPath(new URL('..', import.meta.url));
let s: TestSystem;
let child: ChildProcess | undefined;
let port = 0;
const stdout: string[] = [];
const stderr: string[] = [];

/** Sum of every series of `name` whose labels include `labels` (0 when there is none). */
function value(text: string, name: string, labels: Record<string, string> = {}): number {
  let sum = 0;
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries(
      [...(m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) sum += Number(m[3]);
  }
  return sum;
}

async function scrape(): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/plain');
  return res.text();
}

beforeAll(async () => {
  // Namespaces and objects only: every component runs in the process below.
  s = await startTestSystem('metrics', { core: false, watcher: false, stageController: false, executors: [] });
  await seedStage(s, 'shop', [1, 2, 3, 4]);
  await seedRoutes(s, 'shop', 1);
  await seedPlan(s, 'shop');
  await seedActive(s, 'shop', 1);
  port = await freePort();
  child = spawn('npx', ['tsx', 'worker/main.ts', 'all'], {
    cwd: root,
    env: {
      ...process.env,
      KONFIDENCE_SYSTEM_NAMESPACE: s.systemNs,
      KONFIDENCE_QUEUE_SUFFIX: `-${s.ns}`,
      KONFIDENCE_WATCH_NAMESPACES: s.ns,
      KONFIDENCE_HEALTH_PORT: String(port),
      // Debug: the SDK's records of activities and workflow tasks are debug records.
      KONFIDENCE_LOG_LEVEL: 'debug',
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group: the signal reaches tsx's node child too
  });
  createInterface({ input: child.stdout! }).on('line', (l) => stdout.push(l));
  createInterface({ input: child.stderr! }).on('line', (l) => stderr.push(l));
  await pollUntil(
    async () => (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200,
    90_000,
    `the process to be ready (stdout: ${stdout.slice(-3).join(' | ')}; stderr: ${stderr.slice(-3).join(' | ')})`,
    250,
  );
}, 120_000);

afterAll(async () => {
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = once(child, 'exit');
    process.kill(-child.pid!, 'SIGTERM');
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 30_000).unref())]);
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
  }
  await s?.stop();
});

it('an activation moves the activation, executor, event-lag and Temporal SDK metrics', async () => {
  const before = await scrape();
  // Declared, without series while no CircuitBreaker exists (test/circuit-breaker.test.ts sets them).
  expect(before).toMatch(/^# TYPE konfidence_circuit_breaker_state gauge$/m);

  await activate(s, 'shop-to-2', 'shop', 2);
  await waitFor(s, 'VectorActivation', 'shop-to-2', phaseIs('Succeeded', 'Failed'), 60_000);
  expect((await routes(s, 'shop')).primary).toEqual(['shop/v2:100']);

  const after = await scrape();
  const moved = (name: string, labels: Record<string, string> = {}) =>
    value(after, name, labels) - value(before, name, labels);
  expect({
    succeeded: moved('konfidence_activations_total', { phase: 'Succeeded', reason: 'Activated' }),
    inProgress: moved('konfidence_activations_total', { phase: 'InProgress' }),
    durations: moved('konfidence_activation_duration_seconds_count', { phase: 'Succeeded' }),
    gatewayTasks: moved('konfidence_executor_task_duration_seconds_count', {
      executor: 'gateway-api',
      action: 'Apply',
      outcome: 'succeeded',
    }),
    istioTasks: moved('konfidence_executor_task_duration_seconds_count', {
      executor: 'istio',
      action: 'Apply',
      outcome: 'succeeded',
    }),
    taskErrors: moved('konfidence_executor_task_errors_total'),
  }).toEqual({ succeeded: 1, inProgress: 1, durations: 1, gatewayTasks: 1, istioTasks: 1, taskErrors: 0 });
  expect(moved('konfidence_activation_duration_seconds_sum', { phase: 'Succeeded' })).toBeGreaterThan(0);
  expect(
    moved('konfidence_event_lag_seconds_count', { component: 'watcher', kind: 'VectorActivation' }),
  ).toBeGreaterThan(0);
  expect(moved('konfidence_event_lag_seconds_count', { component: 'stage-controller' })).toBeGreaterThan(0);
  expect(after).toContain('# TYPE nodejs_eventloop_lag_seconds gauge');
  // The Temporal SDK's runtime metrics, served on the same endpoint. The workflow completes just
  // after it wrote the final phase (it gives the Stage back first).
  const sdk = await pollUntil(
    async () => {
      const text = await scrape();
      return value(text, 'temporal_workflow_completed', { workflow_type: 'vectorActivation' }) >
        value(before, 'temporal_workflow_completed', { workflow_type: 'vectorActivation' })
        ? text
        : undefined;
    },
    10_000,
    'temporal_workflow_completed of the activation workflow',
  );
  expect(
    value(sdk, 'temporal_workflow_completed', { workflow_type: 'vectorActivation' }) -
      value(before, 'temporal_workflow_completed', { workflow_type: 'vectorActivation' }),
  ).toBe(1);
  expect(
    value(sdk, 'temporal_activity_execution_latency_count', { activity_type: 'executeTask' }) -
      value(before, 'temporal_activity_execution_latency_count', { activity_type: 'executeTask' }),
  ).toBe(2);

  // Logs: every stdout line a JSON record.
  const records = stdout.map((l) => JSON.parse(l) as Record<string, unknown>);
  expect(
    records.every((r) => typeof r.time === 'string' && typeof r.level === 'string' && typeof r.msg === 'string'),
  ).toBe(true);
  expect(
    records.some(
      (r) => r.component === 'health' && String(r.msg).startsWith(`health server listening on port ${port}`),
    ),
  ).toBe(true);
  // The SDK's own records (TypeScript side and Core's, forwarded) carry the activation's fields.
  const about = {
    namespace: s.ns,
    activation: 'shop-to-2',
    workflowId: expect.stringContaining(`vectoractivation/${s.ns}/shop-to-2/`),
  };
  expect(
    records.find(
      (r) => r.component === 'temporal-worker' && r.msg === 'Activity completed' && r.activityType === 'executeTask',
    ),
  ).toMatchObject(about);
  expect(records.find((r) => r.component === 'temporal-core' && r.activation === 'shop-to-2')).toMatchObject(about);
}, 90_000);

it("a waiting activation shows in the waiting gauge, and the Stage's handoff to it is timed", async () => {
  const before = await scrape();
  // Another holder has the Stage's Lease: the next activation gets the lock, then waits for the
  // Lease, and the one after it waits for the lock.
  const leases = s.kc.makeApiClient(k8s.CoordinationV1Api);
  const name = stageLeaseName('shop');
  const lease = await leases.readNamespacedLease({ name, namespace: s.ns });
  const now = new k8s.V1MicroTime();
  await leases.replaceNamespacedLease({
    name,
    namespace: s.ns,
    body: {
      ...lease,
      spec: {
        ...lease.spec,
        holderIdentity: 'another-installation',
        leaseDurationSeconds: 120,
        acquireTime: now,
        renewTime: now,
      },
    },
  });
  await activate(s, 'shop-to-3', 'shop', 3);
  await waitFor(s, 'VectorActivation', 'shop-to-3', phaseIs('Waiting'), 30_000);
  await activate(s, 'shop-to-4', 'shop', 4);
  await waitFor(s, 'VectorActivation', 'shop-to-4', phaseIs('Waiting'), 30_000);
  await pollUntil(
    async () => value(await scrape(), 'konfidence_activations_waiting', { namespace: s.ns, stage: 'shop' }) === 2,
    10_000,
    'both activations in the waiting gauge',
  );

  // The other holder lets go: shop-to-3 takes the Stage, then hands it to shop-to-4.
  const held = await leases.readNamespacedLease({ name, namespace: s.ns });
  await leases.replaceNamespacedLease({
    name,
    namespace: s.ns,
    body: { ...held, spec: { ...held.spec, holderIdentity: undefined, renewTime: new k8s.V1MicroTime() } },
  });
  for (const n of ['shop-to-3', 'shop-to-4'])
    expect(
      (await waitFor(s, 'VectorActivation', n, phaseIs('Succeeded', 'Failed', 'Skipped'), 90_000)).status.phase,
    ).toBe('Succeeded');
  expect((await routes(s, 'shop')).primary).toEqual(['shop/v4:100']);

  const after = await pollUntil(
    async () => {
      const text = await scrape();
      return value(text, 'konfidence_stage_handoff_seconds_count') -
        value(before, 'konfidence_stage_handoff_seconds_count') ===
        2
        ? text
        : undefined;
    },
    10_000,
    'two handoffs: from the other holder to shop-to-3, from shop-to-3 to shop-to-4',
  );
  const handoffs = (n: string) => value(after, n) - value(before, n);
  console.log(
    `Stage handoffs: ${handoffs('konfidence_stage_handoff_seconds_count')}, ${Math.round((1000 * handoffs('konfidence_stage_handoff_seconds_sum')) / 2)} ms on average`,
  );
  expect(value(after, 'konfidence_activations_waiting', { namespace: s.ns, stage: 'shop' })).toBe(0);
  expect(
    value(after, 'konfidence_activations_total', { phase: 'Waiting' }) -
      value(before, 'konfidence_activations_total', { phase: 'Waiting' }),
  ).toBe(2);
}, 150_000);
