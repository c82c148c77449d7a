/**
 * The traffic of a namespace's Stages as the routes hold it: for every Stage, every rule that a
 * Worker registration of a built-in executor manages, read from the route itself (each route once
 * a pass, from the routes' cache when given one, else from the apiserver), with the percent per
 * StageVersion; for an External registration, and for every registration of a Stage whose routes
 * live in a Landscape (another cluster), what its executions report (decisions/traffic.ts
 * reportedRules), listed once a pass per registration. A Stage's registrations are those of the
 * plans its VectorActivations run (`spec.executionPlan`, else `default`); every registration for a
 * plan not found (the default one is optional, a named one may not be cached yet or be deleted
 * since it ran) and for a Stage no activation names. The observe half of the Stage controller's
 * traffic; decisions/stage.ts decides on it (the serving marks, the protection, the Stage's status).
 */
import type { ActivationExecutionPlanResource } from '../../api/activation-execution-plan.js';
import type { ActivationTaskRegistrationResource } from '../../api/activation-task-registration.js';
import type { VectorActivationResource } from '../../api/vector-activation.js';
import type { StageResource } from '../../api/stage.js';
import type { StageVersionResource } from '../../api/stage-version.js';
import { sameRule, type ObservedTraffic, type TrafficRule } from '../../decisions/stage.js';
import { percentOf, reportedRules, type ReportedExecution } from '../../decisions/traffic.js';
import { LABEL_REGISTRATION } from '../../api/group.js';
import { CustomObjects, type CustomObject } from '../../k8s/custom-objects.js';
import { labelValue } from '../../shared/names.js';
import { isFinal } from '../../decisions/activation.js';
import { executorFor } from '../../executors/index.js';
import { ExecutorError, type ExecutorContext, type StageVersionInfo, type TaskInput } from '../../executors/types.js';

const info = (sv: StageVersionResource): StageVersionInfo => ({
  name: sv.metadata.name!,
  revision: sv.spec.revision,
  vector: sv.spec.vector,
  ...(sv.spec.backend ? { backend: sv.spec.backend } : {}),
});

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
};

/** Whether a failed read says the rule sends nothing (the route or rule is not there), not that we cannot tell. */
const absent = (err: unknown) =>
  err instanceof ExecutorError && !err.retryable && (err.status === undefined || err.status === 404);

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
): Promise<Map<string, ObservedTraffic | undefined>> {
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
  const readable = registrations.flatMap((reg) => {
    const executor = reg.spec.executor === 'External' ? undefined : executorFor(reg.spec.type);
    const parsed = executor?.config.safeParse(reg.spec.spec ?? {});
    if (!executor && !external.has(reg.metadata.name!)) unreadable.add(reg.metadata.name!);
    if (!executor || !parsed?.success) return [];
    // Only what an activation of this namespace may change counts (the tenancy rule of activities/plan.ts).
    const allowed = reg.spec.allowCrossNamespaceFrom ?? [];
    const foreign = executor.routeNamespaces(parsed.data, namespace).some((ns) => ns !== namespace);
    if (foreign && !allowed.includes('*') && !allowed.includes(namespace)) return [];
    return [{ name: reg.metadata.name!, executor, config: parsed.data }];
  });
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
  for (const stage of stages) {
    const name = stage.metadata.name!;
    const versions = stageVersions.filter((sv) => sv.spec.stage === name).map(info);
    const usedByStage = used(name);
    // A Stage whose routes live in a Landscape: this cluster holds none of them (a route of the
    // same name here is another route), so what its executions recorded and were assigned (the core
    // writes both for a landscape's worker) is its traffic, as for an External registration.
    const inLandscape = stage.spec.landscape !== undefined;
    const tasks = inLandscape ? [] : usedByStage.tasks;
    const reported = inLandscape
      ? [...usedByStage.reported, ...usedByStage.tasks.map((task) => task.name)]
      : usedByStage.reported;
    let complete = usedByStage.complete;
    if (versions.length === 0 || tasks.length + reported.length === 0) {
      out.set(name, { rules: [], complete });
      continue;
    }
    const own = new Set(versions.map((stageVersion) => stageVersion.name));
    const input: TaskInput = {
      execution: { namespace, name: '' },
      action: 'Apply',
      namespace,
      stage: name,
      stageVersion: versions[0]!,
      stageVersions: versions,
      config: {},
    };
    let rules: TrafficRule[] | undefined = [];
    const add = (trafficRule: TrafficRule) => {
      // A rule that sends nothing to this Stage's StageVersions is another Stage's, or nobody's yet.
      if (!Object.keys(trafficRule.weights).some((version) => own.has(version))) return;
      // Two registrations (of two plans) may manage the same rule: it is one rule.
      if (rules?.some((existing) => sameRule(existing, trafficRule))) return;
      rules?.push(trafficRule);
    };
    for (const { executor, config } of tasks) {
      try {
        for (const observedRule of await executor.observe({ ...input, config }, config, ctx, { lenient: true }))
          add({
            route: observedRule.route,
            rule: observedRule.index,
            ...(observedRule.name ? { name: observedRule.name } : {}),
            weights: percentOf(observedRule.traffic),
          });
      } catch (err) {
        if (!absent(err)) rules = undefined;
      }
    }
    // External registrations: what their executions report, rule by rule, across registrations.
    const reports: ReportedExecution[] = [];
    for (const registration of reported) {
      try {
        const ofStage = (await executionsOf(registration)).filter(
          (object) => object.spec?.stage === name && object.spec?.registration === registration,
        );
        // Never run for this Stage: what its rules hold is not known here.
        if (ofStage.length === 0) complete = false;
        reports.push(...ofStage.map(reportedExecution));
      } catch {
        rules = undefined;
      }
    }
    const told = reports.length > 0 ? reportedRules(reports) : [];
    if (told) for (const rule of told) add(rule);
    else complete = false;
    out.set(name, rules && { rules, complete });
  }
  return out;
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
