/**
 * An activation's end as one local activity: the Stage's Lease and the in-activation mark are let
 * go, then the final status is written, so that whoever reads the final phase finds both free. One
 * workflow round trip instead of two on every activation's path (each local activity costs the
 * workflow an activation of its own).
 */
import type { CoreParts } from './parts.js';
import type { ActivationReport } from '../decisions/activation.js';
import type { StatusOver } from '../decisions/status-write.js';
import type { ActivationRef } from '../shared/activation.js';

export interface FinishRunInput {
  ref: ActivationRef;
  stage: string;
  /** The Lease holder and mark holder (namespace/name of the activation). */
  holder: string;
  /** Whether the activation took the Stage's Lease (then it is cleared if still ours). */
  lease: boolean;
  /** The StageVersion still marked as in this activation, if any. */
  marked?: string;
  /** The final status. */
  status: ActivationReport;
  /** What the workflow knows the object holds: the final status is written over it, with no read. */
  over?: StatusOver;
}

/** The activities finishRun is made of: the real ones, or a test's fakes of them. */
type FinishParts = Pick<
  CoreParts,
  'readActivation' | 'releaseStageLease' | 'unmarkStageVersion' | 'writeActivationStatus'
>;

export function finishRunActivities(parts: FinishParts) {
  return {
    /**
     * Safe to repeat: the Lease and the mark are cleared only while still ours; a repeated status
     * write says nothing new. False when the VectorActivation is gone or being deleted. (The
     * close-out finalizer goes after it, beside the lock's release: finishAndLetGo.)
     */
    async finishRun(i: FinishRunInput): Promise<boolean> {
      // Without `over` the object is read beside the letting go: the final status is one request
      // after them, not two. Only this workflow writes the fields it writes (the watcher answers in
      // status.requests, which the write leaves alone), so nothing is missed by reading a little earlier.
      const read = i.over ? undefined : parts.readActivation(i.ref);
      read?.catch(() => undefined); // awaited below; a rejection must not go unhandled meanwhile
      await Promise.all([
        i.lease ? parts.releaseStageLease(i.ref.namespace, i.stage, i.holder) : undefined,
        i.marked ? parts.unmarkStageVersion(i.ref.namespace, i.marked, i.holder) : undefined,
      ]);
      return parts.writeActivationStatus(i.ref, i.status, i.over, read);
    },
  };
}
