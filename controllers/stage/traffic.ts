/**
 * The traffic of a namespace's Stages as the routes hold it: for every Stage, every rule that a
 * Worker registration of a built-in executor manages, read from the route itself (each route once
 * a pass, from the routes' cache when given one, else from the apiserver), with the percent per
 * StageVersion; for an External registration, what its executions report (decisions/traffic.ts
 * reportedRules), listed once a pass per registration; for a Stage whose routes live in a
 * Landscape (another cluster), its workers' reports and its executions, merged by
 * decisions/landscape.ts landscapeRules, and the Stage's LandscapeReported condition. A Stage's registrations are those of the
 * plans its VectorActivations run (`spec.executionPlan`, else `default`); every registration for a
 * plan not found (the default one is optional, a named one may not be cached yet or be deleted
 * since it ran) and for a Stage no activation names. The observe half of the Stage controller's
 * traffic; decisions/stage.ts decides on it (the serving marks, the protection, the Stage's status).
 */
import type { ActivationExecutionPlanResource } from '../../api/activation-execution-plan.js';
import type { ActivationTaskRegistrationResource } from '../../api/activation-task-registration.js';
import type { VectorActivationResource } from '../../api/vector-activation.js';
import type { StageResource } from '../../api/stage.js';
import { stageVersionInfo, type StageVersionResource } from '../../api/stage-version.js';
import { sameRule, type ObservedTraffic, type TrafficRule } from '../../decisions/stage.js';
import { reportedRules, type ReportedExecution } from '../../decisions/traffic.js';
import { LABEL_REGISTRATION } from '../../api/group.js';
import { CustomObjects, type CustomObject } from '../../k8s/custom-objects.js';
import { labelValue } from '../../shared/names.js';
import { isFinal } from '../../decisions/activation.js';
import {
  landscapeRules,
  reportCondition,
  staleAt,
  type StageReport,
  type StageReporting,
} from '../../decisions/landscape.js';
import type { RouteReport } from '../../api/landscape.js';
import { observedRules, observingInput, sendsTo } from '../../executors/observed-rules.js';
import { executorFor, readableRegistration } from '../../executors/index.js';
import type { ExecutorContext } from '../../executors/types.js';

/** How long after an activation ended a plan it named and the caches lack counts as not cached yet, not deleted. */
export const RECENT_ACTIVATION_MS = 10 * 60_000;

/** Whether the activation runs, or ended within RECENT_ACTIVATION_MS of `now`. */
function ranRecently(va: VectorActivationResource, now: number): boolean {
  const status = va.status as { phase?: string; completionTime?: string } | undefined;
  if (!isFinal(status?.phase)) return true;
  const ended = Date.parse(status?.completionTime ?? '');
  return Number.isFinite(ended) && now - ended < RECENT_ACTIVATION_MS;
}

/**
 * How routes are read: from the apiserver, and first from a watch's cache when `cachedRoute` is
 * given; `routes`, when given, is where the pass keeps each route it reads (the caller sees which).
 */
export type RouteReads = Pick<ExecutorContext, 'kubeConfig' | 'cachedRoute' | 'routes'> & {
  /** The executions of a registration in a namespace (default: listed from the apiserver by its label). */
  executionsOf?(namespace: string, registration: string): Promise<CustomObject[]>;
  /** The reports of a Landscape's workers (its status.reports; none for a Landscape not there); undefined: not known now. */
  landscapeReports?(landscape: string): readonly RouteReport[] | undefined;
};

/** What a pass observed of a namespace's Stages: by Stage, its traffic, and for one in a Landscape its reports' state. */
export interface TrafficObservation {
  traffic: Map<string, ObservedTraffic | undefined>;
  reporting: Map<string, StageReporting>;
}

/**
 * By Stage: the managed rules that send its StageVersions traffic, and whether they are all of
 * them (`complete`: no registration of a Worker type this process does not have, and every
 * External one's executions tell what its rules hold); undefined for a Stage whose traffic cannot be told now (a route read failed or was
 * refused): nothing is decided on it.
 */
