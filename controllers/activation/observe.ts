/**
 * What the activation controller reads: the activations as its informers cache them (slimmed to
 * CachedActivation), a burst's Stages and StageVersions, and Temporal's word on a workflow (its
 * latest run, the runs closed since the last sweep). Reads only; the pass decides (decide-pass.ts).
 */
import { WorkflowNotFoundError, type Client } from '@temporalio/client';
import type { CustomObjects } from '../../k8s/custom-objects.js';
import { NAMESPACE_LIMIT_REASON } from '../../decisions/fair-share.js';
import type { CachedActivation } from '../../shared/cached-activation.js';
import type { WatchedActivation } from '../../telemetry/metrics.js';
import { vectorActivation } from '../../workflows/activation/workflow.js';
import type { PassSnapshot } from './decide-pass.js';
import type { CachedStage } from './decide-object.js';

/**
 * What the controller keeps of an activation's status, in place (its informer and the uid cache
 * hold the same object): what CachedActivation declares. With 10,000 activations cached, steps and
 * conditions were most of the heap after managedFields, which KindCache drops (bench/shards.ts).
 */
export function slim(activation: CachedActivation): void {
  if (!activation.status) return;
  const { phase, reason, message, workflowId, requests, progression: progressionReport } = activation.status;
  const progression = progressionReport
    ? {
        weight: progressionReport.weight,
        ...(progressionReport.gate?.type ? { gate: { type: progressionReport.gate.type } } : {}),
      }
    : undefined;
  activation.status = Object.fromEntries(
    Object.entries({ phase, reason, message, workflowId, requests, progression }).filter(
      ([, value]) => value !== undefined,
    ),
  );
}

/** What the controller keeps of a Stage, in place: which one it is, and whether it is being deleted. */
export function slimStage(cached: CachedStage & { spec?: unknown; status?: unknown }): void {
  const { name, namespace, uid, resourceVersion, deletionTimestamp } = cached.metadata ?? {};
  cached.metadata = { name, namespace, uid, resourceVersion, ...(deletionTimestamp ? { deletionTimestamp } : {}) };
  if (cached.spec !== undefined) cached.spec = undefined;
  if (cached.status !== undefined) cached.status = undefined;
}

/** The namespace's cached activations, for a pass beginning now. */
export function snapshot(
  cache: Iterable<CachedActivation>,
  namespace: string,
  seenAt: number,
  options: { limit?: number; settleMs: number; quietMs: number },
): PassSnapshot {
  const activations = [...cache].filter((activation) => activation.metadata!.namespace === namespace);
  return {
    namespace,
    activations,
    seenAt,
    ...(options.limit ? { limit: options.limit } : {}),
    settleMs: options.settleMs,
    quietMs: options.quietMs,
  };
}

/** A burst's crowded Stages (those that exist, not being deleted) and the namespace's StageVersions. */
export async function readSupersession(
  objects: CustomObjects,
  namespace: string,
  crowded: readonly string[],
): Promise<NonNullable<PassSnapshot['supersession']>> {
  const [stages, stageVersions] = await Promise.all([
    Promise.all(crowded.map((stage) => objects.get('Stage', namespace, stage))),
    objects.list('StageVersion', namespace),
  ]);
  return {
    stages: new Set(
      stages.flatMap((stage) => (stage && !stage.metadata.deletionTimestamp ? [stage.metadata.name] : [])),
    ),
    stageVersions: new Map(
      stageVersions.map((sv) => [sv.metadata.name, { stage: sv.spec?.stage, revision: sv.spec?.revision }]),
    ),
  };
}

/** The workflow's latest run: its status, and whether it was a close-out run; undefined when Temporal has none. */
export async function latestRun(
  client: Client,
  workflowId: string,
): Promise<{ status: string; closeOut: boolean } | undefined> {
  try {
    const description = await client.workflow.getHandle(workflowId).describe();
    return { status: description.status.name, closeOut: description.memo?.closeOut === true };
  } catch (err) {
    if (err instanceof WorkflowNotFoundError) return undefined;
    throw err;
  }
}

/** The activation workflows that closed after `ms` (epoch), by one visibility query. */
export async function closedSince(client: Client, ms: number): Promise<Set<string>> {
  const ids = new Set<string>();
  const query = `WorkflowType = '${vectorActivation.name}' AND ExecutionStatus != 'Running' AND CloseTime > '${new Date(ms).toISOString()}'`;
  for await (const execution of client.workflow.list({ query })) ids.add(execution.workflowId);
  return ids;
}

/** What the metrics show of the cache: the Waiting activations, and the weight and gate of the progressing ones. */
export function* watched(cache: Iterable<CachedActivation>): Iterable<WatchedActivation> {
  for (const activation of cache) {
    if (!activation.spec?.stage) continue;
    const where = { namespace: activation.metadata!.namespace!, stage: activation.spec.stage };
    if (activation.status?.phase === 'Waiting' && activation.status.reason !== NAMESPACE_LIMIT_REASON) yield where;
    const report = activation.status?.progression;
    if (activation.status?.phase === 'InProgress' && report?.weight !== undefined)
      yield { ...where, weight: report.weight, ...(report.gate?.type ? { gate: report.gate.type } : {}) };
  }
}
