/**
 * What the Stage controller's caches keep of an object, and which of its changes cost a pass: of
 * the project's kinds, what decisions/stage.ts reads; of a route (a kind a built-in executor
 * manages), its spec, which is all controllers/stage-traffic.ts reads of it.
 */
import { createHash } from 'node:crypto';
import { ANNOTATION_ACTIVATED_BY, ANNOTATION_SERVING, type StageVersionResource } from '../api/index.js';
import { isReady } from '../decisions/stage.js';
import { isFinal } from '../decisions/activation.js';
import { builtInRouteKinds } from '../executors/index.js';
import { routeKey } from '../executors/routes.js';
import type { CustomObject } from '../k8s/custom-objects.js';

/** An object's API group, from its apiVersion ('' for the core group's `v1`). */
const groupOf = (o: CustomObject) => (o.apiVersion?.includes('/') ? o.apiVersion.split('/')[0]! : '');

/** Whether the object is a route of a kind a built-in executor manages. */
export function isRoute(o: CustomObject): boolean {
  return builtInRouteKinds.some((k) => k.kind === o.kind && k.group === groupOf(o));
}

/** A watched route's key, as executors/routes.ts keys a read of it. */
export const routeKeyOf = (o: CustomObject) => routeKey({ group: groupOf(o), kind: o.kind }, o.metadata.namespace!, o.metadata.name);

/**
 * What a pass reads of an object; for Stages and usages only what others write (not status), for a
 * route its spec (a digest: every route of the watched namespaces is remembered).
 */
export function relevantState(o: CustomObject): string {
  if (isRoute(o)) return createHash('sha1').update(JSON.stringify(o.spec ?? null)).digest('base64');
  const m = o.metadata;
  const meta = { generation: m.generation, deleting: m.deletionTimestamp, labels: m.labels, finalizers: m.finalizers };
  switch (o.kind) {
    case 'VectorActivation':
      // decisions/stage.ts reads an activation's phase only as unfinished or which final one: the
      // steps in between (held, Pending, Waiting, InProgress) cost no pass, nor does its close-out
      // finalizer coming and going.
      return JSON.stringify({ ...meta, finalizers: undefined, phase: isFinal(o.status?.phase) ? o.status.phase : 'unfinished' });
    case 'StageVersion':
      // The marks decide cleanup and protection; metadata changes leave the generation as it is.
      return JSON.stringify({
        ...meta,
        ready: isReady(o as unknown as StageVersionResource),
        serving: m.annotations?.[ANNOTATION_SERVING],
        activatedBy: m.annotations?.[ANNOTATION_ACTIVATED_BY],
      });
    default:
      return JSON.stringify(meta);
  }
}

/**
 * What the caches keep of an activation and of a route (of the other kinds, all but
 * managedFields): what decisions/stage.ts, stage-traffic.ts, relevantState and the event-lag metric
 * read. 10,000 activations' steps, conditions and annotations (kubectl's last-applied copy of the
 * whole object) would be most of the memory; a route's status (a Gateway's conditions per parent)
 * and annotations are not read.
 */
export function slim(o: CustomObject): void {
  if (isRoute(o)) {
    const { name, namespace, uid, resourceVersion } = o.metadata;
    o.metadata = { name, namespace, uid, resourceVersion };
    if (o.status !== undefined) o.status = undefined;
    return;
  }
  if (o.kind !== 'VectorActivation') return;
  const { name, namespace, uid, resourceVersion, generation, creationTimestamp, deletionTimestamp, labels, finalizers } = o.metadata;
  o.metadata = { name, namespace, uid, resourceVersion, generation, creationTimestamp, deletionTimestamp, labels, finalizers };
  // The plan names the routes its traffic goes through (controllers/stage-traffic.ts).
  o.spec = { stage: o.spec?.stage, stageVersion: o.spec?.stageVersion, ...(o.spec?.executionPlan ? { executionPlan: o.spec.executionPlan } : {}) };
  if (o.status) o.status = { phase: o.status.phase, message: o.status.message };
}
