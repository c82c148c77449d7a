/**
 * The contract of a Stage's lock between the watcher, clients (Temporal UI/CLI, tests), the
 * activation workflow and the lock workflow: its id, signals, Updates, query and the data they
 * carry. Importable from workflow code and from Node code alike.
 *
 * The lock follows the current build (workflow.ts), so what is here must stay compatible across
 * builds: add optional fields, never rename or remove one (docs/scale.md, "Controller versions").
 */
import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';

export function stageLockWorkflowId(namespace: string, stage: string): string {
  return `stage-lock/${namespace}/${stage}`;
}

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
export type LockAnswer =
  { outcome: 'granted' } | { outcome: 'queued' } | { outcome: 'superseded'; by: string; revision: number };
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
 * for a while (until it asks, or EXPECT_MS in rules.ts), the lock grants no older request, so that
 * an older activation started a moment before the burst was seen whole waits to be superseded by
 * it instead of taking the free Stage and running first. It grants nothing and supersedes nobody
 * by itself.
 */
export const expectLockSignal = defineSignal<[LockRequest]>('expectLock');

/** What the lock keeps across continue-as-new and answers lockStateQuery with. */
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
