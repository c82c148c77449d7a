/**
 * The one small interface every executor type implements (Argo Rollouts' traffic routers are the
 * model: one folder per provider). The core worker validates an executor's configuration with its
 * zod schema before any route is touched; the executor's own worker runs apply/revert/verify.
 */
import type { z } from 'zod';
import type { k8s } from '../k8s/client.js';

export interface StageVersionInfo {
  name: string;
  revision: number;
  vector: string;
  backend?: { service: string; port?: number; subset?: string };
}

export interface TaskInput {
  /** The ActivationExecution this task reports through. */
  execution: { namespace: string; name: string };
  action: 'Apply' | 'Revert';
  /** Namespace of the Stage, its StageVersions and (by default) its routes. */
  namespace: string;
  stage: string;
  /** The StageVersion being activated. */
  stageVersion: StageVersionInfo;
  /** The StageVersion that was active before, if any: where a revert sends traffic back. */
  previousStageVersion?: StageVersionInfo;
  /** Every StageVersion of the Stage: an executor manages exactly the backends of these. */
  stageVersions: StageVersionInfo[];
  /** The registration's `spec`, validated by the executor's schema. */
  config: unknown;
  /** Name of the ActivationTaskRegistration this task runs, for messages. */
  registration?: string;
  /**
   * True only when the registration's `spec.allowCrossNamespaceFrom` lists `namespace`: then the
   * task may change routes outside the activation's namespace. The core decides; the executor
   * worker checks again before any write (executors act with cluster-wide rights).
   */
  crossNamespaceAllowed?: boolean;
}

export interface TaskResult {
  /** What changed, for the ActivationExecution's status: "HTTPRoute dev/shop rule 0: shop-v1 → shop-v2". */
  message: string;
}

export interface ExecutorContext {
  kubeConfig: k8s.KubeConfig;
  /** Aborted when Temporal cancels the task (timeout, activation cancelled). */
  signal: AbortSignal;
  heartbeat(details?: unknown): void;
}

export interface Executor<Config = unknown> {
  type: string;
  config: z.ZodType<Config>;
  /**
   * The namespaces of every object `route` would write for this config (route namespaces default to
   * the activation's). Pure: the core calls it to decide tenancy before any task runs.
   */
  routeNamespaces(config: Config, activationNamespace: string): string[];
  /** Points the managed routes at `from → to`; idempotent (a repeat finds nothing to change). */
  route(input: TaskInput, from: StageVersionInfo | undefined, to: StageVersionInfo, config: Config, ctx: ExecutorContext): Promise<TaskResult>;
  /** Reads the routes back and throws when they do not send traffic as `route` left them. */
  verify(input: TaskInput, from: StageVersionInfo | undefined, to: StageVersionInfo, config: Config, ctx: ExecutorContext): Promise<void>;
}

/** Renders `{stage}`, `{stageVersion}`, `{revision}` in a name pattern. */
export function renderPattern(pattern: string, stage: string, sv: StageVersionInfo): string {
  return pattern.replaceAll('{stage}', stage).replaceAll('{stageVersion}', sv.name).replaceAll('{revision}', String(sv.revision));
}

/** A configuration or route problem that no retry can fix. */
export class ExecutorError extends Error {
  constructor(message: string, readonly retryable = false) {
    super(message);
  }
}

/**
 * Replaces the managed entries of a list with `desired`, where the first managed entry stood (or
 * at the end), and keeps every other entry as it was and where it was.
 */
export function replaceManaged<T>(items: readonly T[], isManaged: (item: T) => boolean, desired: T[]): T[] {
  const first = items.findIndex(isManaged);
  const kept = items.filter((i) => !isManaged(i));
  const at = first < 0 ? kept.length : items.slice(0, first).filter((i) => !isManaged(i)).length;
  return [...kept.slice(0, at), ...desired, ...kept.slice(at)];
}

/**
 * Throws, before anything is written, when a managed rule sends traffic to a backend that is neither
 * a StageVersion's nor adopted: replacing the managed entries would leave it serving next to the new
 * version at its weight (two backends at full weight). Weight 0 entries (mirrors, sinks) are fine.
 */
export function refuseAmbiguous<T>(
  entries: readonly T[],
  isManaged: (entry: T) => boolean,
  weightOf: (entry: T) => number | undefined,
  problem: (entry: T) => string,
): void {
  const stray = entries.find((e) => !isManaged(e) && weightOf(e) !== 0);
  if (stray !== undefined) throw new ExecutorError(problem(stray));
}

/** Sorted distinct values: namespaces for routeNamespaces. */
export const distinct = (values: string[]): string[] => [...new Set(values)].sort();

/** Weights as percentages: all to `to`, or `weight` to `to` and the rest kept on `from`. */
export function split<T>(from: T | undefined, to: T, weight: number): { item: T; weight: number }[] {
  if (weight >= 100 || from === undefined) return [{ item: to, weight: 100 }];
  return [
    { item: to, weight },
    { item: from, weight: 100 - weight },
  ];
}
