/**
 * What every test file of the activation workflow shares: one time-skipping test server and its
 * workers per file (test/unit/support/fake-workers.ts), a clean fake cluster per test, the
 * workflows a test started closed after it, and the helpers the tests speak in. Importing it
 * registers the hooks; `env` and `cluster` are live bindings, the current file's and test's.
 *
 * About time: the test server skips time only when nothing is outstanding (no workflow task, no
 * activity) and a client unlocked it (`handle.result()`, `env.sleep()`); otherwise workflow time
 * runs at wall-clock speed. So a test that must show that something happens *without* waiting
 * (deletion closes promptly, the retry window is still open) polls with a real-time deadline while
 * time is locked, and a test that must show a long wait uses `env.sleep` / `result()`.
 */
import { WorkflowUpdateFailedError, type WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import { pollUntil } from '../../../scripts/env/process.js';
import { activationWorkflowId, cancelSignal, type ActivationRef } from '../../../shared/activation.js';
import { lockStateQuery, stageLockWorkflowId, type LockState } from '../../../stage-lock/contract.js';
import { vectorActivation, type ActivationOptions } from '../../../workflows/activation/workflow.js';
import { FakeCluster, type FakeActivationStatus } from './fake-cluster.js';
import { terminateAtRest } from './at-rest.js';
import { lockRequester } from './lock-workflows.js';
import { startFakeWorkers, type FakeWorkers } from './fake-workers.js';

export const ns = 'unit';
export const DAY = 24 * 60 * 60 * 1000;
/** One task queue per file (workers are made once); each test has Stages and names of its own. */
export const taskQueue = `activation-workflow-${process.pid}`;
export const queueSuffix = `-unit-${process.pid}`;
/** Each test, when time skipping works, takes a few seconds at most; fail fast when it does not. */
export const TEST_TIMEOUT = 30_000;
/** A Landscape with a fake worker polling its queue (another, named in no worker, has none). */
export const LANDSCAPE = 'east';

export let env: TestWorkflowEnvironment;
let fake: FakeWorkers | undefined;
/** The fake of the current test: the workers' activities delegate to it, so each test starts clean. */
export let cluster: FakeCluster;
/** Workflows the current test started, closed after it whatever happened. */
let started: { handle: WorkflowHandle; kind: 'activation' | 'holder' }[] = [];

beforeAll(async () => {
  fake = await startFakeWorkers(taskQueue, queueSuffix, () => cluster, [LANDSCAPE]);
  env = fake.env;
});

afterAll(async () => {
  await fake?.stop();
});

beforeEach(() => {
  cluster = new FakeCluster();
  started = [];
});

afterEach(async () => {
  // The workflow's record of the status it wrote is never wrong: a write over it (without a read)
  // finds the object's status as recorded.
  expect(cluster.wronglyKnown()).toEqual({});
  // Close what the test left open the way a user would (deleting the VectorActivation). The test
  // server keeps a time-skipping lock for every activity still running when its workflow closes
  // (sdk-java#1138), which would stop time skipping for the rest of the file: first let running
  // activities (a Lease renewal being cancelled, say) finish. Idle lock holders are terminated.
  for (const { handle, kind } of started) {
    if (!(await isOpen(handle))) continue;
    if (kind === 'holder') {
      await terminateAtRest(handle, 'test over');
      continue;
    }
    await pollUntil(
      async () => ((await handle.describe()).raw.pendingActivities ?? []).length === 0,
      5_000,
      `${handle.workflowId} to have no running activity`,
      50,
    ).catch(() => undefined);
    // A run that ends by itself (its Stage gone, say) may close while its last activities finish.
    const closedMeanwhile = await handle.signal(cancelSignal, { deleted: true, reason: 'test over' }).then(
      () => false,
      async (err: unknown) => !(await isOpen(handle)) || Promise.reject(err),
    );
    if (closedMeanwhile) continue;
    await pollUntil(
      async () => !(await isOpen(handle)),
      10_000,
      `${handle.workflowId} to close after the test`,
      50,
    ).catch(() => terminateAtRest(handle, 'test over'));
  }
});

// --- helpers ---------------------------------------------------------------------------------

export async function isOpen(handle: WorkflowHandle): Promise<boolean> {
  return (await handle.describe()).status.name === 'RUNNING';
}

export async function start(ref: ActivationRef, options: ActivationOptions = {}) {
  const handle = await env.client.workflow.start(vectorActivation, {
    taskQueue,
    workflowId: activationWorkflowId(ref),
    args: [ref, { queueSuffix, ...options }],
  });
  started.push({ handle, kind: 'activation' });
  return handle;
}

export function activate(
  name: string,
  stage: string,
  stageVersion: string,
  plan?: string,
  status?: FakeActivationStatus,
): ActivationRef {
  return cluster.addActivation(ns, name, { stage, stageVersion, ...(plan ? { executionPlan: plan } : {}) }, status);
}

/** Polls the fake (real time, 15 s) until the activation's recorded phase is `phase`. */
export function phaseIs(ref: ActivationRef, phase: string) {
  return pollUntil(
    () => (cluster.activation(ref).status.phase === phase ? cluster.activation(ref).status : undefined),
    15_000,
    `${ref.name} to be ${phase}`,
    20,
  );
}

export function executorRunning(registration: string) {
  return pollUntil(
    () => cluster.executorCalls.find((c) => c.registration === registration && c.outcome === 'running'),
    15_000,
    `the executor to run ${registration}`,
    20,
  );
}

export function lockState(stage: string): Promise<LockState | undefined> {
  return env.client.workflow
    .getHandle(stageLockWorkflowId(ns, stage))
    .query(lockStateQuery)
    .catch(() => undefined);
}

export function waitForLock(stage: string, ok: (s: LockState) => boolean, what: string): Promise<LockState> {
  return pollUntil(
    async () => {
      const s = await lockState(stage);
      return s && ok(s) ? s : undefined;
    },
    15_000,
    what,
    50,
  );
}

/**
 * A holder of the Stage that is not an activation: the test requester of the lock tests, granted
 * and holding until `finishSignal`. It runs no activity while it holds, so it never stops time skipping.
 */
export async function holdStage(stage: string) {
  const handle = await env.client.workflow.start(lockRequester, {
    taskQueue,
    workflowId: `holder/${ns}/${stage}`,
    args: [{ namespace: ns, stage, revision: 1, hold: true }],
  });
  started.push({ handle, kind: 'holder' });
  await waitForLock(stage, (s) => s.holder?.requester === handle.workflowId, `the holder to be granted ${stage}`);
  return handle;
}

export const waiting = (stage: string, ref: ActivationRef) =>
  waitForLock(
    stage,
    (s) => s.waiting.some((w) => w.requester === activationWorkflowId(ref)),
    `${ref.name} to be queued at the lock of ${stage}`,
  );

/** The message a refused Update carries. */
export async function refusal(p: Promise<unknown>): Promise<string> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!err) throw new Error('the Update was accepted');
  return err instanceof WorkflowUpdateFailedError ? (err.cause as Error).message : (err as Error).message;
}

export const journalIndex = (entry: string) => cluster.journal.indexOf(entry);
