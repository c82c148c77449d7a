/**
 * Every activity's timeouts and retry policy, named, in one place: "steps with timeouts" is the
 * product's core, and a bound is easier to trust where all of them can be read together. Each
 * retry is bounded (an attempt count or a schedule-to-close timeout); an error no retry can fix is
 * thrown non-retryable by the activity itself and not retried at all. Workflow code (no I/O).
 */
import { ActivityCancellationType, type ActivityOptions, type LocalActivityOptions } from '@temporalio/workflow';

/**
 * Kubernetes bookkeeping (reads, creates, status writes) takes milliseconds: local activities run it
 * inside the workflow task instead of a round trip through a task queue each. About a minute and a
 * half of retries: an apiserver restart fits, a dead apiserver fails the activation instead of
 * wedging it.
 */
export const KUBERNETES_BOOKKEEPING: LocalActivityOptions = {
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: '3 minutes',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds', maximumAttempts: 25 },
};

/**
 * A routing task on its executor's worker: the registration's timeout bounds the whole execution,
 * retries included, and its heartbeat shows the worker still at it. Every execution reaches a final
 * state before the activation does (ADR-0012): a cancelled executor has stopped before the Stage is
 * handed to anyone else.
 */
export const executorTask = (task: {
  taskQueue: string;
  timeoutSeconds: number;
  heartbeatSeconds: number;
  summary: string;
  /** A landscape's queue: how long the task may wait for one of its workers to take it. */
  scheduleToStartSeconds?: number;
}): ActivityOptions => ({
  taskQueue: task.taskQueue,
  ...(task.scheduleToStartSeconds ? { scheduleToStartTimeout: `${task.scheduleToStartSeconds} seconds` } : {}),
  scheduleToCloseTimeout: `${task.timeoutSeconds} seconds`,
  startToCloseTimeout: `${task.timeoutSeconds} seconds`,
  heartbeatTimeout: `${task.heartbeatSeconds} seconds`,
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds' },
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  summary: task.summary,
});

/** Waiting for an outside controller's execution: within the registration's timeout, heartbeating. */
export const externalExecution = (wait: { timeoutSeconds: number; summary: string }): ActivityOptions => ({
  scheduleToCloseTimeout: `${wait.timeoutSeconds} seconds`,
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds' },
  cancellationType: ActivityCancellationType.WAIT_CANCELLATION_COMPLETED,
  summary: wait.summary,
});

/**
 * One analysis measurement (a Prometheus query, bounded by the activity at 10 s): what Prometheus
 * answers, or fails to, is the verdict's input, so a few attempts only for the worker's own hiccups.
 */
export const MEASUREMENT: LocalActivityOptions = {
  startToCloseTimeout: '20 seconds',
  retry: { initialInterval: '1 second', maximumAttempts: 3 },
  summary: 'measure (Prometheus query)',
};

/** An HTTP check: each call within its timeout, repeated `retries` times (a 4xx is not repeated). */
export const httpCheck = (timeoutSeconds: number, retries: number): LocalActivityOptions => ({
  startToCloseTimeout: `${timeoutSeconds} seconds`,
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds', maximumAttempts: retries + 1 },
  summary: 'HTTP check',
});

// --- the Stage's lock and Lease ------------------------------------------------------------------

/** Asking and giving back the Stage's lock: local activities on the handoff's path, ten attempts. */
export const stageLockCall = (summary: string): LocalActivityOptions => ({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '10 seconds', maximumAttempts: 10 },
  summary,
});

/** The lock checks that its holder still runs; a check that fails gives up after a few attempts and runs again next period. */
export const LOCK_HOLDER_CHECK: ActivityOptions = {
  startToCloseTimeout: '10 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '10 seconds', maximumAttempts: 5 },
  summary: 'check that the lock holder still runs',
};

/**
 * Taking the Stage's Lease waits, within bounded attempts, for a live foreign holder's Lease to
 * expire: at most `leaseWaitSeconds` (default LEASE_WAIT_SECONDS), then the activation fails naming
 * the holder.
 */
export const LEASE_WAIT_SECONDS = 180;
const LEASE_RETRY = { initialSeconds: 1, backoffCoefficient: 1.5, maximumSeconds: 10 };
/**
 * How many attempts the retries' waits fit in `seconds`: the bound that holds (a local activity's
 * schedule-to-close timeout is not what ends its retries here; its attempts are).
 */
export function leaseAttempts(seconds: number): number {
  let waited = 0;
  let interval = LEASE_RETRY.initialSeconds;
  let attempts = 1;
  while (waited + interval <= seconds) {
    waited += interval;
    attempts++;
    interval = Math.min(interval * LEASE_RETRY.backoffCoefficient, LEASE_RETRY.maximumSeconds);
  }
  return attempts;
}

const TAKE_STAGE_SUMMARY = "take the Stage's Lease, then read the Stage";
/** The first try to take the Stage alone: a Lease found held by another is said (Waiting) before it is waited for. */
export const TAKE_STAGE_ONCE: LocalActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 1 },
  summary: TAKE_STAGE_SUMMARY,
};
/** Then the wait for the Lease, for at most `seconds`. */
export const takeStageWaiting = (seconds: number): LocalActivityOptions => ({
  startToCloseTimeout: '30 seconds',
  scheduleToCloseTimeout: `${seconds} seconds`,
  retry: {
    initialInterval: `${LEASE_RETRY.initialSeconds} second`,
    backoffCoefficient: LEASE_RETRY.backoffCoefficient,
    maximumInterval: `${LEASE_RETRY.maximumSeconds} seconds`,
    maximumAttempts: leaseAttempts(seconds),
  },
  summary: TAKE_STAGE_SUMMARY,
});
/** The Lease taken for the length of a gate. */
export const RENEW_STAGE_LEASE: LocalActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '5 seconds', maximumAttempts: 10 },
  summary: "take the Stage's Lease for the length of a gate",
};
export const RELEASE_STAGE_LEASE: LocalActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '200 milliseconds', maximumInterval: '5 seconds', maximumAttempts: 10 },
};
/** Renewing the Lease while steps run: a long-running activity that heartbeats, twenty attempts. */
export const KEEP_STAGE_LEASE: ActivityOptions = {
  startToCloseTimeout: '30 days',
  heartbeatTimeout: '10 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '30 seconds', maximumAttempts: 20 },
  summary: "keep the Stage's Lease renewed",
};

/** The control-plane check `npm start` runs: five attempts. */
export const CONTROL_PLANE_CHECK: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 5 },
  summary: 'read the Kubernetes version and the served konfidence kinds',
};

/** A landscape report's core side (which rules, and the status write): a few attempts within a round. */
export const LANDSCAPE_REPORT_BOOKKEEPING: ActivityOptions = {
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumInterval: '5 seconds', maximumAttempts: 3 },
};
