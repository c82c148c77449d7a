/**
 * The contract between the watcher, clients (Temporal UI/CLI, tests), the activation workflow and
 * the per-Stage lock workflow: ids, signals, queries and the data they carry. Importable from
 * workflow code and from Node code alike.
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

/** Identifies a VectorActivation; its spec is immutable, so the workflow reads it once. */
export interface ActivationRef {
  namespace: string;
  name: string;
  uid: string;
}

/** Readable and unique per object: a VectorActivation re-created under the same name gets a new one. */
export function activationWorkflowId(ref: ActivationRef): string {
  return `vectoractivation/${ref.namespace}/${ref.name}/${ref.uid}`;
}

/** Who holds a Stage's Lease and marks a StageVersion: the activation, as people read it. */
export const holderOf = (ref: Pick<ActivationRef, 'namespace' | 'name'>) => `${ref.namespace}/${ref.name}`;

export function stageLockWorkflowId(namespace: string, stage: string): string {
  return `stage-lock/${namespace}/${stage}`;
}

/** Annotations a kubectl user sets to act on an activation; the watcher relays them as Updates. */
export const ANNOTATION_CANCEL = 'konfidence.cloud/cancel';
export const ANNOTATION_RETRY = 'konfidence.cloud/retry';
/**
 * A progressive activation's requests. Their value is the writer's user name, then a space and
 * anything that makes the request new (the admission policy refuses any other value, so the
 * status says truly who asked).
 */
export const ANNOTATION_APPROVE = 'konfidence.cloud/approve';
export const ANNOTATION_PROMOTE = 'konfidence.cloud/promote';
export const ANNOTATION_ABORT = 'konfidence.cloud/abort';

/**
 * Requests carry a token so that a relayed annotation (or a repeated CLI call) acts once: the
 * workflow ignores a token it has seen. Without a token every signal acts.
 */
export interface ActionRequest {
  token?: string;
  reason?: string;
  /** The VectorActivation was deleted: stop, and close without waiting for a retry. */
  deleted?: boolean;
  /** Who asks (approve, promote, abort): the CLI's or the annotation's user, or the caller's own name. */
  by?: string;
}

/** What an accepted cancel or retry Update answers; a refused one fails with the reason. */
export interface RequestResult {
  outcome: 'Accepted';
  message: string;
}

/**
 * Stops an activation: a waiting one leaves the queue, a running one cancels its executions.
 * Prefer the Update: it answers (accepted, or refused with the reason); the signal cannot.
 */
export const cancelUpdate = defineUpdate<RequestResult, [ActionRequest]>('cancel');
export const cancelSignal = defineSignal<[ActionRequest]>('cancel');
/** Runs a Failed or Cancelled activation again, from its first unfinished step. */
export const retryUpdate = defineUpdate<RequestResult, [ActionRequest]>('retry');
export const retrySignal = defineSignal<[ActionRequest]>('retry');

/** Ends a pause, an approval or an inconclusive analysis of a progressive activation: the next step runs. */
export const approveUpdate = defineUpdate<RequestResult, [ActionRequest]>('approve');
export const approveSignal = defineSignal<[ActionRequest]>('approve');
/** Skips every remaining step and gate of a progressive activation: the switch to 100 % runs now. */
export const promoteUpdate = defineUpdate<RequestResult, [ActionRequest]>('promote');
export const promoteSignal = defineSignal<[ActionRequest]>('promote');
/** Puts a progressive activation's traffic back as recorded before it (ramped if the plan says so) and fails it. */
export const abortUpdate = defineUpdate<RequestResult, [ActionRequest]>('abort');
export const abortSignal = defineSignal<[ActionRequest]>('abort');

export interface ActivationProgress {
  phase: string;
  reason?: string;
  message?: string;
  attempt: number;
  steps: { name: string; phase: string; tasks: { registration: string; execution?: string; phase: string; message?: string }[] }[];
}
export const progressQuery = defineQuery<ActivationProgress>('progress');

// --- per-Stage lock -------------------------------------------------------------------------

export interface LockRequest {
  /** Workflow id of the requesting activation. */
  requester: string;
  /** Revision of the StageVersion it activates: a newer waiting request supersedes older ones. */
  revision: number;
  /** namespace/name of the VectorActivation, for people reading the lock's state. */
  activation: string;
}

export const requestLockSignal = defineSignal<[LockRequest]>('requestLock');

/** The failure type of a Lease another live holder has: the activation says so, then waits. */
export const STAGE_LEASE_HELD = 'StageLeaseHeld';

/** The lock's answer to a request made as an Update: a free Stage is granted in it. */
export type LockAnswer = { outcome: 'granted' } | { outcome: 'queued' } | { outcome: 'superseded'; by: string; revision: number };
/**
 * The request as an Update (with start): answered at once, so that an activation finding its Stage
 * free waits for no signal. A lock run on a build from before it refuses it; ask by signal then.
 */
export const requestLockUpdate = defineUpdate<LockAnswer, [LockRequest]>('requestLock');
/** Sent by the holder when done, or by a waiting requester that gives up. */
export const releaseLockSignal = defineSignal<[{ requester: string }]>('releaseLock');
/** The lock's answer to a release made as an Update: whom it granted the Stage to, to be told by the releaser. */
export interface ReleaseAnswer {
  /** Workflow id of the new holder, granted the Stage by this release. */
  granted?: string;
}
/**
 * The release as an Update: the releaser tells the new holder itself, by a signal straight from
 * the client, instead of the lock by a signal of its own (two transfers through the server fewer
 * on the handoff's path). The answer comes once the grant is in the lock's history, so
 * nobody is told of a grant the lock could forget. A lock run on a build from before it refuses it.
 */
export const releaseLockUpdate = defineUpdate<ReleaseAnswer, [{ requester: string }]>('release');
/** The failure type of a release the lock did not answer: the releaser releases by signal instead. */
export const RELEASE_UNANSWERED = 'ReleaseUnanswered';

/** Sent by the lock to the requester. */
export const lockGrantedSignal = defineSignal<[{ lock: string }]>('lockGranted');
export const lockSupersededSignal = defineSignal<[{ by: string; revision: number }]>('lockSuperseded');
/**
 * Sent by the lock to its holder when a request for a newer StageVersion comes to wait: a
 * progressive activation waiting at a gate then gives the Stage up (its traffic put back).
 */
export const lockNewerWaitingSignal = defineSignal<[{ by: string; revision: number }]>('lockNewerWaiting');

/**
 * Sent by the watcher when a burst's newest activation is about to start (decisions/supersede.ts):
 * for a while (until it asks, or EXPECT_MS), the lock grants no older request, so that an older
 * activation started a moment before the burst was seen whole waits to be superseded by it instead
 * of taking the free Stage and running first. It grants nothing and supersedes nobody by itself.
 */
export const expectLockSignal = defineSignal<[LockRequest]>('expectLock');

export interface LockState {
  holder?: LockRequest;
  waiting: LockRequest[];
  /** A newer request on its way (expectLockSignal), and until when (workflow time, ms) it is waited for. */
  expected?: LockRequest & { until: number };
  /**
   * The last release answered by Update (releaseLockUpdate): the releaser, and the holder it was told
   * to tell, while that one holds the Stage. Kept across continue-as-new: a releaser's retry asks again.
   */
  handedOn?: { by: string; to: string };
  /** The holder already told that a newer request waits (lockNewerWaitingSignal): told once. */
  toldNewer?: string;
}
export const lockStateQuery = defineQuery<LockState>('lockState');
