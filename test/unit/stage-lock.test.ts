/**
 * The per-Stage lock workflow (stage-lock/workflow.ts) on the time-skipping test server: the real
 * `stageLock` and `requestStageLock`, with test requesters (test/unit/support/lock-workflows.ts)
 * in place of activations. Minutes of lock time pass in milliseconds.
 */
import { Context } from '@temporalio/activity';
import type { WorkflowHandle } from '@temporalio/client';
import type { TestWorkflowEnvironment } from '@temporalio/testing';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { createLockActivities, expectStageLock, type LockActivities } from '../../stage-lock/activities.js';
import { pollUntil } from '../../scripts/env/process.js';
import {
  lockGrantedSignal,
  lockStateQuery,
  RELEASE_UNANSWERED,
  releaseLockSignal,
  releaseLockUpdate,
  requestLockSignal,
  stageLockWorkflowId,
  type LockState,
} from '../../stage-lock/contract.js';
import { EXPECT_MS } from '../../stage-lock/rules.js';
import { HOLDER_CHECK_MS, IDLE_LINGER_MS, stageLock } from '../../stage-lock/workflow.js';
import { createTestActivities } from './support/activities.js';
import { atRest, notFound, terminateAtRest } from './support/at-rest.js';
import { finishSignal, lockRequester, lockTraffic, requesterQuery } from './support/lock-workflows.js';
import { testWorkflowBundle, timeSkippingEnv } from './support/temporal.js';

let env: TestWorkflowEnvironment;
let starting: Promise<TestWorkflowEnvironment> | undefined;
let worker: Worker | undefined;
let running: Promise<void> | undefined;
/**
 * Rejects once the worker stops before afterAll stops it (a worker that failed): the test in
 * progress fails with it.
 */
let stopped: Promise<never>;

const namespace = 'unit';
/**
 * One worker for the file, on one task queue: a worker costs about 0.4 s of CPU to start (its
 * workflow thread evaluates the bundle), and each test's Stage, so its lock, is its own anyway.
 */
const taskQueue = 'stage-lock-unit';
/** The activities of the running test, in place of the real ones it names. */
let replaced: Partial<LockActivities> = {};

beforeAll(async () => {
  starting = timeSkippingEnv();
  [env] = await Promise.all([starting, testWorkflowBundle()]);
  const real: Record<string, (...args: never[]) => Promise<unknown>> = {
    ...createLockActivities(env.client, taskQueue),
    ...createTestActivities(env.client),
  };
  const activities = Object.fromEntries(
    Object.entries(real).map(([name, activity]) => [
      name,
      (...args: never[]) => ((replaced as typeof real)[name] ?? activity)(...args),
    ]),
  );
  worker = await Worker.create({
    connection: env.nativeConnection,
    taskQueue,
    workflowBundle: await testWorkflowBundle(),
    activities,
  });
  running = worker.run();
  stopped = running.then(() => Promise.reject(new Error('the worker stopped')));
  // Handled here too: after the last test, afterAll's shutdown ends the run with no test to fail.
  stopped.catch(() => undefined);
});

afterAll(async () => {
  // A worker that failed has stopped already; its failure failed the test it met.
  if (worker?.getState() === 'RUNNING') worker.shutdown();
  await running?.catch(() => undefined);
  // The server started even if beforeAll gave up waiting for it: stop it all the same.
  await (await starting?.catch(() => undefined))?.teardown();
});

let stages = 0;

/** Each test: a Stage, so a lock workflow, of its own. */
function newStage(): { stage: string; lockId: string } {
  const stage = `stage-${++stages}`;
  return { stage, lockId: stageLockWorkflowId(namespace, stage) };
}

/**
 * Runs `body` while the file's worker serves the project's and the test's workflows, with
 * `activities` in place of the real ones.
 */
async function withActivities<T>(body: () => Promise<T>, activities: Partial<LockActivities> = {}): Promise<T> {
  replaced = activities;
  // An idle lock lingers (IDLE_LINGER_MS): it finishes before the next test, so that no test's lock
  // runs on into the next one's time.
  try {
    return await Promise.race([body(), stopped]);
  } finally {
    await env.sleep(IDLE_LINGER_MS + 1_000);
    replaced = {};
  }
}

