/**
 * Fairness between namespaces (docs/scale.md): at most `limit` Stages of one
 * namespace have activations running at once. The rest wait in the watcher, oldest first, with
 * status reason NamespaceLimit, and start when a running one finishes, so a burst in one namespace
 * cannot fill the Temporal task queues and workers that every other namespace shares.
 *
 * Counted per Stage, not per activation: a Stage's activations are serialized by its lock anyway,
 * and every activation of a burst on one Stage must reach the lock for the newest to supersede the
 * rest (ADR-0012) instead of each running in turn. A Stage with a started activation keeps its
 * place: lowering the limit or restarting the watcher never holds back work that already runs.
 * Pure; table-tested in test/unit/fair-share.test.ts.
 */

/** The status reason of an activation the limit holds back (it has no workflow yet). */
export const NAMESPACE_LIMIT_REASON = 'NamespaceLimit';

export interface UnfinishedActivation {
  uid: string;
  name: string;
  stage: string;
  /** metadata.creationTimestamp (RFC 3339, so it sorts as text). */
  created: string;
  /** Its workflow was started (the watcher started it, or the status names the workflow). */
  started: boolean;
}

/** The activations of one namespace that may run now (the rest wait); undefined or 0: no limit. */
export function fairShare(activations: readonly UnfinishedActivation[], limit: number | undefined): Set<string> {
  if (!limit) return new Set(activations.map((a) => a.uid));
  const byStage = new Map<string, UnfinishedActivation[]>();
  for (const a of activations) {
    const same = byStage.get(a.stage);
    if (same) same.push(a);
    else byStage.set(a.stage, [a]);
  }
  const stages = [...byStage.values()].map((as) => ({
    as,
    oldest: as.reduce((m, a) => (order(a, m) < 0 ? a : m)),
    started: as.some((a) => a.started),
  }));
  const running = stages.filter((s) => s.started);
  const next = stages
    .filter((s) => !s.started)
    .sort((x, y) => order(x.oldest, y.oldest))
    .slice(0, Math.max(0, limit - running.length));
  return new Set([...running, ...next].flatMap((s) => s.as.map((a) => a.uid)));
}

/** Oldest first; the name breaks ties (creation times have one-second resolution). */
function order(a: UnfinishedActivation, b: UnfinishedActivation): number {
  return a.created === b.created ? a.name.localeCompare(b.name) : a.created < b.created ? -1 : 1;
}

/** What a held activation's status says, so `kubectl get va` shows why it has not started. */
export function heldMessage(namespace: string, limit: number): string {
  return `queued: ${limit} Stage${limit === 1 ? '' : 's'} of namespace ${namespace} already activate (at most ${limit} at once, so that one namespace's burst does not delay the others); starts when one of them finishes`;
}
