/**
 * Where a Stage's routes live (docs/landscapes.md): the control plane's own cluster, or the
 * Landscape its spec names, which the platform team allows per namespace. Pure: the core asks it
 * once per activation, under the Lease, with the Landscapes of the system namespace. What the
 * landscape's routes hold reaches the Stage controller through its executions and its workers'
 * reports, merged here.
 */
import type { ConditionInput } from '../api/conditions.js';
import { kubeTime } from '../shared/format.js';
import type { ReportedStage, RouteReport } from '../api/landscape.js';
import { sameRule, type ReportedRule } from './traffic.js';

/** A Landscape as the decision reads it. */
export interface LandscapeAllowance {
  name: string;
  allowedNamespaces: readonly string[];
}

/** The landscape the Stage's tasks go to (undefined: the control plane's own cluster), or why none may. */
export type Placement = { landscape?: string } | { refused: string };

export function placementOf(
  stage: { namespace: string; name: string; landscape?: string | undefined },
  landscapes: readonly LandscapeAllowance[],
  systemNamespace: string,
  /**
   * A close-out puts back what a run changed there: allowed once, a change is always put back,
   * also when the Landscape was deleted or stopped allowing the namespace since.
   */
  puttingBack = false,
): Placement {
  if (stage.landscape === undefined) return {};
  if (puttingBack) return { landscape: stage.landscape };
  const where = `Stage ${stage.namespace}/${stage.name} names Landscape ${stage.landscape}`;
  const landscape = landscapes.find((l) => l.name === stage.landscape);
  if (!landscape)
    return {
      refused: `${where}, which does not exist in ${systemNamespace}; the platform team creates it (docs/landscapes.md), or the Stage leaves spec.landscape out to route in the control plane's own cluster`,
    };
  const allowed = landscape.allowedNamespaces;
  if (!allowed.includes('*') && !allowed.includes(stage.namespace))
    return {
      refused: `${where}, which does not allow namespace ${stage.namespace}; the platform team adds "${stage.namespace}" to its spec.allowedNamespaces`,
    };
  return { landscape: landscape.name };
}

/** A landscape's task queue of one executor type, as the pollers metric names it. */
export interface LandscapeQueue {
  landscape: string;
  type: string;
}

/** Every task queue a Landscape's workers should poll: each Landscape × each Worker registration's type. */
export function landscapeQueues(
  landscapes: readonly { name: string }[],
  registrations: readonly { executor: string; type: string }[],
): LandscapeQueue[] {
  const types = [...new Set(registrations.filter((r) => r.executor === 'Worker').map((r) => r.type))].sort();
  return landscapes.flatMap((landscape) => types.map((type) => ({ landscape: landscape.name, type })));
}

/** How long after its last poll a worker still counts as polling (Temporal keeps pollers for minutes). */
export const POLLED_WITHIN_MS = 60_000;

/** The pollers that polled within POLLED_WITHIN_MS of `now`, by their last poll (epoch ms). */
export const recentPollers = (lastPolls: readonly number[], now: number) =>
  lastPolls.filter((at) => now - at <= POLLED_WITHIN_MS).length;

/**
 * A revert's message when its Apply recorded nothing, so changed no route: said by the executor
 * of the control plane's cluster and by the core for a landscape's worker alike.
 */
export const nothingRecordedMessage = (revertOf: string) =>
  `nothing to restore: ActivationExecution ${revertOf} recorded nothing, so it changed no route`;

/** How many report intervals pass without a report before a landscape's reports count as stopped. */
export const MISSED_REPORTS = 3;

/** One executor type's last report of a landscape, as it concerns one Stage. */
export interface StageReport {
  type: string;
  intervalSeconds: number;
  /** When the core asked for the report (epoch ms); absent: no report yet. */
  observedAt?: number;
  /** The Stage's managed rules in it. */
  rules: readonly ReportedRule[];
  /** Why the workers could not read the Stage's rules in that report. */
  unreadable?: string;
  /** The last report that did not arrive, when later than observedAt. */
  lastFailure?: { at: number; message: string };
}

/** When the report goes stale (epoch ms); undefined for no report or one that could not read the Stage. */
export function staleAt(report: StageReport): number | undefined {
  if (report.observedAt === undefined || report.unreadable !== undefined) return undefined;
  return report.observedAt + MISSED_REPORTS * report.intervalSeconds * 1000;
}

const fresh = (report: StageReport | undefined, now: number): boolean => {
  const until = report && staleAt(report);
  return until !== undefined && now <= until;
};

/**
 * A landscape Stage's rules, from its executions and from its workers' reports (one per executor
 * type its registrations have; undefined: none yet). A report reads the routes themselves, so
 * what one asked for after the Stage's last execution ended (`lastExecutionAt`, Infinity while one
 * runs) says wins over what the executions say: a person's edit in the landscape and rules whose
 * executions were deleted are seen; an older report only adds the rules the executions do not
 * name. The traffic is known whole only while every report is fresh: reports that stopped leave
 * every StageVersion protected as last known. Undefined when neither can tell (an execution's
 * outcome is unknown and not every report came after it).
 */
