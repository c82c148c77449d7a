/**
 * A process may die at any line: SIGKILL the core worker (a separate process, as in production)
 * while an activation runs; a restarted core worker completes it. And one that is asked to stop
 * (SIGTERM, as a rolling update does) stops polling, exits by itself, and loses nothing.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { pollUntil } from '../scripts/env/process.js';
import { startedExecutions } from './support/executors.js';
import { activate, routes, seedActive, seedRoutes, seedStage } from './support/scenario.js';
import { create, object, phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';

const root = fileURLToPath(new URL('..', import.meta.url));
let s: TestSystem;
const children: ChildProcess[] = [];

beforeAll(async () => {
  // Executors and the watcher in this process; the core worker runs apart so it can be killed.
  s = await startTestSystem('durable', { core: false });
});
afterAll(async () => {
  for (const c of children) c.kill('SIGKILL');
  await s?.stop();
});

/** The core worker as one node process (tsx as a loader, no launcher between): its exit is the worker's. */
function startCoreWorker(): ChildProcess & { polling: () => boolean } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts', 'core'], {
    cwd: root,
    env: {
      ...process.env,
      KONFIDENCE_SYSTEM_NAMESPACE: s.systemNs,
      KONFIDENCE_QUEUE_SUFFIX: `-${s.ns}`,
      KONFIDENCE_HEALTH_PORT: '0',
    },
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += String(d)));
  children.push(child);
  return Object.assign(child, { polling: () => output.includes('core worker polling') });
}

const exited = (c: ChildProcess) => c.exitCode !== null || c.signalCode !== null;

it('completes an activation after its core worker was SIGKILLed mid-run and restarted', async () => {
  await seedStage(s, 'crash', [1, 2]);
  await seedRoutes(s, 'crash', 1);
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, 'crash-sleepy', {
      type: 'sleepy',
      timeoutSeconds: 60,
      spec: { seconds: 3 },
    }),
  );
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, 'crash-gateway', {
      type: 'gateway-api',
      spec: { routes: [{ name: 'crash-shop', rules: [0] }] },
    }),
  );
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, 'crash-plan', {
      steps: [
        { name: 'wait', tasks: ['crash-sleepy'] },
        { name: 'gateway', tasks: ['crash-gateway'] },
      ],
    }),
  );

  const first = startCoreWorker();
  await activate(s, 'crash-to-2', 'crash', 2, { executionPlan: 'crash-plan' });
  await waitFor(s, 'VectorActivation', 'crash-to-2', phaseIs('InProgress'), 60_000);
  await pollUntil(
    () => [...startedExecutions].some((n) => n.startsWith('crash-to-2-')),
    30_000,
    'the first step to run',
  );
  first.kill('SIGKILL');
  await pollUntil(() => first.exitCode !== null || first.signalCode !== null, 10_000, 'the core worker to die');

  startCoreWorker();
  const va = await waitFor(s, 'VectorActivation', 'crash-to-2', phaseIs('Succeeded', 'Failed'), 90_000);
  expect({ phase: va.status.phase, message: va.status.message }).toEqual({
    phase: 'Succeeded',
    message: expect.any(String),
  });
  expect(va.status.steps.map((x: { phase: string }) => x.phase)).toEqual(['Succeeded', 'Succeeded']);
  expect((await routes(s, 'crash')).api).toEqual(['mirror-sink:0', 'crash-shop-v2:100']);
});

it('stops a core worker cleanly on SIGTERM mid-activation; the next one completes the activation', async () => {
  await seedStage(s, 'term', [1, 2]);
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, 'term-sleepy', {
      type: 'sleepy',
      timeoutSeconds: 60,
      spec: { seconds: 3 },
    }),
  );
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, 'term-plan', { steps: [{ name: 'wait', tasks: ['term-sleepy'] }] }),
  );

  // Only this test's worker polls: the earlier test's survivor goes first, the way a rolling update replaces it.
  for (const child of children.filter((candidate) => !exited(candidate))) child.kill('SIGTERM');
  await pollUntil(() => children.every(exited), 30_000, 'the earlier core workers to exit');
  const first = startCoreWorker();
  await pollUntil(() => first.polling(), 60_000, 'the core worker to poll');
  await activate(s, 'term-to-2', 'term', 2, { executionPlan: 'term-plan' });
  await waitFor(s, 'VectorActivation', 'term-to-2', phaseIs('InProgress'), 60_000);
  first.kill('SIGTERM');
  // It stops polling and exits on its own, well within a Pod's 30 s termination grace period.
  await pollUntil(() => exited(first), 30_000, 'the core worker to exit after SIGTERM');
  expect(first.exitCode).toBe(0);

  startCoreWorker();
  const va = await waitFor(s, 'VectorActivation', 'term-to-2', phaseIs('Succeeded', 'Failed'), 90_000);
  expect({ phase: va.status.phase, attempt: va.status.attempt }).toEqual({ phase: 'Succeeded', attempt: 1 });
});

it("a progression's pause survives its core worker's SIGKILL: a new worker goes on when the pause's timer fires, not before", async () => {
  await seedStage(s, 'pause', [1, 2]);
  await seedRoutes(s, 'pause', 1);
  await seedActive(s, 'pause', 1);
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, 'pause-gateway', {
      type: 'gateway-api',
      spec: { routes: [{ name: 'pause-shop', rules: [0] }] },
    }),
  );
  const progression = { steps: [{ setWeight: 10 }, { pause: { durationSeconds: 8 } }] };
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, 'pause-plan', {
      steps: [{ name: 'gateway', tasks: ['pause-gateway'] }],
      progression,
    }),
  );

  for (const child of children.filter((candidate) => !exited(candidate))) child.kill('SIGKILL');
  await pollUntil(() => children.every(exited), 30_000, 'the earlier core workers to exit');
  const first = startCoreWorker();
  await activate(s, 'pause-to-2', 'pause', 2, { executionPlan: 'pause-plan' });
  const paused = await waitFor(
    s,
    'VectorActivation',
    'pause-to-2',
    (o) => o.status?.progression?.gate?.type === 'Pause',
    60_000,
  );
  expect((await routes(s, 'pause')).api).toEqual(['mirror-sink:0', 'pause-shop-v2:10', 'pause-shop-v1:90']);
  first.kill('SIGKILL');
  await pollUntil(() => exited(first), 10_000, 'the core worker to die');

  startCoreWorker();
  const va = await waitFor(s, 'VectorActivation', 'pause-to-2', phaseIs('Succeeded', 'Failed'), 90_000);
  expect(va.status.phase).toBe('Succeeded');
  // The pause ended by its timer: the switch to 100 % came after the pause's end, not sooner.
  expect(Date.parse(va.status.completionTime)).toBeGreaterThanOrEqual(Date.parse(paused.status.progression.gate.until));
  expect((await routes(s, 'pause')).api).toEqual(['mirror-sink:0', 'pause-shop-v2:100']);
});