function startRequester(
  stage: string,
  id: string,
  revision: number,
  hold = false,
  releaseBy: 'signal' | 'update' = 'signal',
) {
  return env.client.workflow.start(lockRequester, {
    taskQueue,
    workflowId: `${stage}/${id}`,
    args: [{ namespace, stage, revision, hold, releaseBy }],
  });
}

/** Polls the lock's state (real time; nothing here needs workflow time to pass) until `ok`. */
function waitForLock(lockId: string, ok: (s: LockState) => boolean, what: string): Promise<LockState> {
  return pollUntil(
    async () => {
      const state = await env.client.workflow
        .getHandle(lockId)
        .query(lockStateQuery)
        .catch(() => undefined);
      return state && ok(state) ? state : undefined;
    },
    10_000,
    what,
    50,
  );
}

// @temporalio/proto is CommonJS whose named exports Node's ESM loader cannot see.
const events = proto.temporal.api.enums.v1.EventType;

/**
 * Waits until the lock has nothing left to do (atRest: no workflow task, activity or signal of it
 * still open). The test server's continue-as-new is not atomic (temporalio/sdk-java#1538):
 * a signal or query that meets the lock around it was seen lost, or stalling the new run; the real
 * server makes the workflow handle a late signal before it continues. So a test that makes the lock
 * continue as new sends its next request only to a quiet lock, and does not query it.
 */
function waitForQuietLock(lockId: string): Promise<true> {
  return pollUntil(
    async () => atRest((await env.client.workflow.getHandle(lockId).fetchHistory()).events ?? []) || undefined,
    10_000,
    'the lock is quiet',
    20,
  );
}

/** Waits until a requester's ask (signal-with-start by its activity) has reached the lock. */
function waitForAsk(requester: WorkflowHandle): Promise<true> {
  return pollUntil(
    async () =>
      ((await requester.fetchHistory()).events ?? []).some(
        (e) => e.eventType === events.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
      ) || undefined,
    10_000,
    'the request reached the lock',
    20,
  );
}

/** The lock's grant signals: what the lock told requesters itself. */
async function grantsSentByLock(lockId: string): Promise<string[]> {
  const history = (await env.client.workflow.getHandle(lockId).fetchHistory()).events ?? [];
  return history
    .filter(
      (e) =>
        e.eventType === events.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED &&
        e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName === lockGrantedSignal.name,
    )
    .map((e) => e.signalExternalWorkflowExecutionInitiatedEventAttributes!.workflowExecution!.workflowId!);
}

const holderIs = (id: string) => (s: LockState) => s.holder?.requester === id;
const waitingAre =
  (...ids: string[]) =>
  (s: LockState) =>
    s.waiting.map((w) => w.requester).join() === ids.join();

test('a holder terminated under steady traffic is found within two check periods, and the newest waiter gets the Stage', async () => {
  const { stage, lockId } = newStage();
  await withActivities(async () => {
    const holder = await startRequester(stage, 'holder', 1, true);
    await waitForLock(lockId, holderIs(holder.workflowId), 'the first requester holds the Stage');

    // A new (newer) requester every 30 s: the lock is never quiet for a whole check period. Before
    // the fix, only a quiet period led to a check, so the Stage stayed with the terminated holder.
    const traffic = await env.client.workflow.execute(lockTraffic, {
      taskQueue,
      workflowId: `${stage}/traffic`,
      args: [
        {
          namespace,
          stage,
          holder: holder.workflowId,
          terminateAfterMs: 45_000,
          everyMs: 30_000,
          firstRevision: 2,
          maxRequests: 16,
        },
      ],
    });

    expect(traffic.terminatedAt).toBeDefined();
    expect(traffic.granted).toBeDefined();
    const { id: grantedId, at: grantedAt } = traffic.granted!;
    // Not before the holder was gone, and within two check periods of it.
    expect(grantedAt).toBeGreaterThanOrEqual(traffic.terminatedAt!);
    expect(grantedAt - traffic.terminatedAt!).toBeLessThanOrEqual(2 * HOLDER_CHECK_MS);
    // Requests really kept coming, at most 30 s apart, from before the termination up to the grant.
    const asked = traffic.requests.filter((r) => r.at <= grantedAt);
    expect(asked[0]!.at).toBeLessThan(traffic.terminatedAt!);
    // (30 s of workflow time plus the few real milliseconds each step takes)
    asked.slice(1).forEach((r, i) => expect(r.at - asked[i]!.at).toBeLessThan(31_000));
    expect(grantedAt - asked.at(-1)!.at).toBeLessThan(31_000);
    // The Stage went to the newest request; every earlier one was superseded by its successor.
    expect(grantedId).toBe(asked.at(-1)!.id);
    asked.slice(0, -1).forEach((r, i) => {
      expect(traffic.outcomes[r.id]).toMatchObject({
        outcome: 'superseded',
        by: asked[i + 1]!.id,
        notices: [expect.any(String)],
      });
    });
  });
});

