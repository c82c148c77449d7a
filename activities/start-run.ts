/**
 * ADR-0012 step 4 and the first InProgress as one local activity: the activation usage holds the
 * target and the in-activation mark protects it; only then, and only when the target is not being
 * deleted, is InProgress written (with its Events). One workflow round trip instead of two on
 * every activation's path, the handoff's above all.
 */
import type { CoreParts } from './parts.js';
import { ApplicationFailure } from '@temporalio/activity';
import type { ActivationReport } from '../decisions/activation.js';
import type { StatusOver } from '../decisions/status-write.js';
import type { ActivationRef } from '../shared/activation.js';

export interface StartRunInput {
  ref: ActivationRef;
  stage: string;
  /** The StageVersion being activated. */
  target: string;
  /** The in-activation mark's holder (namespace/name of the activation). */
  holder: string;
  /** The InProgress status of the first step to run, written once the target is held. */
  status: ActivationReport;
  /** What the workflow knows the object holds: the status is written over it, with no read. */
  over?: StatusOver;
}

/** The activities startRun is made of: the real ones, or a test's fakes of them. */
type StartParts = Pick<
  CoreParts,
  'addCloseOutFinalizer' | 'holdActivationUsage' | 'markStageVersion' | 'readActivation' | 'writeActivationStatus'
>;

export function startRunActivities(parts: StartParts) {
  return {
    /**
     * Safe to repeat: the hold, the mark and the close-out finalizer set what is already set, and a
     * status write that went through changes nothing and says nothing again. `terminating` (the
     * target is being deleted), `gone` (the VectorActivation is) or `refused` (why the activation
     * usage's name is someone else's): no status was written, and the finishing run takes the
     * finalizer away.
     */
    async startRun(
      i: StartRunInput,
    ): Promise<{ terminating: boolean; gone?: boolean; refused?: string; usageUid?: string }> {
      // Without `over` the status write's read goes beside the hold and the mark: one apiserver
      // round trip less before InProgress. While the workflow runs, only it writes the fields it
      // writes (the watcher answers in status.requests), so nothing is missed by reading a little earlier.
      const read = i.over ? undefined : parts.readActivation(i.ref);
      read?.catch(() => undefined); // awaited below, or not needed when the target is terminating
      // The finalizer before the first route change: a deletion from here on waits for the run's end.
      const kept = parts.addCloseOutFinalizer(i.ref);
      // A usage of the activation usage's name that is someone else's refuses the run (it is kept).
      const hold = parts.holdActivationUsage(i.ref, i.stage, i.target).then(
        (usageUid) => ({ usageUid }),
        (err: unknown) => {
          // The parts are wrapped (activities/parts.ts): a NameTakenError arrives as the
          // non-retryable failure activities/k8s-errors.ts makes of it.
          if (err instanceof ApplicationFailure && err.type === 'NameTaken') return { refused: err.message };
          throw err;
        },
      );
      const [usage, mark, held] = await Promise.all([
        hold,
        parts.markStageVersion(i.ref.namespace, i.target, i.holder),
        kept,
      ]);
      if (mark.terminating) return { terminating: true };
      if ('refused' in usage) return { terminating: false, refused: usage.refused };
      // Deleted (or being deleted) before its first step: nothing runs.
      if (!held) return { terminating: false, gone: true };
      await parts.writeActivationStatus(i.ref, i.status, i.over, read);
      return { terminating: false, ...(usage.usageUid ? { usageUid: usage.usageUid } : {}) };
    },
  };
}
