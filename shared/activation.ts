/**
 * The contract between the watcher, clients (Temporal UI/CLI, tests) and the activation workflow:
 * ids, signals, queries and the data they carry. Importable from workflow code and from Node code
 * alike. The Stage lock's own contract is stage-lock/contract.ts.
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

/**
 * The watcher saw the activation's Stage deleted (or being deleted): the Stage of that uid, so that
 * an activation of a new Stage of the same name ignores it. The workflow stops as for a cancel and
 * ends Cancelled, reason StageDeleted; it also finds this out by itself before every route write.
 */
export interface StageDeletion {
  namespace: string;
  stage: string;
  uid: string;
  /** Still there, being deleted (a finalizer holds it); else gone. */
  deleting?: boolean;
}
export const stageDeletedSignal = defineSignal<[StageDeletion]>('stageDeleted');

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
  steps: {
    name: string;
    phase: string;
    tasks: { registration: string; execution?: string; phase: string; message?: string }[];
  }[];
}
export const progressQuery = defineQuery<ActivationProgress>('progress');