test('supersede rules: the newest revision wins, on equal revisions the later request wins, older requests are told', async () => {
  const { stage, lockId } = newStage();
  await withActivities(async () => {
    const holder = await startRequester(stage, 'holder', 10, true);
    await waitForLock(lockId, holderIs(holder.workflowId), 'the holder granted');

    const a = await startRequester(stage, 'a', 5);
    await waitForLock(lockId, waitingAre(a.workflowId), 'a waits');
    const b = await startRequester(stage, 'b', 7);
    await waitForLock(lockId, waitingAre(b.workflowId), 'b (newer) replaces a');
    const c = await startRequester(stage, 'c', 6);
    const cResult = await c.result();
    const d = await startRequester(stage, 'd', 7);
    await waitForLock(lockId, waitingAre(d.workflowId), 'd (same revision, later) replaces b');

    expect(await a.result()).toEqual(
      expect.objectContaining({
        outcome: 'superseded',
        by: b.workflowId,
        byRevision: 7,
        notices: [`superseded by ${b.workflowId} (7)`],
      }),
    );
    expect(cResult).toEqual(
      expect.objectContaining({
        outcome: 'superseded',
        by: b.workflowId,
        byRevision: 7,
        notices: [`superseded by ${b.workflowId} (7)`],
      }),
    );
    expect(await b.result()).toEqual(
      expect.objectContaining({
        outcome: 'superseded',
        by: d.workflowId,
        byRevision: 7,
        notices: [`superseded by ${d.workflowId} (7)`],
      }),
    );

    // b asks again, as a waiting activation does now and then, after it was superseded (its ask was
    // on its way): it must not come back and supersede d with the same revision.
    await env.client.workflow
      .getHandle(lockId)
      .signal(requestLockSignal, { requester: b.workflowId, revision: 7, activation: b.workflowId });
    // The holder releases after that ask (signals reach the lock in order): d gets the Stage.
    await holder.signal(finishSignal);
    expect(await holder.result()).toEqual(expect.objectContaining({ outcome: 'granted', notices: ['granted'] }));
    expect(await d.result()).toEqual(expect.objectContaining({ outcome: 'granted', notices: ['granted'] }));
  });
});

test('asked as an Update, the lock answers at once: a free Stage granted, a busy one queued, an older request superseded', async () => {
  const { stage, lockId } = newStage();
  const { askStageLock } = createLockActivities(env.client, taskQueue);
  const request = (n: number) => ({ requester: `${stage}/r${n}`, revision: n, activation: `unit/a${n}` });
  await withActivities(async () => {
    // No lock runs yet: the Update starts it, and the Stage is granted in the answer.
    expect(await askStageLock(namespace, stage, request(1))).toEqual({ outcome: 'granted' });
    // Asking again (a retried activity) confirms it.
    expect(await askStageLock(namespace, stage, request(1))).toEqual({ outcome: 'granted' });
    expect(await askStageLock(namespace, stage, request(3))).toEqual({ outcome: 'queued' });
    expect(await askStageLock(namespace, stage, request(2))).toEqual({
      outcome: 'superseded',
      by: 'unit/a3',
      revision: 3,
    });
    const state = await env.client.workflow.getHandle(lockId).query(lockStateQuery);
    expect(state.holder?.requester).toBe(`${stage}/r1`);
    expect(state.waiting.map((w) => w.requester)).toEqual([`${stage}/r3`]);
  });
  await terminateAtRest(env.client.workflow.getHandle(lockId), 'test done');
});

