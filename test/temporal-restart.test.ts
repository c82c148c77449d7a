/**
 * A gate survives a restart of the Temporal server: a progressive activation waits at its
 * approval, the server is SIGKILLed and started again on its database, and an approval given by
 * annotation afterwards takes it on from its gate to Succeeded. The file runs a Temporal dev server
 * of its own (the suite's shared one serves every other file), with the system in this process.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Connection } from '@temporalio/client';
import { devServerArgs } from '../scripts/env/components.js';
import { binaries } from '../scripts/env/paths.js';
import { freePort } from '../scripts/env/ports.js';
import { pollUntil } from '../scripts/env/process.js';
import { kubectl } from './support/cluster.js';
import { activate, seedActive, seedStage } from './support/scenario.js';
import { create, object, phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';

const NAMESPACE = 'default';
const dir = mkdtempSync(join(tmpdir(), 'konfidence-temporal-restart-'));
let port: number;
let server: ChildProcess | undefined;
let s: TestSystem | undefined;

/** The dev server on `port`, its state in this file's folder; resolves once it answers. */
async function startServer(): Promise<void> {
  const args = devServerArgs({
    port,
    httpPort: await freePort(),
    metricsPort: await freePort(),
    dbFile: join(dir, 'temporal.db'),
    namespaces: [NAMESPACE],
  });
  server = spawn(binaries.temporal, args, { stdio: 'ignore', detached: true });
  await pollUntil(
    async () => {
      const connection = await Connection.connect({ address: `127.0.0.1:${port}`, connectTimeout: 1_000 }).catch(
        () => undefined,
      );
      if (!connection) return undefined;
      const ok = await connection.workflowService.describeNamespace({ namespace: NAMESPACE }).then(
        () => true,
        () => undefined,
      );
      await connection.close();
      return ok;
    },
    60_000,
    'the Temporal dev server to answer',
    200,
  );
}

async function killServer(): Promise<void> {
  const child = server!;
  const exited = once(child, 'exit');
  process.kill(-child.pid!, 'SIGKILL');
  await exited;
  server = undefined;
}

beforeAll(async () => {
  port = await freePort();
  await startServer();
  s = await startTestSystem('temporal-restart', { temporalAddress: `127.0.0.1:${port}`, temporalNamespace: NAMESPACE });
}, 120_000);

afterAll(async () => {
  await s?.stop();
  if (server) await killServer();
  rmSync(dir, { recursive: true, force: true });
});

it('an activation waiting at its approval survives a SIGKILL and restart of the Temporal server, and the approval after it takes it on', async () => {
  const sys = s!;
  await seedStage(sys, 'gate', [1, 2]);
  await seedActive(sys, 'gate', 1);
  await create(
    sys,
    object('ActivationTaskRegistration', sys.systemNs, 'gate-sleepy', {
      type: 'sleepy',
      timeoutSeconds: 60,
      spec: { seconds: 0 },
    }),
  );
  await create(
    sys,
    object('ActivationExecutionPlan', sys.systemNs, 'gate-plan', {
      steps: [{ name: 'wait', tasks: ['gate-sleepy'] }],
      progression: { steps: [{ setWeight: 10 }, { pause: {} }] },
    }),
  );
  await activate(sys, 'gate-to-2', 'gate', 2, { executionPlan: 'gate-plan' });
  await waitFor(sys, 'VectorActivation', 'gate-to-2', (o) => o.status?.progression?.gate?.type === 'Approval', 60_000);

  await killServer();
  await startServer();

  await kubectl('annotate', 'va', 'gate-to-2', '-n', sys.ns, 'konfidence.cloud/approve=admin after the restart');
  const done = await waitFor(
    sys,
    'VectorActivation',
    'gate-to-2',
    phaseIs('Succeeded', 'Failed', 'Cancelled'),
    120_000,
  );
  expect(done.status).toMatchObject({
    phase: 'Succeeded',
    requests: [expect.objectContaining({ action: 'approve', outcome: 'Accepted' })],
  });
  expect(done.status.progression.log).toEqual(
    expect.arrayContaining([expect.objectContaining({ action: 'Approved', by: 'admin' })]),
  );
}, 240_000);
