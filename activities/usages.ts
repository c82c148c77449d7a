/**
 * The StageVersionUsages an activation manages (ADR-0013): its own "activation" usage (owner: the
 * VectorActivation) while it switches traffic, and the Stage's "active" usage (owner: the Stage).
 */
import { API_VERSION, LABEL_STAGE_NAME, LABEL_USAGE } from '../api/group.js';
import { activationUsageName, activeUsageName, labelValue } from '../shared/names.js';
import type { ActivationRef } from '../shared/activation.js';
import { activeChangedEvents } from '../decisions/events.js';
import { sendEvents, type RecordOptions } from '../k8s/events.js';
import { ownerRef, type CoreDeps } from './deps.js';
import { newerThan } from './stage-versions.js';
import { writeThenSay } from './transition-events.js';
import { apiStatus } from '../k8s/client.js';

export function usageActivities({ objects, event, log }: CoreDeps) {
  return {
    /** Name of the StageVersion the Stage's "active" usage points at, if any. */
    async readActiveStageVersion(namespace: string, stage: string): Promise<string | undefined> {
      const usage = await objects.get('StageVersionUsage', namespace, activeUsageName(stage));
      return usage?.spec?.stageVersionRef?.name;
    },

    /** The "activation" usage that holds the StageVersion during the switch; never a predecessor's. Its uid. */
    async holdActivationUsage(ref: ActivationRef, stage: string, stageVersion: string): Promise<string | undefined> {
      const { object } = await objects.createOwned(
        {
          apiVersion: API_VERSION,
          kind: 'StageVersionUsage',
          metadata: {
            name: activationUsageName(ref.name),
            namespace: ref.namespace,
            labels: { [LABEL_USAGE]: 'activation', [LABEL_STAGE_NAME]: labelValue(stage) },
            ownerReferences: [ownerRef('VectorActivation', ref.name, ref.uid)],
          },
          spec: {
            reason: `activation ${ref.name} switches Stage ${stage} to it`,
            stageVersionRef: { name: stageVersion },
          },
        },
        ref.uid,
      );
      return object.metadata.uid;
    },

    /**
     * Deletes this activation's usage; one of the same name that a successor owns stays. `uid`: the
     * usage as created by this activation, deleted in one request (a successor's has another uid).
     */
    async releaseActivationUsage(ref: ActivationRef, uid?: string): Promise<void> {
      const name = activationUsageName(ref.name);
      if (uid) return objects.delete('StageVersionUsage', ref.namespace, name, uid);
      const usage = await objects.get('StageVersionUsage', ref.namespace, name);
      if (!usage || !usage.metadata.ownerReferences?.some((o) => o.uid === ref.uid)) return;
      await objects.delete('StageVersionUsage', ref.namespace, name, usage.metadata.uid);
    },

    /**
     * Points the Stage's "active" usage at the StageVersion, creating it if needed. `seen`: what it
     * pointed at when read under the Lease (null: none), for a move in one request (a JSON patch
     * that tests it still does), and the StageVersions' uids for the Events; otherwise it is read.
     */
    async pointActiveUsage(
      namespace: string,
      stage: string,
      stageUid: string,
      stageVersion: string,
      seen?: { active: string | null; uids: Record<string, string>; revisions?: Record<string, number> },
    ): Promise<void> {
      const spec = { reason: `serves the traffic of Stage ${stage}`, stageVersionRef: { name: stageVersion } };
      const uids = {
        [`Stage/${stage}`]: stageUid,
        ...Object.fromEntries(Object.entries(seen?.uids ?? {}).map(([name, uid]) => [`StageVersion/${name}`, uid])),
      };
      // Said once the usage moved (activities/transition-events.ts): a retry after the write finds
      // it moved and says nothing.
      const moved = (was: string | undefined) => (options: RecordOptions) =>
        sendEvents(event, namespace, activeChangedEvents(stage, stageVersion, was), uids, log, options);
      /** Moves it from where it was found (not what was read under the Lease), unless that is newer. */
      const moveFrom = async (from: string | undefined) => {
        if (from === stageVersion) return;
        if (from && (await newerThan(objects, namespace, from, stageVersion, seen?.revisions))) {
          log(
            `the active usage of Stage ${namespace}/${stage} names ${from}, newer than ${stageVersion}: left as it is`,
            { level: 'warn', namespace },
          );
          return;
        }
        await writeThenSay(move, moved(from));
      };
      const move = () =>
        objects.mergeSpec('StageVersionUsage', namespace, activeUsageName(stage), {
          ...spec,
          stageVersionSelector: null,
        });
      if (seen?.active === stageVersion) return;
      if (typeof seen?.active === 'string') {
        const testedMove = (was: string) => async () => {
          const ops = [
            { op: 'test', path: '/spec/stageVersionRef/name', value: was },
            { op: 'add', path: '/spec/stageVersionRef', value: spec.stageVersionRef },
            { op: 'add', path: '/spec/reason', value: spec.reason },
          ];
          try {
            return await objects.jsonPatch('StageVersionUsage', namespace, activeUsageName(stage), ops);
          } catch (err) {
            if (apiStatus(err) === 422) return false; // it points elsewhere (or by selector) now: read below
            throw err;
          }
        };
        if (await writeThenSay(testedMove(seen.active), moved(seen.active), (w) => w)) return;
      }
      const current =
        seen?.active === null ? undefined : await objects.get('StageVersionUsage', namespace, activeUsageName(stage));
      const from: string | undefined = current?.spec?.stageVersionRef?.name;
      // It exists (every activation but a Stage's first): moved in one request, not a refused create first.
      if (current) {
        await moveFrom(from);
        return;
      }
      const create = () =>
        objects.create({
          apiVersion: API_VERSION,
          kind: 'StageVersionUsage',
          metadata: {
            name: activeUsageName(stage),
            namespace,
            labels: { [LABEL_USAGE]: 'active', [LABEL_STAGE_NAME]: labelValue(stage) },
            ownerReferences: [ownerRef('Stage', stage, stageUid)],
          },
          spec,
        });
      const { object, created } = await writeThenSay(create, moved(undefined), (r) => r.created);
      // Created meanwhile by another writer: moved from what it holds.
      if (!created) await moveFrom(object.spec?.stageVersionRef?.name);
    },
  };
}
