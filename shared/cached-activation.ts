/**
 * A VectorActivation as the activation controller caches and decides on it
 * (controllers/activation/): its identity, its Stage and StageVersion, and the parts of its status
 * that say whether a workflow runs it and which requests were answered. Plain data: the pure plan
 * (controllers/activation/decide-pass.ts) reads it, and the informer slims every cached object down to it.
 */
import type { AnnotationRequest } from '../decisions/watcher.js';
import { activationWorkflowId, type ActivationRef } from './activation.js';

export interface CachedActivation {
  apiVersion?: string;
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    generation?: number;
    creationTimestamp?: Date | string;
    deletionTimestamp?: Date | string;
    annotations?: Record<string, string>;
    labels?: Record<string, string>;
    finalizers?: string[];
  };
  spec?: { stage?: string; stageVersion?: string };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    workflowId?: string;
    requests?: { action: AnnotationRequest; token: string; outcome: string; message: string; time: string }[];
    /** A progressive activation's weight and the type of the gate it waits at (the metrics read them). */
    progression?: { weight?: number; gate?: { type?: string } | null };
  };
}

export const refOf = (o: CachedActivation): ActivationRef => ({
  namespace: o.metadata!.namespace!,
  name: o.metadata!.name!,
  uid: o.metadata!.uid!,
});
export const workflowIdOf = (o: CachedActivation): string => activationWorkflowId(refOf(o));
export const stageOf = (o: CachedActivation): string => o.spec?.stage ?? '';
export const createdOf = (o: CachedActivation): string => new Date(o.metadata!.creationTimestamp ?? 0).toISOString();
