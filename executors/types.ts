/**
 * The one small interface every executor type implements (Argo Rollouts' traffic routers are the
 * model: one folder per provider). The core worker validates an executor's configuration with its
 * zod schema before any route is touched; the executor's own worker runs apply/revert/verify.
 */
import type { z } from 'zod';
import type { k8s } from '../k8s/client.js';
import type { RouteRef, RuleRecord, TrafficAssignment } from '../api/activation-execution.js';
import type { StageVersionInfo } from '../api/stage-version.js';

/** A kind of routing object an executor writes (an HTTPRoute, a VirtualService): its API coordinates. */
export interface RouteKind {
  group: string;
  version: string;
  plural: string;
  kind: string;
}

// The domain types an executor sees, defined with the API's kinds.
export type { RouteRef, RuleRecord, StageVersionInfo, TrafficAssignment };

export interface TaskInput {
  /** The ActivationExecution this task reports through, and records what it found in. */
  execution: { namespace: string; name: string };
  action: 'Apply' | 'Revert';
  /** Namespace of the Stage, its StageVersions and (by default) its routes. */
  namespace: string;
  stage: string;
  /** The StageVersion being activated. */
  stageVersion: StageVersionInfo;
  /** Apply: the traffic every managed rule holds afterwards, StageVersion → percent (sums to 100). */
  assignment?: TrafficAssignment;
  /** Revert: the Apply ActivationExecution whose record (what it found) is put back. */
  revertOf?: string;
  /**
   * A landscape's task, whose worker cannot read the control plane. Revert: the record of
   * `revertOf`, as the core read it. Apply: true once the core wrote the record the worker
   * observed (observeTask), so the worker may change the routes.
   */
  record?: { rules: RuleRecord[]; assignment?: TrafficAssignment };
  recorded?: boolean;
  /**
   * Revert: put back only the rules that still hold what the Apply execution assigned (a close-out,
   * after which another activation may have moved them).
   */
  unmovedOnly?: boolean;
  /** With unmovedOnly: the other assignments of the activation (a progression's rounds) a rule may still hold. */
  unmovedAlso?: TrafficAssignment[];
  /** Apply on a retry: the same task's execution in an earlier attempt, whose record it may keep. */
  earlier?: string;
  /**
   * The StageVersion active when the activation started. A task with neither an assignment nor a
   * record to put back (a workflow of a build that moved traffic instead) goes back to it.
   */
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
  /** What changed, for the ActivationExecution's status: "HTTPRoute dev/shop rule 0: shop-v1:100 → shop-v2:10+shop-v1:90". */
  message: string;
}

export interface ExecutorContext {
  kubeConfig: k8s.KubeConfig;
  /** Aborted when Temporal cancels the task (timeout, activation cancelled). */
  signal: AbortSignal;
  heartbeat(details?: unknown): void;
  /**
   * Routes read once for several reads, by `Kind/namespace/name`: a Stage controller pass; a task's
   * observe, write and check (a write leaves the apiserver's answer here, a conflict drops it).
   */
  routes?: Map<string, Promise<unknown>>;
  /**
   * A route as a watch caches it (the Stage controller's informers), or undefined when the cache
   * cannot tell: the route is then read from the apiserver. A cache may be a moment behind: only
   * for reads whose reader hears of the route's next change (its watch) and reads again then.
   */
  cachedRoute?(kind: RouteKind, namespace: string, name: string): unknown;
}

export interface Executor<Config = unknown> {
  type: string;
  config: z.ZodType<Config>;
  /** The kinds of routing objects it reads and writes (the Stage controller caches them). */
  routeKinds: readonly RouteKind[];
  /**
   * The namespaces of every object `route` would write for this config (route namespaces default to
   * the activation's). Pure: the core calls it to decide tenancy before any task runs.
   */
  routeNamespaces(config: Config, activationNamespace: string): string[];
  /**
   * Every managed rule as it is now, its managed entries as found; writes nothing. Throws, as
   * `route` would, on a rule it cannot manage: what it returns is what `route` will change.
   * `lenient`: a report of what the rules hold (the Stage's traffic), which refuses nothing.
   */
  observe(
    input: TaskInput,
    config: Config,
    ctx: ExecutorContext,
    options?: { lenient?: boolean },
  ): Promise<RuleRecord[]>;
  /** Sets every managed rule to exactly `assignment`; idempotent (a repeat finds nothing to change). */
  route(input: TaskInput, assignment: TrafficAssignment, config: Config, ctx: ExecutorContext): Promise<TaskResult>;
  /**
   * Reads the routes (from `ctx.routes` when held there) and throws unless every managed rule holds
   * `assignment`; where the data plane can tell, it asks that too (and throws its refusal). Returns
   * what the task's message adds of it, if anything.
   */
  verify(input: TaskInput, assignment: TrafficAssignment, config: Config, ctx: ExecutorContext): Promise<string | void>;
  /**
   * Puts the managed entries of every recorded rule back exactly as recorded, and reads them back;
   * idempotent. Throws naming the route and rule it could not restore.
   */
  restore(input: TaskInput, record: RuleRecord[], config: Config, ctx: ExecutorContext): Promise<TaskResult>;
}

/** Renders `{stage}`, `{stageVersion}`, `{revision}` in a name pattern. */
export function renderPattern(pattern: string, stage: string, sv: StageVersionInfo): string {
  return pattern
    .replaceAll('{stage}', stage)
    .replaceAll('{stageVersion}', sv.name)
    .replaceAll('{revision}', String(sv.revision));
}

/** A configuration or route problem that no retry can fix. */
export class ExecutorError extends Error {
  /** `status`: the apiserver's HTTP status, when it refused. */
  constructor(
    message: string,
    readonly retryable = false,
    readonly status?: number,
  ) {
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
