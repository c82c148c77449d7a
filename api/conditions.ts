/** Condition bookkeeping as apimachinery's meta.SetStatusCondition does it. */
import { kubeTime } from '../shared/format.js';
import type { Condition } from './meta.js';

export type ConditionInput = Pick<Condition, 'type' | 'status' | 'reason' | 'message'>;

/**
 * Returns the conditions with `next` set: lastTransitionTime changes only when the status does, so
 * rewriting the same status (a retried activity) changes nothing a watcher would notice.
 */
export function setCondition(
  conditions: readonly Condition[] | undefined,
  next: ConditionInput,
  observedGeneration: number | undefined,
  now: Date = new Date(),
): Condition[] {
  const list = [...(conditions ?? [])];
  const i = list.findIndex((c) => c.type === next.type);
  const previous = i >= 0 ? list[i] : undefined;
  const lastTransitionTime = previous && previous.status === next.status ? previous.lastTransitionTime : kubeTime(now);
  const condition: Condition = {
    ...next,
    lastTransitionTime,
    ...(observedGeneration !== undefined ? { observedGeneration } : {}),
  };
  if (i >= 0) list[i] = condition;
  else list.push(condition);
  return list;
}