test("a burst's newest, expected: an older request on a free Stage is held back and superseded once the newest asks", async () => {
  const { stage, lockId } = newStage();
  await withActivities(async () => {
    // The watcher saw the burst's newest (revision 9) and tells the lock before its workflow asks.
    await expectStageLock(env.client, taskQueue, namespace, stage, {
      requester: `${stage}/new`,
      revision: 9,
      activation: `${namespace}/new`,
    });
    // An older activation, started before the burst was seen whole, asks first: it is not granted.
    const old = await startRequester(stage, 'old', 3);
    const held = await waitForLock(lockId, waitingAre(old.workflowId), 'the older request queued');
    expect({ holder: held.holder, expected: held.expected?.requester }).toEqual({
      holder: undefined,
      expected: `${stage}/new`,
    });
    const newest = await startRequester(stage, 'new', 9);
    expect(await old.result()).toEqual(
      expect.objectContaining({
        outcome: 'superseded',
        by: newest.workflowId,
        byRevision: 9,
        notices: [`superseded by ${newest.workflowId} (9)`],
      }),
    );
    expect(await newest.result()).toEqual(expect.objectContaining({ outcome: 'granted', notices: ['granted'] }));
  });
});

test('an expected request that never asks holds an older one back only for EXPECT_MS: then the older one is granted', async () => {
  const { stage, lockId } = newStage();
  await withActivities(async () => {
    await expectStageLock(env.client, taskQueue, namespace, stage, {
      requester: `${stage}/never`,
      revision: 9,
      activation: `${namespace}/never`,
    });
    const expectedAt = await env.currentTimeMs();
    const old = await startRequester(stage, 'old', 3);
    await waitForLock(lockId, waitingAre(old.workflowId), 'the older request queued');
    // result() lets time skip: the lock's wait for the expected request runs out.
    const result = await old.result();
    expect(result).toEqual(expect.objectContaining({ outcome: 'granted', notices: ['granted'] }));
    expect(result.at - expectedAt).toBeGreaterThanOrEqual(EXPECT_MS);
    expect(result.at - expectedAt).toBeLessThan(EXPECT_MS + 5_000);
  });
});

test('an expectation that runs out while the Stage is held costs the lock one timer, and the holder keeps the Stage', async () => {
  const { stage, lockId } = newStage();
  await withActivities(async () => {
    const holder = await startRequester(stage, 'holder', 1, true);
    await waitForLock(lockId, holderIs(holder.workflowId), 'the holder granted');
    // Told while the Stage is held; the newest never asks (deleted before it started, say).
    await expectStageLock(env.client, taskQueue, namespace, stage, {
      requester: `${stage}/never`,
      revision: 9,
      activation: `${namespace}/never`,
    });
    await waitForLock(lockId, (s) => s.expected?.requester === `${stage}/never`, 'the lock expects it');
    await env.sleep(EXPECT_MS + 10_000); // well before the holder check (HOLDER_CHECK_MS)
    const state = await waitForLock(lockId, (s) => s.expected === undefined, 'the expectation forgotten');
    expect(state.holder?.requester).toBe(holder.workflowId);
    // A lapsed expectation once set a 1 ms timer on every turn of the loop until the release.
    const timers = ((await env.client.workflow.getHandle(lockId).fetchHistory()).events ?? []).filter(
      (e) => e.eventType === events.EVENT_TYPE_TIMER_STARTED,
    ).length;
    expect(timers).toBeLessThanOrEqual(3);
    await holder.signal(finishSignal);
    expect(await holder.result()).toEqual(expect.objectContaining({ outcome: 'granted', notices: ['granted'] }));
  });
});

test('a lock run on a build from before the Update refuses it: the request goes as a signal, answered by one later', async () => {
  const { stage, lockId } = newStage();
  const { askStageLock } = createLockActivities(env.client, taskQueue);
  await withActivities(async () => {
    // A running workflow without the Update's handler stands in for the old lock run.
    const old = await env.client.workflow.start(lockRequester, {
      taskQueue,
      workflowId: lockId,
      args: [{ namespace, stage: `${stage}-other`, revision: 1, hold: true }],
    });
    await pollUntil(
      async () => (await old.query(requesterQuery))?.outcome,
      10_000,
      'the stand-in to hold its own Stage',
    );
    expect(
      await askStageLock(namespace, stage, { requester: `${stage}/r1`, revision: 1, activation: 'unit/a1' }),
    ).toEqual({ outcome: 'queued' });
    const signals = ((await old.fetchHistory()).events ?? []).filter(
      (e) => e.eventType === events.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
    );
    expect(signals.map((e) => e.workflowExecutionSignaledEventAttributes?.signalName)).toContain('requestLock');
    await old.signal(finishSignal);
    await old.result();
  });
  await terminateAtRest(
    env.client.workflow.getHandle(stageLockWorkflowId(namespace, `${stage}-other`)),
    'test done',
  ).catch(notFound);
});

