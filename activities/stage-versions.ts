/**
 * The Stage and its StageVersions as an activation sees them, and the two marks it sets on a
 * StageVersion: in activation (the admission policy then refuses changes and deletion) and serving.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { ANNOTATION_ACTIVATED_BY, ANNOTATION_DRAIN_SINCE, ANNOTATION_SERVING } from '../api/group.js';
import { stageVersionInfo, type StageVersionInfo } from '../api/stage-version.js';
import { apiStatus } from '../k8s/client.js';
import { getTyped, listTyped, type Typed } from '../k8s/typed.js';
import type { CoreDeps } from './deps.js';
import { jsonPointer } from '../shared/json-pointer.js';
import { activeUsageName } from '../shared/names.js';
import { mayMoveActive, stageLoss, type StageLoss, type StageSeen } from '../decisions/activation.js';

export interface StageState {
  stageUid: string;
  /** Oldest first. */
  stageVersions: StageVersionInfo[];
  target: StageVersionInfo;
  /** The Landscape the Stage's routes live in (spec.landscape); absent: the control plane's own cluster. */
  landscape?: string;
}

const seenOf = (st: Typed<'Stage'> | undefined): StageSeen | undefined =>
  st ? { uid: st.metadata.uid!, deleting: Boolean(st.metadata.deletionTimestamp) } : undefined;

/** A JSON patch path to one annotation. */
const annotationPath = (key: string) => jsonPointer('metadata', 'annotations', key);

/**
 * Whether StageVersion `other` is newer than `than` (decisions/activation.ts mayMoveActive), by
 * the revisions a switch read (`known`), else as they are now.
 */
export async function newerThan(
  objects: CoreDeps['objects'],
  namespace: string,
  other: string,
  than: string,
  known: Record<string, number> = {},
): Promise<boolean> {
  const revisionOf = async (name: string): Promise<number | undefined> =>
    known[name] ?? (await objects.get('StageVersion', namespace, name))?.spec?.revision;
  const [theirs, mine] = await Promise.all([revisionOf(other), revisionOf(than)]);
  return !mayMoveActive(mine, theirs);
}