export async function observeTraffic(
  reads: RouteReads,
  namespace: string,
  stages: readonly StageResource[],
  stageVersions: readonly StageVersionResource[],
  registrations: readonly ActivationTaskRegistrationResource[],
  plans: readonly ActivationExecutionPlanResource[],
  activations: readonly VectorActivationResource[],
  now = Date.now(),
): Promise<TrafficObservation> {
  const ctx: ExecutorContext = {
    ...reads,
    signal: new AbortController().signal,
    heartbeat: () => undefined,
    routes: reads.routes ?? new Map(),
  };
  const out = new Map<string, ObservedTraffic | undefined>();
  /** Registrations whose rules this process cannot read nor be told of (a Worker type it does not have). */
  const unreadable = new Set<string>();
  const external = new Set(
    registrations.filter((reg) => reg.spec.executor === 'External').map((reg) => reg.metadata.name!),
  );
  for (const reg of registrations)
    if (reg.spec.executor !== 'External' && !executorFor(reg.spec.type)) unreadable.add(reg.metadata.name!);
  // Only what an activation of this namespace may change counts.
  const readable = registrations.flatMap((reg) => readableRegistration(reg, namespace) ?? []);
  /** The registrations an activation of the Stage runs, by the plans its activations name. */
  const used = (stage: string) => {
    const ofStage = activations.filter((va) => va.spec.stage === stage);
    const names = new Set(ofStage.map((va) => va.spec.executionPlan ?? 'default'));
    // Plans named by activations that run, or ended a moment ago: one of them not cached yet may
    // run registrations not cached either (both made just before the activation).
    const recent = new Set(
      ofStage.filter((va) => ranRecently(va, now)).map((va) => va.spec.executionPlan ?? 'default'),
    );
    let planUnknown = false;
    const tasks = new Set<string>();
    // No activation (yet, or they were deleted) names a plan: any registration may hold its
    // traffic, so all of them are read (a rule that sends this Stage nothing is left out below).
    if (names.size === 0) for (const resource of registrations) tasks.add(resource.metadata.name!);
    for (const name of names) {
      const plan = plans.find((resource) => resource.metadata.name === name);
      if (plan) for (const step of plan.spec.steps) for (const task of step.tasks) tasks.add(task);
      // No such plan here (no default plan: every registration runs; a named one not cached yet,
      // or deleted since it ran): which registrations hold the traffic is not known, so all are read;
      // for a plan named a moment ago that may still miss a registration not cached yet.
      else {
        for (const resource of registrations) tasks.add(resource.metadata.name!);
        if (recent.has(name)) planUnknown = true;
      }
    }
    // A task that is no registration cached here (not seen yet, or deleted) may have rules that
    // send traffic: the Stage's traffic is then not known whole.
    const known = new Set(registrations.map((resource) => resource.metadata.name!));
    const complete = !planUnknown && ![...tasks].some((task) => unreadable.has(task) || !known.has(task));
    return {
      tasks: readable.filter((registration) => tasks.has(registration.name)),
      reported: [...external].filter((task) => tasks.has(task)),
      complete,
    };
  };
  /** The executions of an External registration in the namespace, listed once a pass (a client only if there is one). */
  let objects: CustomObjects | undefined;
  const listed = new Map<string, Promise<CustomObject[]>>();
  const executionsOf = (registration: string) => {
    if (!listed.has(registration)) {
      const list = () => {
        objects ??= new CustomObjects(reads.kubeConfig);
        return objects.list('ActivationExecution', namespace, `${LABEL_REGISTRATION}=${labelValue(registration)}`);
      };
      listed.set(registration, reads.executionsOf?.(namespace, registration) ?? list());
    }
    return listed.get(registration)!;
  };
  /** The executions of registrations for one Stage, as the Stage controller reads them. */
  const executionsOfStage = async (stage: string, names: readonly string[]) => {
    const all = await Promise.all(names.map((registration) => executionsOf(registration)));
    return all.flatMap((executions, i) =>
      executions.filter((object) => object.spec?.stage === stage && object.spec?.registration === names[i]),
    );
  };
  const reporting = new Map<string, StageReporting>();
  for (const stage of stages) {
    const name = stage.metadata.name!;
    const versions = stageVersions.filter((sv) => sv.spec.stage === name).map(stageVersionInfo);
    const usedByStage = used(name);
    // A Stage whose routes live in a Landscape: this cluster holds none of them (a route of the
    // same name here is another route). Its workers' reports and what its executions recorded and
    // were assigned (the core writes both for a landscape's worker) tell its traffic.
    const landscape = stage.spec.landscape;
    const tasks = landscape === undefined ? usedByStage.tasks : [];
    const inLandscape = landscape === undefined ? [] : usedByStage.tasks;
    const reported = usedByStage.reported;
    let complete = usedByStage.complete;
    let unseen = false;
    if (versions.length === 0 || usedByStage.tasks.length + reported.length === 0) {
      out.set(name, { rules: [], complete });
      continue;
    }
    const own = new Set(versions.map((stageVersion) => stageVersion.name));
    const input = observingInput(namespace, name, versions, {});
    let rules: TrafficRule[] | undefined = [];
    const add = (trafficRule: TrafficRule) => {
      if (!sendsTo(trafficRule, own)) return;
      // Two registrations (of two plans) may manage the same rule: it is one rule.
      if (rules?.some((existing) => sameRule(existing, trafficRule))) return;
      rules?.push(trafficRule);
    };
    for (const { executor, config } of tasks) {
      try {
        for (const observedRule of await observedRules(executor, config, input, ctx)) add(observedRule);
      } catch {
        rules = undefined;
      }
    }
    // External registrations: what their executions report, rule by rule, across registrations.
    try {
      const executions = await executionsOfStage(name, reported);
      // One never run for this Stage: what its rules hold is not known here.
      if (reported.some((registration) => !executions.some((e) => e.spec?.registration === registration)))
        complete = false;
      const told = executions.length > 0 ? reportedRules(executions.map(reportedExecution)) : [];
      if (told) for (const rule of told) add(rule);
      else complete = false;
    } catch {
      rules = undefined;
    }
    if (landscape !== undefined && inLandscape.length > 0) {
      try {
        const executions = await executionsOfStage(
          name,
          inLandscape.map((task) => task.name),
        );
        const types = [...new Set(inLandscape.map((task) => task.executor.type))].sort();
        // Not known now (the Landscapes' cache is listing again): nothing is decided on it.
        const held = reads.landscapeReports?.(landscape);
        if (!held) throw new Error(`the reports of Landscape ${landscape} are not known now`);
        const byType = types.map((type) => ({ type, report: stageReport(held, type, namespace, name) }));
        const merged = landscapeRules({
          fromExecutions: executions.length > 0 ? reportedRules(executions.map(reportedExecution)) : [],
          lastExecutionAt: lastEnded(executions),
          reports: byType.map(({ report }) => report),
          now,
        });
        if (merged) for (const rule of merged.rules) add(rule);
        else rules = undefined;
        complete &&= merged?.complete ?? false;
        unseen = !merged?.complete;
        // When a fresh report goes stale; one stale already wakes nobody (a pass comes with the next report).
        const stale = byType.flatMap(({ report }) => {
          const at = report && staleAt(report);
          return at !== undefined && at > now ? [at] : [];
        });
        reporting.set(name, {
          condition: reportCondition(landscape, byType, now),
          ...(stale.length > 0 ? { staleAt: Math.min(...stale) } : {}),
        });
      } catch {
        rules = undefined;
      }
    }
    out.set(name, rules && { rules, complete, ...(unseen ? { unseen } : {}) });
  }
  return { traffic: out, reporting };
}

