/** Activities around the per-Stage lock workflow that a workflow cannot do itself. */
import { ApplicationFailure } from '@temporalio/activity';
import {
  WithStartWorkflowOperation,
  WorkflowNotFoundError,
  WorkflowUpdateFailedError,
  type Client,
} from '@temporalio/client';
import {
  expectLockSignal,
  lockGrantedSignal,
  RELEASE_UNANSWERED,
  releaseLockSignal,
  releaseLockUpdate,
  requestLockSignal,
  requestLockUpdate,
  stageLockWorkflowId,
  type LockAnswer,
  type LockRequest,
  type ReleaseAnswer,
} from './contract.js';

/** How long an ask waits for the lock's answer before it goes by signal instead. */
const ANSWER_WITHIN_MS = 10_000;
/**
 * The same for a release, much shorter: the answer only saves the lock a signal round trip (it comes
 * in about 20 ms). An Update can be held up where a signal is not: a signal that reaches the lock as
 * it finishes idle fails that workflow task, and the Update in it is retried (seen taking over 2 s
 * in a burst); and a worker shutting down stops polling the lock's tasks while its last releases
 * still wait for them.
 */
const RELEASE_ANSWER_WITHIN_MS = 500;

const summary = (namespace: string, stage: string) => `Serializes the activations of Stage ${namespace}/${stage}`;

/**
 * Tells the Stage's lock (starting it if none runs) that `request` is on its way: older requests
 * wait for it a while instead of being granted (expectLockSignal). The watcher's, for a burst's newest.
 */
export function expectStageLock(
  client: Client,
  taskQueue: string,
  namespace: string,
  stage: string,
  request: LockRequest,
): Promise<void> {
  return signalLock(client, taskQueue, namespace, stage, expectLockSignal, request);
}

/** Sends the Stage's lock `signal` with `request`, starting the lock workflow if none runs. */
async function signalLock(
  client: Client,
  taskQueue: string,
  namespace: string,
  stage: string,
  signal: typeof requestLockSignal,
  request: LockRequest,
): Promise<void> {
  await client.workflow.signalWithStart('stageLock', {
    workflowId: stageLockWorkflowId(namespace, stage),
    taskQueue,
    args: [],
    signal,
    signalArgs: [request],
    staticSummary: summary(namespace, stage),
  });
}

export function createLockActivities(client: Client, taskQueue: string) {
  /** Queues the request at the Stage's lock, starting the lock workflow if none runs. */
  const requestStageLock = (namespace: string, stage: string, request: LockRequest) =>
    signalLock(client, taskQueue, namespace, stage, requestLockSignal, request);

  return {
    requestStageLock,

    /**
     * Asks the Stage's lock (starting it if none runs) and returns its answer: granted at once when
     * the Stage is free. Safe to repeat: the holder asking again is told it holds the Stage.
     */
    async askStageLock(
      namespace: string,
      stage: string,
      request: LockRequest,
      answerWithinMs = ANSWER_WITHIN_MS,
    ): Promise<LockAnswer> {
      const workflowId = stageLockWorkflowId(namespace, stage);
      const deadline = AbortSignal.timeout(answerWithinMs);
      try {
        return await answeredBy(client, deadline, () =>
          client.workflow.executeUpdateWithStart(requestLockUpdate, {
            args: [request],
            startWorkflowOperation: new WithStartWorkflowOperation('stageLock', {
              workflowId,
              taskQueue,
              args: [],
              workflowIdConflictPolicy: 'USE_EXISTING',
              staticSummary: summary(namespace, stage),
            }),
          }),
        );
      } catch (err) {
        // Our handler never fails: a lock run on a build from before the Update refused it. And a
        // lock whose worker does not answer in time (down, backlogged) must not fail the ask: the
        // server takes a signal without it. Either way the answer comes as a signal (a grant the
        // late Update gave is confirmed by the signal's request, the holder asking again).
        if (!(err instanceof WorkflowUpdateFailedError) && !deadline.aborted) throw err;
        await requestStageLock(namespace, stage, request);
        return { outcome: 'queued' };
      }
    },

    /**
     * Gives the Stage back to its lock and tells whom the lock granted it to next, straight from
     * here (releaseLockUpdate). No lock workflow: nothing is held. Safe to repeat: asked again, the
     * lock answers the same, and a second grant signal changes nothing. Not answered (a lock from
     * before the Update refuses it, one whose worker does not answer in time, a server that turns
     * the Update away): fails with RELEASE_UNANSWERED, not retried, and the caller releases by
     * signal, which is always safe; the lock then tells the next holder itself, also when the Update
     * went through unheard. From a workflow that signal is a command the server delivers, with none
     * of this client's retries on the way (a client signal right after a refused Update was seen
     * taking 1.9 s where a signal without them took 13 ms).
     */
    async releaseStageLock(
      namespace: string,
      stage: string,
      requester: string,
      answerWithinMs = RELEASE_ANSWER_WITHIN_MS,
    ): Promise<void> {
      const lock = client.workflow.getHandle(stageLockWorkflowId(namespace, stage));
      const deadline = AbortSignal.timeout(answerWithinMs);
      let answer: ReleaseAnswer;
      try {
        answer = await answeredBy(client, deadline, () =>
          lock.executeUpdate(releaseLockUpdate, { args: [{ requester }] }),
        );
      } catch (err) {
        if (err instanceof WorkflowNotFoundError) return;
        throw ApplicationFailure.nonRetryable(
          `the Stage's lock did not answer the release: ${(err as Error).message}; release by signal`,
          RELEASE_UNANSWERED,
        );
      }
      if (!answer.granted) return;
      try {
        await client.workflow.getHandle(answer.granted).signal(lockGrantedSignal, { lock: lock.workflowId });
      } catch (err) {
        if (!(err instanceof WorkflowNotFoundError)) throw err;
        // The new holder's workflow is gone: the Stage must not stay granted to it.
        await ignoreNotFound(lock.signal(releaseLockSignal, { requester: answer.granted }));
      }
    },

    /**
     * Whether the workflow (its latest run) still runs: false when it closed or is unknown. Other
     * errors throw; the lock retries a few times and otherwise checks again at its next period.
     */
    async isWorkflowOpen(workflowId: string): Promise<boolean> {
      try {
        const description = await client.workflow.getHandle(workflowId).describe();
        return description.status.name === 'RUNNING';
      } catch (err) {
        if ((err as Error).name === 'WorkflowNotFoundError') return false;
        throw err;
      }
    },
  };
}

/**
 * An Update's answer, or a rejection once `deadline` aborts. The abort cancels the request, but it
 * does not reach an Update the client is retrying (a release was seen waiting 2 s past a 500 ms
 * deadline): the wait ends at the deadline whatever the request does, and its late outcome is dropped.
 */
async function answeredBy<T>(client: Client, deadline: AbortSignal, update: () => Promise<T>): Promise<T> {
  const late = new Promise<never>((_, reject) =>
    deadline.addEventListener('abort', () => reject(new Error('no answer in time')), { once: true }),
  );
  const asked = client.withAbortSignal(deadline, update);
  late.catch(() => undefined);
  asked.catch(() => undefined);
  return Promise.race([asked, late]);
}

async function ignoreNotFound(sent: Promise<void>): Promise<void> {
  try {
    await sent;
  } catch (err) {
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
}

export type LockActivities = ReturnType<typeof createLockActivities>;
