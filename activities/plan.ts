/**
 * Resolving what an activation runs: its ActivationExecutionPlan (or every registration), each
 * task's registration read and checked before any route is touched: it exists, its executor spec
 * is valid for its type, and it writes only in the activation's namespace unless the registration
 * allows the activation's namespace to reach further (tenancy: executors act with cluster rights).
 */
import { ApplicationFailure } from '@temporalio/activity';
import { MAX_STATUS_STEPS } from '../api/vector-activation.js';
import { executorFor } from '../executors/index.js';
import { getTyped, parseTyped, type Typed } from '../k8s/typed.js';
import { dnsLabelOf } from '../shared/names.js';
import type { CoreDeps } from './deps.js';
import type { AnalysisRules } from '../decisions/analysis.js';
import type { ProgressionSpec } from '../decisions/progression.js';
import { describeIssues } from '../api/issues.js';
import { placementOf, type LandscapeAllowance } from '../decisions/landscape.js';

export interface PlannedTask {
  registration: string;
  type: string;
  executor: 'Worker' | 'External';
  config: unknown;
  timeoutSeconds: number;
  heartbeatTimeoutSeconds?: number;
  /** The registration lets this activation's namespace change routes in other namespaces. */
  crossNamespaceAllowed: boolean;
  /**
   * The Landscape whose workers run this task (its Stage's spec.landscape, allowed for the
   * namespace): its task queue is that landscape's, and the core keeps its record. Absent: the
   * control plane's own cluster.
   */
  landscape?: string;
}

export interface ResolvedPlan {
  /** For people: "plan konfidence-system/default" or "every registration (no plan)". */
  source: string;
  onFailure: 'Stop' | 'Revert';
  steps: { name: string; tasks: PlannedTask[] }[];
  /** Traffic in steps (the plan's spec.progression), with the analyses it names. */
  progression?: ProgressionSpec;
  analyses?: AnalysisRules[];
}

/** An analysis as the decisions read it: the plan's, defaults applied by its schema. */
function analysisRules(a: NonNullable<Typed<'ActivationExecutionPlan'>['spec']['analyses']>[number]): AnalysisRules {
  const { prometheus, ...rest } = a;
  return {
    ...rest,
    ...(prometheus?.query ? { query: prometheus.query } : {}),
    ...(prometheus?.address ? { address: prometheus.address } : {}),
  };
}

const invalid = (type: string, message: string) => ApplicationFailure.nonRetryable(message, type);

/** The plan with each Worker task sent to `landscape` (undefined: as it is); an External task stays with its controller. */
export function placedPlan(plan: ResolvedPlan, landscape: string | undefined): ResolvedPlan {
  if (landscape === undefined) return plan;
  const place = (task: PlannedTask): PlannedTask => (task.executor === 'Worker' ? { ...task, landscape } : task);
  return { ...plan, steps: plan.steps.map((step) => ({ ...step, tasks: step.tasks.map(place) })) };
}

/** Checks one registration for an activation in `namespace`; throws what a person must fix. */
export function plannedTask(reg: Typed<'ActivationTaskRegistration'>, namespace: string): PlannedTask {
  const where = `ActivationTaskRegistration ${reg.metadata.namespace}/${reg.metadata.name}`;
  const spec = reg.spec;
  const allowed = spec.allowCrossNamespaceFrom ?? [];
  const crossNamespaceAllowed = allowed.includes('*') || allowed.includes(namespace);
  const executor = executorFor(spec.type);
  if (spec.executor !== 'External' && executor) {
    const parsed = executor.config.safeParse(spec.spec ?? {});
    if (!parsed.success) {
      const problems = describeIssues(parsed.error, ['spec']);
      throw invalid('InvalidExecutorSpec', `${where} (type ${spec.type}) has an invalid spec: ${problems}`);
    }
    const foreign = executor.routeNamespaces(parsed.data, namespace).filter((ns) => ns !== namespace);
    if (foreign.length > 0 && !crossNamespaceAllowed) {
      throw invalid(
        'CrossNamespaceRefused',
        `${where} changes routes in namespace ${[...new Set(foreign)].join(', ')}, but activations of namespace ${namespace} may only change routes in their own namespace; ` +
          `the platform team can allow it with spec.allowCrossNamespaceFrom: [${namespace}] on the registration`,
      );
    }
  }
  return {
    registration: reg.metadata.name!,
    type: spec.type,
    executor: spec.executor,
    config: spec.spec ?? {},
    timeoutSeconds: spec.timeoutSeconds,
    ...(spec.heartbeatTimeoutSeconds ? { heartbeatTimeoutSeconds: spec.heartbeatTimeoutSeconds } : {}),
    crossNamespaceAllowed,
  };
}