/** When the last of the executions ended (epoch ms): Infinity while one runs, undefined for none. */
function lastEnded(executions: readonly CustomObject[]): number | undefined {
  if (executions.length === 0) return undefined;
  return Math.max(
    ...executions.map((e) =>
      e.status?.phase === 'Succeeded' || e.status?.phase === 'Error'
        ? Date.parse(e.status?.completionTime ?? '') || Infinity
        : Infinity,
    ),
  );
}

/**
 * One executor type's report of the landscape as it concerns one Stage; undefined when the type has
 * no report, or when its report does not cover the Stage (not asked: no StageVersion seen, its
 * namespace no longer allowed): nothing is known of it then but why the last one failed.
 */
function stageReport(
  reports: readonly RouteReport[],
  type: string,
  namespace: string,
  stage: string,
): StageReport | undefined {
  const report = reports.find((candidate) => candidate.type === type);
  if (!report) return undefined;
  const observedAt = report.observedAt ? Date.parse(report.observedAt) : undefined;
  const failedAt = report.lastFailure ? Date.parse(report.lastFailure.at) : undefined;
  const failure =
    report.lastFailure && failedAt !== undefined && (observedAt === undefined || failedAt > observedAt)
      ? { lastFailure: { at: failedAt, message: report.lastFailure.message } }
      : {};
  const mine = report.stages?.find((entry) => entry.namespace === namespace && entry.stage === stage);
  if (observedAt === undefined || !mine)
    return 'lastFailure' in failure
      ? { type, intervalSeconds: report.intervalSeconds, rules: [], ...failure }
      : undefined;
  return {
    type,
    intervalSeconds: report.intervalSeconds,
    observedAt,
    rules: (mine.rules ?? []).map(({ route, rule, name, weights }) => ({
      route,
      rule,
      ...(name ? { name } : {}),
      weights,
    })),
    ...(mine.unreadable !== undefined ? { unreadable: mine.unreadable } : {}),
    ...failure,
  };
}

/** The parts of an ActivationExecution that say what its External executor did. */
function reportedExecution(object: CustomObject): ReportedExecution {
  return {
    name: object.metadata.name,
    created: object.metadata.creationTimestamp ?? '',
    action: object.spec?.action === 'Revert' ? 'Revert' : 'Apply',
    ...(object.spec?.assignment ? { assignment: object.spec.assignment } : {}),
    ...(object.spec?.revertOf ? { revertOf: object.spec.revertOf } : {}),
    ...(object.status?.phase ? { phase: object.status.phase } : {}),
    ...(object.status?.record?.rules ? { record: object.status.record.rules } : {}),
  };
}
