/**
 * The watcher survives an apiserver restart: its watch breaks, it re-lists and carries on, and an
 * activation that was running meanwhile completes. Runs on a control plane of its own, so the
 * servers the other tests use are never restarted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const stateDir = mkdtempSync(join(tmpdir(), 'konfidence-env-'));
const saved = { ...process.env };
process.env.KONFIDENCE_ENV_DIR = stateDir;
const controlPlane = await import('../scripts/env/control-plane.js');
const { seedStage, activate } = await import('./support/scenario.js');
const { create, object, phaseIs, startTestSystem, waitFor } = await import('./support/system.js');

let system: Awaited<ReturnType<typeof startTestSystem>> | undefined;

afterAll(async () => {
  await system?.stop();
  await controlPlane.down();
  process.env = saved;
  rmSync(stateDir, { recursive: true, force: true });
});

it('keeps starting workflows after the apiserver restarts, and finishes the one that was running', async () => {
  const cp = await controlPlane.up(() => {});
  // The test helpers read these: point them at this file's own control plane.
  process.env.KUBECONFIG = cp.kubeconfig;
  process.env.TEMPORAL_ADDRESS = cp.temporalAddress;
  process.env.TEMPORAL_UI_URL = cp.temporalUiUrl;
  const s = (system = await startTestSystem('restart'));
  await seedStage(s, 'web', [1, 2, 3]);
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, 'web-sleepy', {
      type: 'sleepy',
      timeoutSeconds: 120,
      spec: { seconds: 4 },
    }),
  );
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, 'default', { steps: [{ name: 'wait', tasks: ['web-sleepy'] }] }),
  );

  await activate(s, 'web-to-2', 'web', 2);
  await waitFor(s, 'VectorActivation', 'web-to-2', phaseIs('InProgress'));
  process.kill(cp.pids.apiserver!, 'SIGKILL');
  const restarted = await controlPlane.up(() => {});
  expect(restarted.pids.apiserver).not.toBe(cp.pids.apiserver);
  expect(restarted.ports.apiserver).toBe(cp.ports.apiserver);

  await waitFor(s, 'VectorActivation', 'web-to-2', phaseIs('Succeeded'), 60_000);
  // A VectorActivation created after the restart reaches a watcher that re-listed and re-watched.
  await activate(s, 'web-to-3', 'web', 3);
  await waitFor(s, 'VectorActivation', 'web-to-3', phaseIs('Succeeded'), 60_000);
});
