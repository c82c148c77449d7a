/**
 * What the Stage controller's caches keep of an object, and which of its changes cost a pass: of
 * the project's kinds, what decisions/stage.ts reads; of a route (a kind a built-in executor
 * manages), its spec, which is all controllers/stage/traffic.ts reads of it.
 */
import { createHash } from 'node:crypto';
import { ANNOTATION_ACTIVATED_BY, ANNOTATION_SERVING, type StageVersionResource } from '../../api/index.js';
import { isReady } from '../../decisions/stage.js';
import { isFinal } from '../../decisions/activation.js';
import { builtInRouteKinds } from '../../executors/index.js';
import { routeKey } from '../../executors/routes.js';
import type { CustomObject } from '../../k8s/custom-objects.js';

/** An object's API group, from its apiVersion ('' for the core group's `v1`). */
const groupOf = (object: CustomObject) => (object.apiVersion?.includes('/') ? object.apiVersion.split('/')[0]! : '');

/** Whether the object is a route of a kind a built-in executor manages. */
export function isRoute(object: CustomObject): boolean {
  return builtInRouteKinds.some((routeKind) => routeKind.kind === object.kind && routeKind.group === groupOf(object));
}

/** A watched route's key, as executors/routes.ts keys a read of it. */
export const routeKeyOf = (object: CustomObject) =>
  routeKey({ group: groupOf(object), kind: object.kind }, object.metadata.namespace!, object.metadata.name);

/**
 * What a pass reads of an object; for Stages and usages only what others write (not status), for a
 * route its spec (a digest: every route of the watched namespaces is remembered).
 */
export function relevantState(object: CustomObject): string {
  if (isRoute(object))
    return createHash('sha1')
      .update(JSON.stringify(object.spec ?? null))
      .digest('base64');
  const { generation, deletionTimestamp: deleting, labels, finalizers } = object.metadata;
  const meta = { generation, deleting, labels, finalizers };
  switch (object.kind) {
    case 'VectorActivation':
      // decisions/stage.ts reads an activation's phase only as unfinished or which final one: the
      // steps in between (held, Pending, Waiting, InProgress) cost no pass, nor does its close-out
      // finalizer coming and going.
      return JSON.stringify({
        ...meta,
        finalizers: undefined,
        phase: isFinal(object.status?.phase) ? object.status.phase : 'unfinished',
      });
    case 'StageVersion':
      // The marks decide cleanup and protection; metadata changes leave the generation as it is.
      return JSON.stringify({
        ...meta,
        ready: isReady(object as unknown as StageVersionResource),
        serving: object.metadata.annotations?.[ANNOTATION_SERVING],
        activatedBy: object.metadata.annotations?.[ANNOTATION_ACTIVATED_BY],
      });
    default:
      return JSON.stringify(meta);
  }
}

/**
 * What the caches keep of an activation and of a route (of the other kinds, all but
 * managedFields): what decisions/stage.ts, traffic.ts, relevantState and the event-lag metric
 * read. 10,000 activations' steps, conditions and annotations (kubectl's last-applied copy of the
 * whole object) would be most of the memory; a route's status (a Gateway's conditions per parent)
 * and annotations are not read.
 */
export function slim(object: CustomObject): void {
  if (isRoute(object)) {
    const { name, namespace, uid, resourceVersion } = object.metadata;
    object.metadata = { name, namespace, uid, resourceVersion };
    if (object.status !== undefined) object.status = undefined;
    return;
  }
  if (object.kind !== 'VectorActivation') return;
  const {
    name,
    namespace,
    uid,
    resourceVersion,
    generation,
    creationTimestamp,
    deletionTimestamp,
    labels,
    finalizers,
  } = object.metadata;
  object.metadata = {
    name,
    namespace,
    uid,
    resourceVersion,
    generation,
    creationTimestamp,
    deletionTimestamp,
    labels,
    finalizers,
  };
  // The plan names the routes its traffic goes through (controllers/stage/traffic.ts).
  object.spec = {
    stage: object.spec?.stage,
    stageVersion: object.spec?.stageVersion,
    ...(object.spec?.executionPlan ? { executionPlan: object.spec.executionPlan } : {}),
  };
  if (object.status) object.status = { phase: object.status.phase, message: object.status.message };
}