test.each(['signal', 'update'] as const)(
  'the Stage is never granted to a requester whose workflow has closed (released by %s)',
  async (releaseBy) => {
    const { stage, lockId } = newStage();
    const checks: string[] = [];
    const real = createLockActivities(env.client, taskQueue);
    const isWorkflowOpen = (workflowId: string) => {
      checks.push(workflowId);
      return real.isWorkflowOpen(workflowId);
    };
    await withActivities(
      async () => {
        const holder = await startRequester(stage, 'holder', 1, true, releaseBy);
        await waitForLock(lockId, holderIs(holder.workflowId), 'the holder granted');
        const gone = await startRequester(stage, 'gone', 2);
        await waitForLock(lockId, waitingAre(gone.workflowId), 'a second requester waits');
        await terminateAtRest(gone, 'the activation was terminated while it waited');

        await holder.signal(finishSignal);
        // The grant cannot reach the closed requester: the lock drops it at once (no holder check
        // needed to take the Stage back) and, idle, finishes.
        await env.client.workflow.getHandle(lockId).result();
        expect(checks).toEqual([]);
        // By Update, the lock never signalled the closed requester: the releaser found it gone and
        // released for it.
        expect(await grantsSentByLock(lockId)).toEqual(
          releaseBy === 'update' ? [holder.workflowId] : [holder.workflowId, gone.workflowId],
        );
        // The next requester is served by a new lock run.
        const next = await startRequester(stage, 'next', 1);
        expect(await next.result()).toEqual(expect.objectContaining({ outcome: 'granted', notices: ['granted'] }));
      },
      { isWorkflowOpen },
    );
  },
);

test('a failing holder check is tried at most 5 times, does not end the lock, and a later check hands the Stage on', async () => {
  const { stage, lockId } = newStage();
  const attempts: number[] = [];
  const real = createLockActivities(env.client, taskQueue);
  // The first check fails on every attempt (Temporal unreachable, say); later ones work.
  const isWorkflowOpen = async (workflowId: string): Promise<boolean> => {
    attempts.push(Context.current().info.attempt);
    if (attempts.length <= 5) throw new Error('Temporal frontend unreachable');
    return real.isWorkflowOpen(workflowId);
  };
  await withActivities(
    async () => {
      const holder = await startRequester(stage, 'holder', 1, true);
      await waitForLock(lockId, holderIs(holder.workflowId), 'the holder granted');
      const waiter = await startRequester(stage, 'waiter', 2);
      await waitForLock(lockId, waitingAre(waiter.workflowId), 'a second requester waits');
      await terminateAtRest(holder, 'the activation was terminated while it held the Stage');
      const terminated = await env.currentTimeMs();

      const answer = await waiter.result();
      expect(answer).toEqual(expect.objectContaining({ outcome: 'granted', notices: ['granted'] }));
      // One check with its 5 attempts, given up; the next check (attempt 1 again) found the holder closed.
      expect(attempts.slice(0, 6)).toEqual([1, 2, 3, 4, 5, 1]);
      expect(answer.at - terminated).toBeGreaterThan(HOLDER_CHECK_MS);
      expect(answer.at - terminated).toBeLessThanOrEqual(2 * HOLDER_CHECK_MS + 30_000);
    },
    { isWorkflowOpen },
  );
});

