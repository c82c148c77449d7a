/**
 * A process may die at any line: SIGKILL the core worker (a separate process, as in production)
 * while an activation runs; a restarted core worker completes it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { pollUntil } from '../scripts/env/process.js';
import { startedExecutions } from './support/executors.js';
import { activate, routes, seedRoutes, seedStage } from './support/scenario.js';
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

function startCoreWorker(): ChildProcess {
  const child = spawn('npx', ['tsx', 'worker/main.ts', 'core'], {
    cwd: root,
    env: { ...process.env, KONFIDENCE_SYSTEM_NAMESPACE: s.systemNs, KONFIDENCE_QUEUE_SUFFIX: `-${s.ns}` },
    stdio: 'ignore',
    detached: true, // its own process group: SIGKILL reaches tsx's node child too
  });
  children.push(child);
  return child;
}

it('completes an activation after its core worker was SIGKILLed mid-run and restarted', async () => {
  await seedStage(s, 'crash', [1, 2]);
  await seedRoutes(s, 'crash', 1);
  await create(s, object('ActivationTaskRegistration', s.systemNs, 'crash-sleepy', { type: 'sleepy', timeoutSeconds: 60, spec: { seconds: 3 } }));
  await create(s, object('ActivationTaskRegistration', s.systemNs, 'crash-gateway', { type: 'gateway-api', spec: { routes: [{ name: 'crash-shop', rules: [0] }] } }));
  await create(s, object('ActivationExecutionPlan', s.systemNs, 'crash-plan', { steps: [{ name: 'wait', tasks: ['crash-sleepy'] }, { name: 'gateway', tasks: ['crash-gateway'] }] }));

  const first = startCoreWorker();
  await activate(s, 'crash-to-2', 'crash', 2, { executionPlan: 'crash-plan' });
  await waitFor(s, 'VectorActivation', 'crash-to-2', phaseIs('InProgress'), 60_000);
  await pollUntil(() => [...startedExecutions].some((n) => n.startsWith('crash-to-2-')), 30_000, 'the first step to run');
  process.kill(-first.pid!, 'SIGKILL');
  await pollUntil(() => first.exitCode !== null || first.signalCode !== null, 10_000, 'the core worker to die');

  startCoreWorker();
  const va = await waitFor(s, 'VectorActivation', 'crash-to-2', phaseIs('Succeeded', 'Failed'), 90_000);
  expect({ phase: va.status.phase, message: va.status.message }).toEqual({ phase: 'Succeeded', message: expect.any(String) });
  expect(va.status.steps.map((x: { phase: string }) => x.phase)).toEqual(['Succeeded', 'Succeeded']);
  expect((await routes(s, 'crash')).api).toEqual(['mirror-sink:0', 'crash-shop-v2:100']);
});