export function stageVersionActivities({ objects }: CoreDeps) {
  /** Sets the serving mark (no deletion while serving) to `stage`, or clears it (null). */
  async function markServing(namespace: string, name: string, stage: string | null): Promise<void> {
    await objects.mergeMetadata('StageVersion', namespace, name, { annotations: { [ANNOTATION_SERVING]: stage } });
  }

  /** Clears the in-activation mark if it is still ours; a StageVersion deleted meanwhile is fine. */
  async function unmarkStageVersion(namespace: string, name: string, holder: string): Promise<void> {
    // The common case in one request: the mark is ours, and a JSON patch tests that as it removes it.
    const path = annotationPath(ANNOTATION_ACTIVATED_BY);
    try {
      await objects.jsonPatch('StageVersion', namespace, name, [
        { op: 'test', path, value: holder },
        { op: 'remove', path },
      ]);
      return;
    } catch (err) {
      // Not ours, or not there (a failed test), or refused: look, as below.
      if (apiStatus(err) !== 422) throw err;
    }
    const sv = await objects.get('StageVersion', namespace, name);
    if (sv?.metadata.annotations?.[ANNOTATION_ACTIVATED_BY] !== holder) return;
    await objects.mergeMetadata('StageVersion', namespace, name, { annotations: { [ANNOTATION_ACTIVATED_BY]: null } });
  }

  /** Whether the Stage's active usage names a newer StageVersion than `name` (by `known` revisions, else read). */
  async function servesNewer(
    namespace: string,
    name: string,
    stage: string,
    known?: Record<string, number>,
  ): Promise<boolean> {
    const active: string | undefined = (await objects.get('StageVersionUsage', namespace, activeUsageName(stage)))?.spec
      ?.stageVersionRef?.name;
    return active !== undefined && active !== name && (await newerThan(objects, namespace, active, name, known));
  }

  return {
    /**
     * The Stage's StageVersions; throws (non-retryable) when the Stage is missing or being deleted
     * (or, given the uid the activation validated, is another Stage of that name: StageDeleted),
     * or when the StageVersion is missing. `puttingBack`: a close-out puts back what a run changed,
     * which a Stage being deleted still allows.
     */
    async describeStage(
      namespace: string,
      stage: string,
      stageVersion: string,
      o: { stageUid?: string; puttingBack?: boolean } = {},
    ): Promise<StageState> {
      const [st, all] = await Promise.all([
        getTyped(objects, 'Stage', namespace, stage),
        listTyped(objects, 'StageVersion', namespace),
      ]);
      const seen = seenOf(st);
      const lost = stageLoss(namespace, stage, seen && o.puttingBack ? { ...seen, deleting: false } : seen, o.stageUid);
      if (lost) throw ApplicationFailure.nonRetryable(lost.message, lost.reason);
      const stageVersions = all
        .filter((sv) => sv.spec.stage === stage)
        .map(stageVersionInfo)
        .sort((a, b) => a.revision - b.revision);
      const target = stageVersions.find((sv) => sv.name === stageVersion);
      if (!target) {
        const other = all.find((sv) => sv.metadata.name === stageVersion);
        throw ApplicationFailure.nonRetryable(
          other
            ? `StageVersion ${namespace}/${stageVersion} belongs to Stage ${other.spec.stage}, not ${stage}`
            : `StageVersion ${namespace}/${stageVersion} does not exist`,
          'StageVersionNotFound',
        );
      }
      const landscape = st!.spec.landscape;
      return { stageUid: st!.metadata.uid!, stageVersions, target, ...(landscape ? { landscape } : {}) };
    },

    /** Whether the Stage the activation validated (by uid) is gone or going: one read, before a route write. */
    async checkStage(namespace: string, stage: string, stageUid: string): Promise<StageLoss | undefined> {
      return stageLoss(namespace, stage, seenOf(await getTyped(objects, 'Stage', namespace, stage)), stageUid);
    },

    /**
     * Marks the StageVersion as in activation and reports whether it was already being deleted.
     * The object as marked tells: a delete before the mark shows in it, a delete after it is refused.
     */
    async markStageVersion(namespace: string, name: string, holder: string): Promise<{ terminating: boolean }> {
      const sv = await objects.mergeMetadataOf('StageVersion', namespace, name, {
        annotations: { [ANNOTATION_ACTIVATED_BY]: holder },
      });
      return { terminating: !sv || Boolean(sv.metadata.deletionTimestamp) };
    },

    markServing,

    /** A switch moved all the traffic off it: it drains from now, keeping its serving mark (the Stage controller lets it go). */
    async markDraining(namespace: string, name: string, stage: string): Promise<void> {
      await objects.mergeMetadata('StageVersion', namespace, name, {
        annotations: { [ANNOTATION_SERVING]: stage, [ANNOTATION_DRAIN_SINCE]: new Date().toISOString() },
      });
    },

    /** Clears the in-activation mark if it is still ours; a StageVersion deleted meanwhile is fine. */
    unmarkStageVersion,

    /**
     * The target of a switch starts serving and leaves activation in one request when the
     * in-activation mark is ours, as it is on every switch: the serving mark holds it from then on.
     * Otherwise the two marks are written one by one. `revisions`: the StageVersions' as the switch
     * read them, which spare the reads of a late repeat's check.
     */
    async serveInstead(
      namespace: string,
      name: string,
      stage: string,
      holder: string,
      revisions?: Record<string, number>,
    ): Promise<void> {
      const activatedBy = annotationPath(ANNOTATION_ACTIVATED_BY);
      try {
        await objects.jsonPatch('StageVersion', namespace, name, [
          { op: 'test', path: activatedBy, value: holder },
          { op: 'remove', path: activatedBy },
          { op: 'add', path: annotationPath(ANNOTATION_SERVING), value: stage },
        ]);
        return;
      } catch (err) {
        if (apiStatus(err) !== 422) throw err;
      }
      // The mark is not ours: a repeat of this switch (traded already), or a late one after a later
      // switch to a newer version, which must not leave this one marked serving (undeletable).
      if (await servesNewer(namespace, name, stage, revisions)) return unmarkStageVersion(namespace, name, holder);
      await markServing(namespace, name, stage);
      await unmarkStageVersion(namespace, name, holder);
    },
  };
}