test('continue-as-new keeps the holder and the waiter', async () => {
  const { stage, lockId } = newStage();
  await withActivities(async () => {
    // Started by the test with a small history limit (the test server never suggests
    // continue-as-new) and with a holder in its initial state, as a continued run is.
    const holderId = `${stage}/holder`;
    const lock = await env.client.workflow.start(stageLock, {
      taskQueue,
      workflowId: lockId,
      args: [{ holder: { requester: holderId, revision: 1, activation: holderId }, waiting: [] }, { historyLimit: 30 }],
    });
    // The holder asks (again, as far as the lock knows): the lock confirms.
    const holder = await startRequester(stage, 'holder', 1, true);
    await pollUntil(() => holder.query(requesterQuery), 10_000, 'the holder is told it holds the Stage', 50);
    await waitForQuietLock(lockId);

    // Each newer request supersedes the one before: a dozen events of history each. The lock is
    // watched through its history and the requesters, not queried (see waitForQuietLock).
    const waiters = [];
    for (let revision = 2; revision <= 7; revision++) {
      const waiter = await startRequester(stage, `waiter-${revision}`, revision);
      await waitForAsk(waiter);
      await waitForQuietLock(lockId);
      waiters.push(waiter);
    }
    const last = waiters.at(-1)!;
    const current = await env.client.workflow.getHandle(lockId).describe();
    expect(current.runId).not.toBe(lock.firstExecutionRunId);
    expect(current.status.name).toBe('RUNNING');
    // The first run continued as new (it did not finish idle and get restarted).
    const firstRun = await env.client.workflow.getHandle(lockId, lock.firstExecutionRunId).describe();
    expect(firstRun.status.name).toBe('CONTINUED_AS_NEW');
    // The new run kept the holder: with the lock quiet, the newest waiter has no answer yet.
    expect(await last.query(requesterQuery)).toBeUndefined();

    // And it kept the waiter: once the holder releases, the newest waiter gets the Stage.
    await holder.signal(finishSignal);
    expect(await holder.result()).toEqual(expect.objectContaining({ outcome: 'granted', notices: ['granted'] }));
    expect(await last.result()).toEqual(expect.objectContaining({ outcome: 'granted', notices: ['granted'] }));
    for (const [i, w] of waiters.slice(0, -1).entries()) {
      expect(await w.result()).toEqual(
        expect.objectContaining({ outcome: 'superseded', by: waiters[i + 1]!.workflowId }),
      );
    }
  });
});

// The release by Update. These tests wait by polling in real time, never on a result: nothing in
// them needs workflow time to pass.

/** A requester's answer, polled in real time. */
const answerOf = (requester: WorkflowHandle) =>
  pollUntil(
    async () => requester.query(requesterQuery).catch(() => undefined),
    10_000,
    `${requester.workflowId} answered`,
    20,
  );

test.each(['signal', 'update'] as const)(
  'idle, the lock lingers: the next request within IDLE_LINGER_MS is served by the same run; then it finishes (released by %s)',
  async (releaseBy) => {
    const { stage, lockId } = newStage();
    await withActivities(async () => {
      const lock = env.client.workflow.getHandle(lockId);
      const holder = await startRequester(stage, 'holder', 1, true, releaseBy);
      await waitForLock(lockId, holderIs(holder.workflowId), 'the holder granted');
      const { runId } = await lock.describe();
      await holder.signal(finishSignal);
      await waitForLock(lockId, (s) => !s.holder && s.waiting.length === 0, 'the lock idle');
      // Idle, it did not finish: no time passed (nothing here awaits a result, which lets time skip).
      expect((await lock.describe()).status.name).toBe('RUNNING');
      const next = await startRequester(stage, 'next', 2, true, releaseBy);
      await waitForLock(lockId, holderIs(next.workflowId), 'the next one granted');
      expect((await lock.describe()).runId).toBe(runId);
      await next.signal(finishSignal);
      // Awaiting the lock lets time skip past the linger: it finishes, nothing left to do.
      await lock.result();
      const history = (await lock.fetchHistory()).events ?? [];
      const timers = history
        .filter((e) => e.eventType === events.EVENT_TYPE_TIMER_STARTED)
        .map((e) => e.timerStartedEventAttributes?.startToFireTimeout?.seconds?.toString());
      expect(timers).toContain(String(IDLE_LINGER_MS / 1000));
    });
  },
);

