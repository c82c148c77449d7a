/**
 * The core worker's workflow work, from the Temporal SDK's counters on a role's /metrics: workflow
 * tasks and their cache hits by workflow type, local activities by activity type, and the tasks
 * whose workflow was no longer cached (each replays its history). Read when a window opens and when
 * it closes; the difference over the activations in it is the work one activation costs.
 */
import { metricSamples } from './prometheus-text.js';

const COUNTERS = {
  workflowTasks: 'temporal_workflow_task_execution_latency_count',
  localActivities: 'temporal_local_activity_execution_latency_count',
  cacheHits: 'temporal_sticky_cache_hit',
  cacheMisses: 'temporal_sticky_cache_miss',
} as const;
export type SdkCounter = keyof typeof COUNTERS;

/** Each counter's value by its type label (workflow or activity type; 'all' when it has none), summed over task queues. */
export type SdkCounts = Record<SdkCounter, Record<string, number>>;

const COUNTER_OF_NAME = new Map(
  Object.entries(COUNTERS).map(([counter, name]) => [name as string, counter as SdkCounter]),
);

/**
 * The counters in a role's /metrics text; undefined when it has no sample of the SDK's at all (its
 * exporter did not answer, and /metrics says so in a comment): counting from nothing would be wrong.
 */
export function sdkCounts(text: string): SdkCounts | undefined {
  const counts = Object.fromEntries(Object.keys(COUNTERS).map((k) => [k, {}])) as SdkCounts;
  let fromSdk = false;
  for (const { name, labels, value } of metricSamples(text)) {
    if (name.startsWith('temporal_')) fromSdk = true;
    const counter = COUNTER_OF_NAME.get(name);
    if (!counter || !Number.isFinite(value)) continue;
    const type = labels.activity_type ?? labels.workflow_type ?? 'all';
    counts[counter][type] = (counts[counter][type] ?? 0) + value;
  }
  return fromSdk ? counts : undefined;
}

/** What the window's activations cost each, to a tenth: the counts at its end less those at its start. */
export function countsPerActivation(start: SdkCounts, end: SdkCounts, activations: number): SdkCounts {
  if (!(activations > 0)) throw new RangeError(`no activations to divide by (${activations})`);
  const per = (counter: SdkCounter) =>
    Object.fromEntries(
      Object.entries(end[counter]).map(([type, value]) => [
        type,
        Math.round(((value - (start[counter][type] ?? 0)) / activations) * 10) / 10,
      ]),
    );
  return Object.fromEntries(Object.keys(COUNTERS).map((k) => [k, per(k as SdkCounter)])) as SdkCounts;
}

/** One line a person reads: each counter's total, then its types. */
export function describeCounts(counts: SdkCounts): string {
  const total = (values: Record<string, number>) =>
    Math.round(Object.values(values).reduce((sum, v) => sum + v, 0) * 10) / 10;
  const detail = (values: Record<string, number>) =>
    Object.keys(values).length > 1 || (Object.keys(values).length === 1 && !('all' in values))
      ? ` (${Object.entries(values)
          .map(([type, v]) => `${type} ${v}`)
          .join(', ')})`
      : '';
  return (Object.keys(COUNTERS) as SdkCounter[])
    .map((counter) => `${counter} ${total(counts[counter])}${detail(counts[counter])}`)
    .join('; ');
}
