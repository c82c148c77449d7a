/**
 * The postgres profile (npm run env:up -- --temporal=postgres) on a control plane of its own (a
 * separate state folder), so the servers the other tests use are never restarted: a second up
 * reuses what runs, Temporal's data lives in PostgreSQL across down and up (no second initdb), and
 * a PostgreSQL that died is restarted with Temporal server on top of it.
 */
import { chmodSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import type { ControlPlane } from '../scripts/env/control-plane.js';
import { searchAttributes } from '../shared/search-attributes.js';

const stateDir = mkdtempSync(join(tmpdir(), 'konfidence-env-pg-'));
// PostgreSQL runs as the `postgres` user when the tests run as root: it must reach its folder.
chmodSync(stateDir, 0o755);
process.env.KONFIDENCE_ENV_DIR = stateDir;
// Imported after the variable is set: paths.ts reads it once.
const controlPlane = await import('../scripts/env/control-plane.js');

afterAll(async () => {
  await controlPlane.down();
  rmSync(stateDir, { recursive: true, force: true });
});

/** The status of a workflow that waits forever (no worker polls its queue), or NOT_FOUND. */
async function statusOf(cp: ControlPlane, workflowId: string): Promise<string> {
  const connection = await Connection.connect({ address: cp.temporalAddress });
  try {
    const description = await new Client({ connection, namespace: cp.temporalNamespace }).workflow
      .getHandle(workflowId)
      .describe();
    return description.status.name;
  } catch (err) {
    if ((err as Error).name === 'WorkflowNotFoundError') return 'NOT_FOUND';
    throw err;
  } finally {
    await connection.close();
  }
}

async function startWaitingWorkflow(cp: ControlPlane, workflowId: string): Promise<void> {
  const connection = await Connection.connect({ address: cp.temporalAddress });
  try {
    await new Client({ connection, namespace: cp.temporalNamespace }).workflow.start('nobodyRunsThis', {
      workflowId,
      taskQueue: 'konfidence-postgres-profile-test',
    });
  } finally {
    await connection.close();
  }
}

describe('postgres profile', () => {
  it('serves Temporal on PostgreSQL with the namespace, search attributes and UI; keeps its data across down, up and a PostgreSQL crash', async () => {
    const first = await controlPlane.up(() => {}, { temporal: 'postgres' });
    expect(first.started).toBe(true);
    expect(first.temporalProfile).toBe('postgres');
    const connection = await Connection.connect({ address: first.temporalAddress });
    try {
      const { customAttributes } = await connection.operatorService.listSearchAttributes({
        namespace: first.temporalNamespace,
      });
      expect(Object.keys(customAttributes ?? {})).toEqual(expect.arrayContaining(searchAttributes.map((a) => a.name)));
    } finally {
      await connection.close();
    }
    expect((await fetch(first.temporalUiUrl)).status).toBe(200);
    await startWaitingWorkflow(first, 'survivor');

    // Without the option, up keeps the profile the folder runs, and reuses every server.
    const again = await controlPlane.up(() => {});
    expect(again.started).toBe(false);
    expect(again.temporalProfile).toBe('postgres');
    expect(again.pids).toEqual(first.pids);

    expect(await controlPlane.down()).toBe(true);
    const second = await controlPlane.up(() => {});
    expect(second.started).toBe(true);
    expect(second.ports).toEqual(first.ports);
    expect(await statusOf(second, 'survivor')).toBe('RUNNING');
    // The cluster was made once: PostgreSQL restarted on the data it had.
    const log = readFileSync(join(stateDir, 'logs', 'postgresql.log'), 'utf8');
    expect(log).toMatch(/database system was shut down at/);

    // A crash: PostgreSQL and its backends die at once.
    process.kill(-second.pids.postgres!, 'SIGKILL');
    const third = await controlPlane.up(() => {});
    expect(third.started).toBe(true);
    expect(third.pids.postgres).not.toBe(second.pids.postgres);
    expect(third.pids.temporal).not.toBe(second.pids.temporal);
    // The Kubernetes side was not touched.
    expect(third.pids.etcd).toBe(second.pids.etcd);
    expect(third.pids.apiserver).toBe(second.pids.apiserver);
    expect(await statusOf(third, 'survivor')).toBe('RUNNING');
  });
});
