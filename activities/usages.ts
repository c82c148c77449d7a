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
import { writeThenSay } from './transition-events.js';

export function usageActivities({ objects, event, log }: CoreDeps) {
  return {
    /** Name of the StageVersion the Stage's "active" usage points at, if any. */
    async readActiveStageVersion(namespace: string, stage: string): Promise<string | undefined> {
      const usage = await objects.get('StageVersionUsage', namespace, activeUsageName(stage));
      return usage?.spec?.stageVersionRef?.name;
    },

    /** The "activation" usage that holds the StageVersion during the switch; never a predecessor's. */
    async holdActivationUsage(ref: ActivationRef, stage: string, stageVersion: string): Promise<void> {
      await objects.createOwned(
        {
          apiVersion: API_VERSION,
          kind: 'StageVersionUsage',
          metadata: {
            name: activationUsageName(ref.name),
            namespace: ref.namespace,
            labels: { [LABEL_USAGE]: 'activation', [LABEL_STAGE_NAME]: labelValue(stage) },
            ownerReferences: [ownerRef('VectorActivation', ref.name, ref.uid)],
          },
          spec: { reason: `activation ${ref.name} switches Stage ${stage} to it`, stageVersionRef: { name: stageVersion } },
        },
        ref.uid,
      );
    },

    /** Deletes this activation's usage; one of the same name that a successor owns stays. */
    async releaseActivationUsage(ref: ActivationRef): Promise<void> {
      const name = activationUsageName(ref.name);
      const usage = await objects.get('StageVersionUsage', ref.namespace, name);
      if (!usage || !usage.metadata.ownerReferences?.some((o) => o.uid === ref.uid)) return;
      await objects.delete('StageVersionUsage', ref.namespace, name, usage.metadata.uid);
    },

    /** Points the Stage's "active" usage at the StageVersion, creating it if needed. */
    async pointActiveUsage(namespace: string, stage: string, stageUid: string, stageVersion: string): Promise<void> {
      const spec = { reason: `serves the traffic of Stage ${stage}`, stageVersionRef: { name: stageVersion } };
      const current = await objects.get('StageVersionUsage', namespace, activeUsageName(stage));
      const from: string | undefined = current?.spec?.stageVersionRef?.name;
      // Said once the usage moved (activities/transition-events.ts): a retry after the write finds
      // it moved and says nothing.
      const moved = (was: string | undefined) => (options: RecordOptions) => sendEvents(event, namespace, activeChangedEvents(stage, stageVersion, was), { [`Stage/${stage}`]: stageUid }, log, options);
      const move = () => objects.mergeSpec('StageVersionUsage', namespace, activeUsageName(stage), { ...spec, stageVersionSelector: null });
      // It exists (every activation but a Stage's first): moved in one request, not a refused create first.
      if (current) {
        if (from !== stageVersion) await writeThenSay(move, moved(from));
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
      const was: string | undefined = object.spec?.stageVersionRef?.name;
      if (!created && was !== stageVersion) await writeThenSay(move, moved(was));
    },
  };
}
