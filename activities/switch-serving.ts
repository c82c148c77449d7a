/**
 * ADR-0012 step 9 as one local activity: the Stage's serving StageVersion changes hands. What is
 * given goes first (the new version's serving mark, in place of its in-activation mark, and the
 * active usage), then what is taken (the activation's usage), so that the serving version is never
 * unheld. The old version keeps its serving mark and starts to drain (the data plane may still send
 * it requests): the Stage controller lets it go once the Stage's drain has passed
 * (decisions/stage.ts servingMarks). One local activity, not several: each costs the workflow an
 * activation of its own.
 */
import type { CoreParts } from './parts.js';
import type { ActivationRef } from '../shared/activation.js';

export interface SwitchServingInput {
  ref: ActivationRef;
  stage: string;
  stageUid: string;
  /** The StageVersion that now serves. */
  target: string;
  /** The one that served before, when all the traffic left it: it starts to drain, marked serving until it has. */
  previous?: string;
  /** The one that served before, when a weight leaves it a share: it keeps (or gets) its serving mark. */
  stillServing?: string;
  /** Whose in-activation mark on the target is cleared (namespace/name of the activation). */
  holder: string;
  /** What the active usage pointed at when read under the Lease (null: there was none): moved without a read. */
  active?: string | null;
  /** StageVersion uids by name, as read: the Events of the switch regard them without a look-up. */
  uids?: Record<string, string>;
  /** StageVersion revisions by name, as read: the active usage is never moved onto an older one than it names. */
  revisions?: Record<string, number>;
  /** The activation usage's uid, as created: deleted without a read. */
  usageUid?: string;
}

/** The activities switchServing is made of: the real ones, or a test's fakes of them. */
type ServingParts = Pick<
  CoreParts,
  'checkStage' | 'markDraining' | 'markServing' | 'pointActiveUsage' | 'releaseActivationUsage' | 'serveInstead'
>;

export function switchServingActivities(parts: ServingParts) {
  return {
    /**
     * Safe to repeat: every part sets a value or removes what is still there. Nothing is written
     * for a Stage that is gone or being deleted: `stageLost` says why, and the workflow ends the
     * activation StageDeleted instead.
     */
    async switchServing(i: SwitchServingInput): Promise<{ stageLost?: string }> {
      const ns = i.ref.namespace;
      const lost = await parts.checkStage(ns, i.stage, i.stageUid);
      if (lost) return { stageLost: lost.message };
      // The version a weight leaves a share to is held by the active usage until it moves: its
      // mark is written first, so that no moment finds it neither marked nor in use.
      if (i.stillServing && i.stillServing !== i.target) await parts.markServing(ns, i.stillServing, i.stage);
      // The target's serving mark replaces its in-activation mark: held throughout by one or the other.
      const seen =
        i.active !== undefined
          ? { active: i.active, uids: i.uids ?? {}, ...(i.revisions ? { revisions: i.revisions } : {}) }
          : undefined;
      await Promise.all([
        parts.serveInstead(ns, i.target, i.stage, i.holder, i.revisions),
        parts.pointActiveUsage(ns, i.stage, i.stageUid, i.target, seen),
      ]);
      await Promise.all([
        i.previous && i.previous !== i.target ? parts.markDraining(ns, i.previous, i.stage) : undefined,
        parts.releaseActivationUsage(i.ref, i.usageUid),
      ]);
      return {};
    },
  };
}
