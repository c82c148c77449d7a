/**
 * Traffic as absolute assignments (StageVersion → percent of every managed rule), and which tasks
 * a revert puts back: pure, so that workflow code imports it and tables test it
 * (test/unit/traffic-decisions.test.ts).
 */
import type { RuleRecord, TrafficAssignment } from '../api/activation-execution.js';
import type { StepProgress } from './activation.js';

export type { TrafficAssignment };

/** The share a registration gives the new version: its `spec.weight` (every executor type's), default 100. */
export function weightOf(config: unknown): number {
  const weight = (config as { weight?: unknown } | undefined)?.weight;
  return typeof weight === 'number' && Number.isInteger(weight) && weight >= 0 && weight <= 100 ? weight : 100;
}

/**
 * What an Apply task sets: `weight` percent to the target and the rest to the StageVersion active
 * now; all to the target when nothing else is active or the weight is 100.
 */
export function applyAssignment(target: string, active: string | undefined, weight: number): TrafficAssignment {
  if (active === undefined || active === target || weight >= 100) return { [target]: 100 };
  if (weight <= 0) return { [active]: 100 };
  return { [target]: weight, [active]: 100 - weight };
}

/** Percent per StageVersion of a rule's weights as found (relative weights, as routes hold them). */
export function percentOf(weights: Record<string, number>): TrafficAssignment {
  const total = Object.values(weights).reduce((a, b) => a + b, 0);
  if (total <= 0) return {};
  const out: TrafficAssignment = {};
  for (const [name, w] of Object.entries(weights)) if (w > 0) out[name] = Math.round((w * 100) / total);
  return out;
}

/**
 * The tasks a revert puts back, newest step first (steps 0..failedStep): every task that ran, its
 * execution named, whatever its end (Succeeded, Error, timed out): a task refused halfway may have
 * changed some of its routes, and its record says what they held before.
 */
export function restoreOrder(
  progress: readonly StepProgress[],
  failedStep: number,
): { step: number; tasks: { registration: string; execution: string }[] }[] {
  const out: { step: number; tasks: { registration: string; execution: string }[] }[] = [];
  for (let i = failedStep; i >= 0; i--) {
    const ran = progress[i]!.tasks.flatMap((t) =>
      (t.phase === 'Succeeded' || t.phase === 'Error') && t.execution
        ? [{ registration: t.registration, execution: t.execution }]
        : [],
    );
    if (ran.length > 0) out.push({ step: i, tasks: ran });
  }
  return out;
}

const sameRecordedRule = (a: RuleRecord, b: RuleRecord) =>
  a.route.group === b.route.group &&
  a.route.kind === b.route.kind &&
  a.route.namespace === b.route.namespace &&
  a.route.name === b.route.name &&
  (a.name ?? a.index) === (b.name ?? b.index);

const holds = (rule: RuleRecord, assignment: TrafficAssignment) => {
  const now = percentOf(rule.traffic);
  const wanted = Object.entries(assignment).filter(([, w]) => w > 0);
  return wanted.length === Object.keys(now).length && wanted.every(([name, w]) => now[name] === w);
};

/**
 * What a retried task records: for each rule, what the same task of an earlier attempt found, if
 * the rule still holds what that attempt assigned (nobody moved it since, so the earlier record is
 * what was there before this activation); else the rule as found now (another activation or a
 * person moved it: that is what a revert must put back).
 */
export function inheritedRecord(
  now: readonly RuleRecord[],
  earlier: { record: readonly RuleRecord[]; assignment: TrafficAssignment } | undefined,
): RuleRecord[] {
  if (!earlier) return [...now];
  return now.map((rule) => {
    const before = earlier.record.find((r) => sameRecordedRule(r, rule));
    return before && holds(rule, earlier.assignment) ? before : rule;
  });
}

/**
 * The rules of an Apply execution's record that a close-out puts back: those that still hold what
 * the execution assigned (or, for a progression, what any of its rounds assigned: a round cut short
 * left some rules at the round before). A rule moved since (another activation, a person) is left as it is.
 */
export function unmovedRules(
  record: readonly RuleRecord[],
  now: readonly RuleRecord[],
  assigned: TrafficAssignment | readonly TrafficAssignment[],
): RuleRecord[] {
  const assignments = Array.isArray(assigned)
    ? (assigned as readonly TrafficAssignment[])
    : [assigned as TrafficAssignment];
  return record.filter((r) => {
    const current = now.find((n) => sameRecordedRule(n, r));
    return current !== undefined && assignments.some((a) => holds(current, a));
  });
}

/** What the Stage controller reads of an ActivationExecution of an External registration. */
export interface ReportedExecution {
  name: string;
  /** creationTimestamp: executions of one registration are made one after the other. */
  created: string;
  action: 'Apply' | 'Revert';
  assignment?: TrafficAssignment;
  revertOf?: string;
  phase?: string;
  record?: readonly RuleRecord[];
}

/** A rule an External executor reports, and the percent it sends each StageVersion. */
export interface ReportedRule {
  route: RuleRecord['route'];
  rule: number;
  name?: string;
  weights: TrafficAssignment;
}

/**
 * What the rules of External registrations hold for one Stage, as their executions report it (the
 * Stage controller cannot read them), rule by rule, the latest execution deciding: an Apply that
 * Succeeded set its assignment on the rules it recorded; a Revert that Succeeded put back the
 * record of the Apply it names; an Apply that recorded and then ended Error or still runs, and a
 * Revert that did not succeed, leave their rules unknown; an Apply without a record changed nothing. Undefined when any rule is unknown.
 */
export function reportedRules(executions: readonly ReportedExecution[]): ReportedRule[] | undefined {
  const order = [...executions].sort(
    (a, b) =>
      a.created.localeCompare(b.created) ||
      (a.action === b.action ? a.name.localeCompare(b.name) : a.action === 'Revert' ? 1 : -1),
  );
  const rules = new Map<string, ReportedRule | 'unknown'>();
  const id = (r: RuleRecord) =>
    `${r.route.group}/${r.route.kind}/${r.route.namespace}/${r.route.name}#${r.name ?? r.index}`;
  const set = (r: RuleRecord, weights: TrafficAssignment | 'unknown') =>
    rules.set(
      id(r),
      weights === 'unknown'
        ? 'unknown'
        : { route: r.route, rule: r.index, ...(r.name ? { name: r.name } : {}), weights },
    );
  for (const e of order) {
    const applied = e.action === 'Apply' ? e : order.find((x) => x.name === e.revertOf);
    const touched = e.action === 'Apply' ? e.record : applied?.record;
    if (!touched?.length) continue;
    for (const r of touched) {
      if (e.phase !== 'Succeeded') set(r, 'unknown');
      else if (e.action === 'Apply') set(r, e.assignment ? { ...e.assignment } : 'unknown');
      else set(r, percentOf(r.traffic));
    }
  }
  const out: ReportedRule[] = [];
  for (const r of rules.values()) {
    if (r === 'unknown') return undefined;
    out.push(r);
  }
  return out;
}

/** Whether two managed rules are one: the same rule of the same route, by the route's whole reference. */
export function sameRule(
  a: { route: RuleRecord['route']; rule: number },
  b: { route: RuleRecord['route']; rule: number },
): boolean {
  const { route } = a;
  const other = b.route;
  return (
    route.group === other.group &&
    route.kind === other.kind &&
    route.namespace === other.namespace &&
    route.name === other.name &&
    a.rule === b.rule
  );
}
