/**
 * ADR-0012 steps 2–3 as one local activity: the Stage's Lease, then, under it, everything the
 * activation decides on. One workflow round trip instead of two on every activation's path, the
 * handoff's above all (each local activity costs the workflow an activation of its own).
 */
import type { CoreParts } from './parts.js';
import type { ResolvedPlan } from './plan.js';
import type { StageState } from './stage-versions.js';

export interface TakeStageInput {
  namespace: string;
  stage: string;
  stageUid: string;
  /** The Lease holder (namespace/name of the activation). */
  holder: string;
  stageVersion: string;
  executionPlan?: string;
  /** The activation's creationTimestamp, for the handoff metric. */
  created?: string;
  /** A close-out's take: it puts back what a run changed, which a Stage being deleted still allows. */
  puttingBack?: boolean;
}

export interface TakenStage {
  plan: ResolvedPlan;
  /** Read after the Lease was taken: never what was read while waiting. */
  stage: StageState;
  activeName?: string;
  /** Whether any CircuitBreaker guards the namespace (only then is admission asked). */
  guarded: boolean;
}

/** The activities takeStage is made of: the real ones, or a test's fakes of them. */
type StageParts = Pick<
  CoreParts,
  'acquireStageLease' | 'resolvePlan' | 'placeTasks' | 'describeStage' | 'readActiveStageVersion' | 'breakersApply'
>;

export function takeStageActivities(parts: StageParts) {
  return {
    /**
     * Safe to repeat: taking a Lease one holds renews it, the rest only reads. A failure after the
     * Lease was taken leaves it to the workflow's release, which clears it if it is ours.
     */
    async takeStage(i: TakeStageInput): Promise<TakenStage> {
      const read = () =>
        Promise.all([
          parts.resolvePlan(i.executionPlan, i.namespace),
          // The Stage the activation validated, by uid: one deleted meanwhile (or made anew) fails here.
          parts.describeStage(i.namespace, i.stage, i.stageVersion, {
            stageUid: i.stageUid,
            ...(i.puttingBack ? { puttingBack: true } : {}),
          }),
          parts.readActiveStageVersion(i.namespace, i.stage),
          parts.breakersApply(i.namespace),
        ]);
      // The reads go beside the Lease's write, once its read found it free, expired or ours: the
      // holder before let go only after its writes, so they see those (one round trip less). The
      // last such reads count; when the Lease is not taken they are dropped.
      let reads: ReturnType<typeof read> | undefined;
      await parts.acquireStageLease(
        i.namespace,
        i.stage,
        i.stageUid,
        i.holder,
        undefined,
        () => {
          reads = read();
          reads.catch(() => undefined);
        },
        i.created,
      );
      const [resolved, stage, activeName, guarded] = await (reads ?? read());
      // A Stage whose routes live in a Landscape sends its tasks to that landscape's workers.
      const plan = stage.landscape
        ? await parts.placeTasks(resolved, i.namespace, i.stage, stage.landscape, i.puttingBack === true)
        : resolved;
      return { plan, stage, ...(activeName ? { activeName } : {}), guarded };
    },
  };
}