export function landscapeRules(input: {
  fromExecutions: readonly ReportedRule[] | undefined;
  lastExecutionAt?: number;
  reports: readonly (StageReport | undefined)[];
  now: number;
}): { rules: ReportedRule[]; complete: boolean } | undefined {
  const { fromExecutions, lastExecutionAt, reports, now } = input;
  const complete = reports.every((report) => fresh(report, now));
  // Both times are whole seconds (metav1.Time): only a later second is surely after the end.
  // A report that could not read the Stage tells nothing of it.
  const after = (report: StageReport | undefined) =>
    report?.unreadable === undefined && (report?.observedAt ?? -Infinity) > (lastExecutionAt ?? -Infinity);
  const newer = reports.filter(after).flatMap((report) => report?.rules ?? []);
  const older = reports.filter((report) => !after(report)).flatMap((report) => report?.rules ?? []);
  if (reports.length > 0 && reports.every(after)) return { rules: distinctRules(newer), complete };
  if (fromExecutions === undefined) return undefined;
  return { rules: distinctRules([...newer, ...fromExecutions, ...older]), complete };
}

/** The first of each rule (by the route's whole reference and the rule's position). */
function distinctRules(rules: readonly ReportedRule[]): ReportedRule[] {
  const out: ReportedRule[] = [];
  for (const rule of rules) if (!out.some((kept) => sameRule(kept, rule))) out.push(rule);
  return out;
}

export const LANDSCAPE_REPORTED = 'LandscapeReported';

/**
 * The Stage's LandscapeReported condition: True while every executor type's report is fresh; else
 * False, saying which workers, since when, and that the StageVersions stay protected. The message
 * names no time that changes with each report: a report that changes nothing writes nothing.
 */
export function reportCondition(
  landscape: string,
  reports: readonly { type: string; report: StageReport | undefined }[],
  now: number,
): ConditionInput {
  const workers = (type: string) => `the ${type} executor workers of Landscape ${landscape}`;
  const kept = "the Stage's StageVersions stay protected as last known until they report again";
  for (const { type, report } of reports) {
    if (fresh(report, now)) continue;
    if (report?.unreadable !== undefined)
      return {
        type: LANDSCAPE_REPORTED,
        status: 'False',
        reason: 'Unreadable',
        message: `${workers(type)} could not read this Stage's routes: ${report.unreadable}; ${kept}`,
      };
    const failure = report?.lastFailure ? `; the last report failed: ${report.lastFailure.message}` : '';
    if (report?.observedAt === undefined)
      return {
        type: LANDSCAPE_REPORTED,
        status: 'False',
        reason: 'NotReportedYet',
        message: `${workers(type)} have not reported what its routes hold yet${failure}; ${kept}`,
      };
    const seconds = MISSED_REPORTS * report.intervalSeconds;
    return {
      type: LANDSCAPE_REPORTED,
      status: 'False',
      reason: 'ReportsStopped',
      message: `${workers(type)} last reported what its routes hold at ${kubeTime(new Date(report.observedAt))}, over ${seconds}s ago${failure}; ${kept}: check that they run (konfidence_landscape_pollers)`,
    };
  }
  const types = reports.map(({ type }) => type).join(', ');
  return {
    type: LANDSCAPE_REPORTED,
    status: 'True',
    reason: 'Reported',
    message: `the ${types} executor workers of Landscape ${landscape} report what its routes hold`,
  };
}

/** A landscape Stage's reports as the Stage controller saw them: its condition, and when a fresh report goes stale. */
export interface StageReporting {
  condition: ConditionInput;
  staleAt?: number;
}

/** One executor type's answer in a round of reports: what its workers read, or why none came. */
export type ReportAnswer = { type: string; stages: ReportedStage[] } | { type: string; failed: string };

/**
 * The Landscape's reports after a round asked for at `observedAt`: a type that answered has its new
 * report, one that did not keeps its last report and says why this one did not come; a type no
 * Stage needs any more (not asked) is dropped.
 */
export function nextReports(
  previous: readonly RouteReport[],
  round: { observedAt: string; intervalSeconds: number; failedAt: string },
  answers: readonly ReportAnswer[],
): RouteReport[] {
  const { observedAt, intervalSeconds, failedAt } = round;
  return [...answers]
    .sort((a, b) => a.type.localeCompare(b.type))
    .map((answer): RouteReport => {
      if (!('failed' in answer)) return { type: answer.type, intervalSeconds, observedAt, stages: answer.stages };
      const last = previous.find((report) => report.type === answer.type);
      return {
        ...last,
        type: answer.type,
        intervalSeconds,
        lastFailure: { at: failedAt, message: answer.failed.slice(0, 2048) },
      };
    });
}
