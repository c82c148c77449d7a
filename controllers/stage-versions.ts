/**
 * Which StageVersions are in use, which may go, and what a usage resolves to (ADR-0013). Pure
 * functions over listed objects, so the rules are tested without a cluster.
 */
import type { CustomObject } from '../k8s/custom-objects.js';

/** A selector holds every StageVersion of its namespace that carries all of its labels. */
export function selects(usage: CustomObject, sv: CustomObject): boolean {
  const wanted: Record<string, string> = usage.spec?.stageVersionSelector?.matchLabels ?? {};
  const labels = sv.metadata.labels ?? {};
  return Object.keys(wanted).length > 0 && Object.entries(wanted).every(([k, v]) => labels[k] === v);
}

export function references(usage: CustomObject, sv: CustomObject): boolean {
  if (usage.metadata.deletionTimestamp) return false;
  const ref = usage.spec?.stageVersionRef?.name;
  return ref !== undefined ? ref === sv.metadata.name : selects(usage, sv);
}

/** The StageVersions a usage resolves to, newest first. */
export function resolve(usage: CustomObject, svs: CustomObject[]): CustomObject[] {
  return svs.filter((sv) => references(usage, sv)).sort((a, b) => (b.spec?.revision ?? 0) - (a.spec?.revision ?? 0));
}

export function usersOf(sv: CustomObject, usages: CustomObject[]): CustomObject[] {
  return usages.filter((u) => references(u, sv));
}

export const isReady = (sv: CustomObject) =>
  !sv.metadata.deletionTimestamp && (sv.status?.conditions ?? []).some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True');

const FINAL = new Set(['Succeeded', 'Failed', 'Skipped', 'Cancelled']);

/**
 * StageVersions of a Stage that may be deleted: not referenced by any usage, not named by an
 * activation that has not finished, and beyond the `keep` most recent of such unused ones.
 */
export function cleanupCandidates(
  stage: string,
  svs: CustomObject[],
  usages: CustomObject[],
  activations: CustomObject[],
  keep: number,
): CustomObject[] {
  const pending = new Set(
    activations.filter((va) => va.spec?.stage === stage && !FINAL.has(va.status?.phase)).map((va) => va.spec?.stageVersion),
  );
  const unused = svs
    .filter((sv) => sv.spec?.stage === stage && !sv.metadata.deletionTimestamp)
    .filter((sv) => usersOf(sv, usages).length === 0 && !pending.has(sv.metadata.name))
    .sort((a, b) => (b.spec?.revision ?? 0) - (a.spec?.revision ?? 0));
  return unused.slice(keep);
}
