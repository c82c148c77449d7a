/**
 * A status write of the activation workflow without a read, as pure functions. The workflow keeps
 * what the VectorActivation holds of its status (KnownStatus: read once when it starts, then what
 * it wrote), and each write is one JSON patch over it: conditional on the object's uid and
 * generation, and on every field its Events are computed from; a patch whose condition fails
 * (422) is written as before, by reading the object first. Pure and deterministic: workflow code
 * imports it.
 */
import { setCondition } from '../api/conditions.js';
import type { Condition } from '../api/meta.js';
import type { VectorActivationPhase } from '../api/vector-activation.js';
import { activationConditions, activationStatus, type ActivationReport } from './activation.js';
import { pointerUnder } from '../shared/json-pointer.js';

/** The status fields the workflow writes: the rest (status.requests, coreBuildId) it leaves as found. */
export const WORKFLOW_FIELDS = [
  'phase',
  'reason',
  'message',
  'workflowId',
  'workflowUrl',
  'attempt',
  'previousStageVersion',
  'firstError',
  'startTime',
  'completionTime',
  'steps',
  'progression',
  'conditions',
  'observedGeneration',
] as const;

/** The fields the Events of a write compare with their value before it (decisions/events.ts activationEvents). */
const COMPARED_FIELDS = ['phase', 'reason', 'message', 'attempt', 'steps', 'progression'] as const;

export type WorkflowStatus = Partial<ActivationReport> & { conditions?: Condition[]; observedGeneration?: number };

/** What the object holds of the workflow's status, as the workflow last read or wrote it. */
export interface KnownStatus {
  /** metadata.generation as read: observedGeneration, and a condition of every write. */
  generation: number;
  /** The workflow's fields of the status; absent when the object has no status at all. */
  status?: WorkflowStatus;
}

/** What a status write over the known status is given besides the report (activities/activation-status.ts). */
export interface StatusOver {
  known: KnownStatus;
  /** The conditions once the report is written (statusWrite). */
  conditions: Condition[];
  /** The activation's Stage and StageVersion, which its Events name. */
  stage: string;
  stageVersion: string;
  /** The Stage's uid once the run validated it: the Stage's Events name it without a read. */
  stageUid?: string;
}

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type PatchOp = { op: 'test' | 'add'; path: string; value: unknown } | { op: 'remove'; path: string };

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The workflow's fields of a status as read (anything else left out). */
export function knownStatus(generation: number, status: Record<string, unknown> | undefined): KnownStatus {
  if (!status) return { generation };
  return {
    generation,
    status: Object.fromEntries(
      WORKFLOW_FIELDS.filter((f) => status[f] !== undefined).map((f) => [f, status[f]]),
    ) as WorkflowStatus,
  };
}

/**
 * The conditions once `phase` is written over `conditions` (lastTransitionTime moves only when a
 * condition's status does, to `now`), each observing `generation`.
 */
export function carriedConditions(
  conditions: readonly Condition[] | undefined,
  generation: number | undefined,
  phase: VectorActivationPhase,
  reason: string,
  message: string,
  now: Date,
): Condition[] {
  return activationConditions(phase, reason, message).reduce(
    (all, c) => setCondition(all, c, generation, now),
    [...(conditions ?? [])],
  );
}

/** RFC 7386: what a JSON merge patch makes of `target` (null removes a field, an object merges, anything else replaces). */
export function mergePatched(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return patch;
  const out: Record<string, unknown> = isObject(target) ? { ...target } : {};
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k];
    else if (v !== undefined) out[k] = mergePatched(out[k], v);
  }
  return out;
}

/** The fields a status write sets: the report's, the conditions, and the generation they observe. */
function fieldsOf(known: KnownStatus, report: ActivationReport, conditions: Condition[]): Record<string, unknown> {
  return { ...activationStatus(report), observedGeneration: known.generation, conditions };
}

/**
 * A write of `report` over `known` at `now`: the conditions it sets and what the object holds
 * once it is written (the next write's known status).
 */
export function statusWrite(
  known: KnownStatus,
  report: ActivationReport,
  now: Date,
): { conditions: Condition[]; after: KnownStatus } {
  const conditions = carriedConditions(
    known.status?.conditions,
    known.generation,
    report.phase,
    report.reason,
    report.message,
    now,
  );
  const status = mergePatched(known.status ?? {}, fieldsOf(known, report, conditions)) as WorkflowStatus;
  return { conditions, after: { generation: known.generation, status } };
}

/** Whether two JSON values are equal (the order of an object's keys aside; an undefined field is an absent one). */
export function sameJson(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) || Array.isArray(b))
    return Array.isArray(a) && Array.isArray(b) && a.length === b.length && a.every((x, i) => sameJson(x, b[i]));
  if (isObject(a) && isObject(b)) {
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    return [...keys].every((k) => sameJson(a[k], b[k]));
  }
  return a === b || (a == null && b == null);
}

/** A value as JSON holds it: undefined and null fields dropped (the apiserver prunes a null). */
function withoutNulls(v: unknown): Json {
  if (Array.isArray(v)) return v.map(withoutNulls);
  if (!isObject(v)) return v as Json;
  return Object.fromEntries(
    Object.entries(v).flatMap(([k, x]) => (x === undefined || x === null ? [] : [[k, withoutNulls(x)]])),
  );
}

/** The JSON patch operations that make of `known` what the merge patch `patch` makes of the object, under `path`. */
function mergeOps(path: string, known: Record<string, unknown>, patch: Record<string, unknown>): PatchOp[] {
  return Object.entries(patch).flatMap(([k, v]): PatchOp[] => {
    const at = pointerUnder(path, k);
    if (v === undefined) return [];
    if (v === null) return known[k] === undefined ? [] : [{ op: 'remove', path: at }];
    const was = known[k];
    if (isObject(v) && isObject(was)) return mergeOps(at, was, v);
    return [{ op: 'add', path: at, value: withoutNulls(v) }];
  });
}

/**
 * The JSON patch of a status write over `known` (to the status subresource): it applies only to
 * the object of `uid` at the known generation, and only while every field the write's Events are
 * computed from holds its known value, so a write made already (a repeat whose answer was lost),
 * or a status someone else moved, fails instead of telling Events twice or not at all. Each field
 * is set on its own: what the workflow does not write stays. `extra`: fields it writes without
 * knowing them (coreBuildId).
 */
export function statusPatch(
  uid: string,
  known: KnownStatus,
  report: ActivationReport,
  conditions: Condition[],
  extra: Record<string, unknown> = {},
): PatchOp[] {
  const fields = { ...fieldsOf(known, report, conditions), ...extra };
  const guard: PatchOp[] = [
    { op: 'test', path: '/metadata/uid', value: uid },
    { op: 'test', path: '/metadata/generation', value: known.generation },
  ];
  if (!known.status)
    return [
      ...guard,
      { op: 'test', path: '/status', value: null },
      { op: 'add', path: '/status', value: withoutNulls(fields) },
    ];
  const before = known.status as Record<string, unknown>;
  const compared = COMPARED_FIELDS.map((f): PatchOp => ({
    op: 'test',
    path: `/status/${f}`,
    value: before[f] === undefined ? null : withoutNulls(before[f]),
  }));
  return [...guard, ...compared, ...mergeOps('/status', before, fields)];
}