test('released by Update, the lock names the next holder and the releaser tells it; released again, the lock answers the same', async () => {
  const { stage, lockId } = newStage();
  const { releaseStageLock } = createLockActivities(env.client, taskQueue);
  await withActivities(async () => {
    const holder = await startRequester(stage, 'holder', 1, true);
    await waitForLock(lockId, holderIs(holder.workflowId), 'the holder granted');
    const next = await startRequester(stage, 'next', 2, true);
    await waitForLock(lockId, waitingAre(next.workflowId), 'the next one waits');

    await releaseStageLock(namespace, stage, holder.workflowId);
    expect(await answerOf(next)).toEqual(expect.objectContaining({ outcome: 'granted' }));
    // The releaser's activity retried: the lock answers the same, the new holder keeps the Stage,
    // nobody else is queued or let in.
    const lock = env.client.workflow.getHandle(lockId);
    expect(await lock.executeUpdate(releaseLockUpdate, { args: [{ requester: holder.workflowId }] })).toEqual({
      granted: next.workflowId,
    });
    const state = await lock.query(lockStateQuery);
    expect({ holder: state.holder?.requester, waiting: state.waiting }).toEqual({
      holder: next.workflowId,
      waiting: [],
    });
    // The grant went from the releaser, not from the lock (two transfers fewer on the handoff).
    expect(await grantsSentByLock(lockId)).toEqual([holder.workflowId]);
    await Promise.all([terminateAtRest(holder, 'test done'), terminateAtRest(next, 'test done')]);
  });
  await terminateAtRest(env.client.workflow.getHandle(lockId), 'test done');
});

test('a releaser that did not hear the Update answer and releases by signal: the lock tells the new holder itself', async () => {
  const { stage, lockId } = newStage();
  await withActivities(async () => {
    const holder = await startRequester(stage, 'holder', 1, true);
    await waitForLock(lockId, holderIs(holder.workflowId), 'the holder granted');
    const next = await startRequester(stage, 'next', 2, true);
    await waitForLock(lockId, waitingAre(next.workflowId), 'the next one waits');
    const lock = env.client.workflow.getHandle(lockId);
    // Answered, but the answer lost on its way (the activity's wait ran out): nobody told the next.
    expect(await lock.executeUpdate(releaseLockUpdate, { args: [{ requester: holder.workflowId }] })).toEqual({
      granted: next.workflowId,
    });
    await lock.signal(releaseLockSignal, { requester: holder.workflowId });
    expect(await answerOf(next)).toEqual(expect.objectContaining({ outcome: 'granted' }));
    expect(await grantsSentByLock(lockId)).toEqual([holder.workflowId, next.workflowId]);
    await Promise.all([terminateAtRest(holder, 'test done'), terminateAtRest(next, 'test done')]);
  });
  await terminateAtRest(env.client.workflow.getHandle(lockId), 'test done');
});

test('a lock run on a build from before the release Update refuses it: the release fails at once, for the releaser to signal', async () => {
  const { stage, lockId } = newStage();
  const { releaseStageLock } = createLockActivities(env.client, taskQueue);
  await withActivities(async () => {
    // A running workflow without the Update's handler stands in for the old lock run.
    const old = await env.client.workflow.start(lockRequester, {
      taskQueue,
      workflowId: lockId,
      args: [{ namespace, stage: `${stage}-other`, revision: 1, hold: true }],
    });
    await answerOf(old);
    // Not retried: the workflow's release by signal (a command, stage-lock/client.ts) follows at once.
    await expect(releaseStageLock(namespace, stage, `${stage}/r1`)).rejects.toMatchObject({
      type: RELEASE_UNANSWERED,
      nonRetryable: true,
    });
    await terminateAtRest(old, 'test done');
  });
  await terminateAtRest(
    env.client.workflow.getHandle(stageLockWorkflowId(namespace, `${stage}-other`)),
    'test done',
  ).catch(notFound);
});

test('a continued lock still answers a releaser that retries: the hand-on is part of its state', async () => {
  const { stage, lockId } = newStage();
  await withActivities(async () => {
    // Started as a continued run is: the Stage was handed from `released` to `holder` by Update.
    const [released, holder] = [`${stage}/released`, `${stage}/holder`];
    const lock = await env.client.workflow.start(stageLock, {
      taskQueue,
      workflowId: lockId,
      args: [
        {
          holder: { requester: holder, revision: 2, activation: holder },
          waiting: [],
          handedOn: { by: released, to: holder },
        },
      ],
    });
    expect(await lock.executeUpdate(releaseLockUpdate, { args: [{ requester: released }] })).toEqual({
      granted: holder,
    });
  });
  await terminateAtRest(env.client.workflow.getHandle(lockId), 'test done').catch(notFound);
});