export function planActivities({ objects, systemNamespace, config }: CoreDeps) {
  /** The plan of that name (if any) and every registration: as watched when the worker keeps them, else read. */
  async function planAndRegistrations(name: string) {
    const plans = config?.list('ActivationExecutionPlan');
    const registrations = config?.list('ActivationTaskRegistration');
    if (plans && registrations) {
      const plan = plans.find((p) => p.metadata.name === name);
      return [plan ? parseTyped('ActivationExecutionPlan', plan) : undefined, registrations] as const;
    }
    // The plan and the registrations in one round trip, not a read per registration after the plan's.
    return Promise.all([
      getTyped(objects, 'ActivationExecutionPlan', systemNamespace, name),
      objects.list('ActivationTaskRegistration', systemNamespace),
    ]);
  }
  /** The system namespace's Landscapes: as watched when the worker keeps them, else read. */
  async function landscapes(): Promise<LandscapeAllowance[]> {
    const objectsOfKind = config?.list('Landscape') ?? (await objects.list('Landscape', systemNamespace));
    return objectsOfKind.map((object) => {
      const landscape = parseTyped('Landscape', object);
      return { name: landscape.metadata.name!, allowedNamespaces: landscape.spec.allowedNamespaces };
    });
  }
  return {
    /**
     * The plan with each Worker task sent to the landscape of the Stage's routes; refuses a
     * landscape that does not exist or does not allow the namespace. An External task stays with
     * its controller, which watches the control plane.
     */
    async placeTasks(
      plan: ResolvedPlan,
      namespace: string,
      stage: string,
      landscape: string,
      puttingBack = false,
    ): Promise<ResolvedPlan> {
      const placement = placementOf(
        { namespace, name: stage, landscape },
        puttingBack ? [] : await landscapes(),
        systemNamespace,
        puttingBack,
      );
      if ('refused' in placement) throw invalid('LandscapeRefused', placement.refused);
      return placedPlan(plan, placement.landscape);
    },

    /** The steps an activation in `namespace` runs; refuses anything that would fail or overreach. */
    async resolvePlan(planName: string | undefined, namespace: string): Promise<ResolvedPlan> {
      const name = planName ?? 'default';
      const [plan, all] = await planAndRegistrations(name);
      if (!plan && planName)
        throw invalid('InvalidPlan', `ActivationExecutionPlan ${systemNamespace}/${planName} does not exist`);
      if (plan) {
        // Only the plan's own registrations are parsed: a broken one it does not name is no concern of it.
        const byName = new Map(all.map((r) => [r.metadata.name, r]));
        const registration = (task: string): PlannedTask => {
          const reg = byName.get(task);
          if (!reg)
            throw invalid('InvalidPlan', `ActivationTaskRegistration ${systemNamespace}/${task} does not exist`);
          return plannedTask(parseTyped('ActivationTaskRegistration', reg), namespace);
        };
        const steps = plan.spec.steps.map((step) => ({ name: step.name, tasks: step.tasks.map(registration) }));
        const { progression, analyses } = plan.spec;
        return {
          source: `plan ${systemNamespace}/${name}`,
          onFailure: plan.spec.onFailure,
          steps,
          ...(progression ? { progression, analyses: (analyses ?? []).map(analysisRules) } : {}),
        };
      }
      // No plan: every registration, one per step, in name order (routing order matters; make it known).
      const regs = all
        .map((r) => parseTyped('ActivationTaskRegistration', r))
        .sort((a, b) => a.metadata.name!.localeCompare(b.metadata.name!));
      if (regs.length === 0)
        throw invalid(
          'InvalidPlan',
          `no ActivationExecutionPlan and no ActivationTaskRegistration in ${systemNamespace}`,
        );
      if (regs.length > MAX_STATUS_STEPS) {
        throw invalid(
          'InvalidPlan',
          `${regs.length} ActivationTaskRegistrations in ${systemNamespace} and no plan: at most ${MAX_STATUS_STEPS} run without one; write an ActivationExecutionPlan`,
        );
      }
      const tasks = regs.map((r) => plannedTask(r, namespace));
      // Registration names may have dots and 253 characters; step names are DNS labels.
      return {
        source: 'every registration, in name order (no plan)',
        onFailure: 'Stop',
        steps: tasks.map((t) => ({ name: dnsLabelOf(t.registration), tasks: [t] })),
      };
    },
  };
}
