/**
 * An in-memory fake of the Kubernetes side of an activation: exactly the core activities
 * (`ActivationActivities` of activities/core.ts) over a small state that tests read and change
 * between calls, and a fake `executeTask` executor activity whose behaviour per registration a test
 * sets. It keeps to the real contract (activities/*.ts): what each activity returns, when it
 * returns undefined or false, and which failures it throws with which type and retryability, so a
 * workflow that passes here handles the real activities' answers.
 *
 * Everything that happens lands in `journal`, in order, so tests can assert orderings across
 * activities and the executor ("the executor stopped before the status said Cancelled").
 */
import { ApplicationFailure, CancelledFailure, Context } from '@temporalio/activity';
import {
  composeActivities,
  type ActivationActivities,
  type CoreParts,
  type PlannedTask,
  type ResolvedPlan,
  type StageState,
} from '../../../activities/core.js';
import type {
  ExecutedTask,
  ExecutorActivities,
  LandscapeExecutorActivities,
} from '../../../activities/execute-task.js';
import type { ExecutionStatusWrite, ExecutionToCreate } from '../../../activities/executions.js';
import {
  activationStatus,
  stageLoss,
  type ActivationReport,
  type StepProgress,
} from '../../../decisions/activation.js';
import {
  carriedConditions,
  mergePatched,
  sameJson,
  type KnownStatus,
  type WorkflowStatus,
} from '../../../decisions/status-write.js';
import type { AnalysisRules, QueryResult } from '../../../decisions/analysis.js';
import type { LockActivities } from '../../../stage-lock/activities.js';
import type { ProgressionSpec } from '../../../decisions/progression.js';
import type { RuleRecord, StageVersionInfo, TaskInput } from '../../../executors/types.js';
import { placementOf } from '../../../decisions/landscape.js';
import { placedPlan } from '../../../activities/plan.js';
import type { ActivationRef } from '../../../shared/activation.js';
import { STAGE_LEASE_HELD } from '../../../stage-lock/contract.js';
import { activationUsageName, stageLeaseName } from '../../../shared/names.js';

export interface FakeStageVersion {
  namespace: string;
  name: string;
  stage: string;
  revision: number;
  vector: string;
  /** Being deleted (metadata.deletionTimestamp set). */
  deleting?: boolean;
  /** The in-activation mark (annotation konfidence.cloud/activated-by): the holder. */
  activatedBy?: string;
  /** When a switch moved all the traffic off it (annotation konfidence.cloud/drain-since). */
  drainSince?: string;
  /** The serving mark: the Stage it serves. */
  serving?: string;
}

export interface FakeActivationSpec {
  stage: string;
  stageVersion: string;
  vector?: string;
  vectorDeployment?: string;
  executionPlan?: string;
}

/** The status fields loadActivation reads back, as the workflow last wrote them (merge patch). */
export type FakeActivationStatus = Partial<ActivationReport> & { steps?: StepProgress[] };

export interface FakeActivation {
  ref: ActivationRef;
  spec: FakeActivationSpec;
  status: FakeActivationStatus;
  /** Every status the workflow wrote, in order (copies). */
  writes: ActivationReport[];
  /**
   * The status as the apiserver holds it (each write merged in as the real one's JSON patch, with
   * its conditions and observedGeneration), and the object's generation (a deletion adds one).
   */
  held: KnownStatus;
  /**
   * Of each write made over what the workflow knew the object held (`over`): whether the status
   * and the generation were so. A write over a status not so reads first (activities/activation-status.ts).
   */
  overs: { status: boolean; generation: boolean }[];
  /** Whether the close-out finalizer is set. */
  closeOutFinalizer?: boolean;
  /** Deleted, waiting for the close-out finalizer. */
  deleting?: boolean;
}

export interface FakeRegistration {
  type: string;
  executor?: 'Worker' | 'External';
  timeoutSeconds: number;
  heartbeatTimeoutSeconds?: number;
  crossNamespaceAllowed?: boolean;
}

export interface FakePlan {
  onFailure: 'Stop' | 'Revert';
  steps: { name: string; tasks: string[] }[];
  progression?: ProgressionSpec;
  analyses?: AnalysisRules[];
}

export interface FakeExecution {
  spec: ExecutionToCreate;
  /** The ActivationExecution's owner (the VectorActivation's uid). */
  owner: string;
  /** Empty until someone writes it: a Worker executor's Apply is created without a status. */
  status: Partial<ExecutionStatusWrite>;
  /** The fake executor recorded what it found before its first change (every Apply it ran, unless told otherwise). */
  recorded?: boolean;
}

export interface FakeLease {
  holder?: string;
  stageUid: string;
  /** Everyone who took it, in order. */
  holders: string[];
}

/** What the fake executor does for one executeTask call. */
export type Behaviour =
  /** Succeeds and writes its execution's final status, as the executor does; `leavesRecord`: as one of an earlier release, leaving it to the core. */
  | { kind: 'succeed'; message?: string; leavesRecord?: boolean }
  /** Fails; not retried unless `retryable` (the real executor's ExecutorError rule). */
  | {
      kind: 'fail';
      message: string;
      retryable?: boolean;
      /** Refused before it recorded (or changed) anything. */ unrecorded?: boolean;
    }
  /** Works for `seconds` (real time, heartbeating), then succeeds; cancellable meanwhile. */
  | { kind: 'work'; seconds: number }
  /** Works until cancelled (heartbeating, so the cancellation reaches it). */
  | { kind: 'hang' };

export interface ExecutorCall {
  registration: string;
  action: 'Apply' | 'Revert';
  execution: string;
  stageVersion: string;
  previousStageVersion?: string;
  /** Apply: what it was told to set; Revert: whose record it puts back. */
  assignment?: Record<string, number>;
  revertOf?: string;
  /** Apply on a retry: the earlier attempt's execution of the same task. */
  earlier?: string;
  /** Revert of a close-out: only the rules nobody moved since. */
  unmovedOnly?: boolean;
  /** With unmovedOnly: the other assignments a rule may still hold (a progression's rounds). */
  unmovedAlso?: Record<string, number>[];
  /** Temporal's attempt of this activity. */
  attempt: number;
  /** Real time (ms): the executor runs in real time. */
  startedAt: number;
  endedAt?: number;
  outcome: 'running' | 'succeeded' | 'failed' | 'cancelled';
}

const key = (namespace: string, name: string) => `${namespace}/${name}`;
/** The rule a landscape's fake worker finds, and what its record holds. */
export const FAKE_RULE: RuleRecord = {
  route: { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'team-a', name: 'shop' },
  index: 0,
  entries: [{ name: 'shop-1', weight: 100 }],
  traffic: { 'shop-1': 100 },
};
const final = (phase: string | undefined) => phase === 'Succeeded' || phase === 'Error';
/** The fake records the parts; the composites made of them (activities/core.ts) are not recorded. */
type ActivityName = keyof CoreParts;

export class FakeCluster {
  readonly systemNamespace = 'konfidence-system';
  readonly stages = new Map<string, { uid: string; deleting?: boolean; landscape?: string }>();
  /** The system namespace's Landscapes: name → the namespaces they allow. */
  readonly landscapes = new Map<string, string[]>();
  readonly stageVersions = new Map<string, FakeStageVersion>();
  /** ns/stage → the StageVersion the Stage's "active" usage names. */
  readonly activeUsages = new Map<string, string>();
  /** ns/usage name → the "activation" usage: owner uid and StageVersion. */
  readonly activationUsages = new Map<string, { owner: string; stageVersion: string }>();
  readonly registrations = new Map<string, FakeRegistration>();
  readonly plans = new Map<string, FakePlan>();
  readonly activations = new Map<string, FakeActivation>();
  readonly executions = new Map<string, FakeExecution>();
  /** ns/stage → the Stage's Lease. */
  readonly leases = new Map<string, FakeLease>();
  readonly executorCalls: ExecutorCall[] = [];
  /** Everything that happened, in order: "status va-1 InProgress", "execute va-1-0-gw start", … */
  readonly journal: string[] = [];
  /**
   * What Prometheus answers, by query as sent: the next answer of the list each time (the last one
   * repeats); a query not listed returns no data.
   */
  readonly metrics = new Map<string, QueryResult[]>();
  /** Every query asked, in order. */
  readonly queries: string[] = [];
  /** What an HTTP check's URL answers (HTTP status), each call the next of the list (the last repeats). */
  readonly webhooks = new Map<string, number[]>();
  /** Every core activity call, in order. */
  readonly calls: { activity: ActivityName; args: unknown[] }[] = [];
  /**
   * Runs before an activity of that name (to change the state between calls, or to throw): the
   * fake's core activities, and the real lock activities the test workers run beside them.
   */
  readonly before: Partial<Record<ActivityName | keyof LockActivities, (...args: any[]) => void | Promise<void>>> = {};
  private readonly behaviours = new Map<string, Behaviour[]>();
  private uids = 0;

  // --- seeding and inspection ------------------------------------------------------------

  addStage(namespace: string, stage: string, versions: Record<string, number> = {}, active?: string): void {
    this.stages.set(key(namespace, stage), { uid: `stage-uid-${++this.uids}` });
    for (const [name, revision] of Object.entries(versions)) this.addStageVersion(namespace, stage, name, revision);
    if (active) this.activeUsages.set(key(namespace, stage), active);
  }

  addStageVersion(namespace: string, stage: string, name: string, revision: number): FakeStageVersion {
    const sv: FakeStageVersion = { namespace, name, stage, revision, vector: `${stage}-vector` };
    this.stageVersions.set(key(namespace, name), sv);
    return sv;
  }

  stageVersion(namespace: string, name: string): FakeStageVersion {
    const sv = this.stageVersions.get(key(namespace, name));
    if (!sv) throw new Error(`no StageVersion ${namespace}/${name} in the fake`);
    return sv;
  }

  /** A registration in the system namespace; its executor config names it, for the fake executor. */
  addRegistration(name: string, registration: Partial<FakeRegistration> = {}): void {
    this.registrations.set(name, { type: 'fake', timeoutSeconds: 60, ...registration });
  }

  addPlan(name: string, plan: FakePlan): void {
    for (const step of plan.steps) for (const t of step.tasks) if (!this.registrations.has(t)) this.addRegistration(t);
    this.plans.set(name, plan);
  }

  addActivation(
    namespace: string,
    name: string,
    spec: FakeActivationSpec,
    status: FakeActivationStatus = {},
  ): ActivationRef {
    const ref = { namespace, name, uid: `va-uid-${++this.uids}` };
    const held = {
      generation: 1,
      ...(Object.keys(status).length ? { status: structuredClone(status) as WorkflowStatus } : {}),
    };
    this.activations.set(key(namespace, name), {
      ref,
      spec,
      status: structuredClone(status),
      writes: [],
      held,
      overs: [],
    });
    return ref;
  }

  /**
   * The VectorActivation is deleted: gone at once (loads find nothing, status writes answer false),
   * or, while it carries the close-out finalizer, being deleted (status writes go through and answer
   * false) until the finalizer goes.
   */
  deleteActivation(ref: ActivationRef): void {
    const va = this.activations.get(key(ref.namespace, ref.name));
    if (va?.closeOutFinalizer) {
      va.deleting = true;
      va.held.generation++;
    } else this.activations.delete(key(ref.namespace, ref.name));
  }

  /** Whether the VectorActivation is still there (deleted objects wait for their finalizer). */
  hasActivation(ref: ActivationRef): boolean {
    return this.activations.get(key(ref.namespace, ref.name))?.ref.uid === ref.uid;
  }

  /**
   * The activations with writes that went over a status the workflow recorded wrong (how many
   * each): none, when its record of what it wrote is right (only a deletion moves the generation under it).
   */
  wronglyKnown(): Record<string, number> {
    return Object.fromEntries(
      [...this.activations.values()].flatMap((va) =>
        va.overs.some((o) => !o.status) ? [[va.ref.name, va.overs.filter((o) => !o.status).length]] : [],
      ),
    );
  }

  activation(ref: ActivationRef): FakeActivation {
    const va = this.activations.get(key(ref.namespace, ref.name));
    if (!va) throw new Error(`no VectorActivation ${ref.namespace}/${ref.name} in the fake`);
    return va;
  }

  /** The phases the workflow wrote, repeats of the same phase in a row counted once. */
  phases(ref: ActivationRef): string[] {
    return this.activation(ref)
      .writes.map((w) => w.phase)
      .filter((p, i, all) => i === 0 || all[i - 1] !== p);
  }

  activeUsage(namespace: string, stage: string): string | undefined {
    return this.activeUsages.get(key(namespace, stage));
  }

  activationUsage(ref: Pick<ActivationRef, 'namespace' | 'name'>) {
    return this.activationUsages.get(key(ref.namespace, activationUsageName(ref.name)));
  }

  lease(namespace: string, stage: string): FakeLease | undefined {
    return this.leases.get(key(namespace, stage));
  }

  callsOf(ref: Pick<ActivationRef, 'name'>): ExecutorCall[] {
    return this.executorCalls.filter((c) => c.execution.startsWith(`${ref.name}-`));
  }

  /**
   * What the executor does for the next calls of a registration (per action): one behaviour per
   * call in order, the last one for every call after. Default: succeed at once.
   */
  behave(registration: string, ...behaviours: Behaviour[]): void {
    this.behaviours.set(`${registration}/Apply`, behaviours);
  }

  behaveOnRevert(registration: string, ...behaviours: Behaviour[]): void {
    this.behaviours.set(`${registration}/Revert`, behaviours);
  }

  private nextBehaviour(registration: string, action: 'Apply' | 'Revert'): Behaviour {
    const list = this.behaviours.get(`${registration}/${action}`);
    if (!list?.length) return { kind: 'succeed' };
    return list.length > 1 ? list.shift()! : list[0]!;
  }

  private log(entry: string): void {
    this.journal.push(entry);
  }

  // --- the core activities ---------------------------------------------------------------

  /** The core activities, each recorded in `calls` and preceded by its `before` hook. */
  activities(): ActivationActivities {
    const impl = this.core();
    const wrapped: Record<string, unknown> = {};
    for (const [name, fn] of Object.entries(impl) as [ActivityName, (...args: unknown[]) => Promise<unknown>][]) {
      wrapped[name] = async (...args: unknown[]) => {
        this.calls.push({ activity: name, args: structuredClone(recordable(args)) });
        await this.before[name]?.(...args);
        return fn(...args);
      };
    }
    // The composites are made of the recorded activities, as in production.
    return composeActivities(wrapped as CoreParts);
  }

  private setFinalizer(ref: ActivationRef, on: boolean): boolean {
    const va = this.activations.get(key(ref.namespace, ref.name));
    if (!va || va.ref.uid !== ref.uid || (on && va.deleting)) return false;
    if (Boolean(va.closeOutFinalizer) !== on) this.log(`finalizer ${ref.name} ${on ? 'set' : 'removed'}`);
    va.closeOutFinalizer = on;
    if (va.deleting && !on) this.activations.delete(key(ref.namespace, ref.name));
    return true;
  }

  private core(): CoreParts {
    const next = <T>(list: T[] | undefined) => (list && list.length > 1 ? list.shift() : list?.[0]);
    return {
      // analysis.ts
      measure: async (_address, query) => {
        this.queries.push(query);
        this.log(`measure ${query}`);
        return next(this.metrics.get(query)) ?? { noData: 'the query returned no series' };
      },
      callWebhook: async (url) => {
        const status = next(this.webhooks.get(url)) ?? 404;
        this.log(`webhook ${url} ${status}`);
        if (status >= 200 && status < 300) return { status, message: `${url} answered ${status}` };
        if (status >= 400 && status < 500)
          throw ApplicationFailure.nonRetryable(`${url} answered ${status}`, 'WebhookRefused');
        throw ApplicationFailure.retryable(`${url} answered ${status}`, 'WebhookFailed');
      },

      // activation-status.ts
      loadActivation: async (ref) => {
        const va = this.activations.get(key(ref.namespace, ref.name));
        if (!va || va.ref.uid !== ref.uid) return undefined;
        const s = va.status;
        return {
          ...structuredClone(va.spec),
          status: structuredClone({
            ...(s.phase ? { phase: s.phase } : {}),
            ...(s.attempt ? { attempt: s.attempt } : {}),
            ...(s.previousStageVersion ? { previousStageVersion: s.previousStageVersion } : {}),
            ...(s.firstError ? { firstError: s.firstError } : {}),
            ...(s.startTime ? { startTime: s.startTime } : {}),
            ...(s.steps ? { steps: s.steps } : {}),
          }),
          known: structuredClone(va.held),
        };
      },
      // Its writeActivationStatus reads the fake's own state: nothing to read beforehand.
      readActivation: async () => undefined,
      writeActivationStatus: async (ref, report, over) => {
        const va = this.activations.get(key(ref.namespace, ref.name));
        if (!va || va.ref.uid !== ref.uid) return false;
        const held = va.held;
        const known = over
          ? { status: sameJson(over.known.status, held.status), generation: over.known.generation === held.generation }
          : undefined;
        if (known) va.overs.push(known);
        // Over a status known right, the workflow's conditions; otherwise the ones the read finds.
        const conditions =
          known?.status && known.generation
            ? over!.conditions
            : carriedConditions(
                held.status?.conditions,
                held.generation,
                report.phase,
                report.reason,
                report.message,
                new Date(),
              );
        va.held = {
          generation: held.generation,
          status: mergePatched(held.status ?? {}, {
            ...activationStatus(report),
            observedGeneration: held.generation,
            conditions,
          }) as WorkflowStatus,
        };
        // A JSON merge patch of the status: fields the report leaves out keep their value.
        va.status = { ...va.status, ...structuredClone(report) };
        va.writes.push(structuredClone(report));
        this.log(`status ${ref.name} ${report.phase}`);
        return !va.deleting;
      },
      addCloseOutFinalizer: async (ref) => this.setFinalizer(ref, true),
      removeCloseOutFinalizer: async (ref) => this.setFinalizer(ref, false),

      // landscape-report.ts: landscape reports run on real servers (test/landscapes.test.ts)
      landscapeReportRound: async () => ({ exists: false as const }),
      writeLandscapeReports: async () => false,

      // breaker.ts: no CircuitBreaker here (test/circuit-breaker.test.ts runs the real ones)
      breakersApply: async () => false,
      admitActivation: async () => ({ admitted: true, limited: false }),
      recordActivationFailure: async () => undefined,

      // plan.ts
      placeTasks: async (plan, namespace, stage, landscape, puttingBack) => {
        const allowances = [...this.landscapes].map(([name, allowedNamespaces]) => ({ name, allowedNamespaces }));
        const placement = placementOf(
          { namespace, name: stage, landscape },
          allowances,
          this.systemNamespace,
          puttingBack,
        );
        if ('refused' in placement) throw ApplicationFailure.nonRetryable(placement.refused, 'LandscapeRefused');
        return placedPlan(plan, placement.landscape);
      },
      resolvePlan: async (planName, namespace): Promise<ResolvedPlan> => {
        const sys = this.systemNamespace;
        const task = (name: string): PlannedTask => {
          const reg = this.registrations.get(name);
          if (!reg)
            throw ApplicationFailure.nonRetryable(
              `ActivationTaskRegistration ${sys}/${name} does not exist`,
              'InvalidPlan',
            );
          return {
            registration: name,
            type: reg.type,
            executor: reg.executor ?? 'Worker',
            // The fake executor reads the registration's name from its config.
            config: { registration: name },
            timeoutSeconds: reg.timeoutSeconds,
            ...(reg.heartbeatTimeoutSeconds ? { heartbeatTimeoutSeconds: reg.heartbeatTimeoutSeconds } : {}),
            crossNamespaceAllowed: reg.crossNamespaceAllowed ?? false,
          };
        };
        const name = planName ?? 'default';
        const plan = this.plans.get(name);
        if (!plan && planName)
          throw ApplicationFailure.nonRetryable(
            `ActivationExecutionPlan ${sys}/${planName} does not exist`,
            'InvalidPlan',
          );
        if (plan) {
          return {
            source: `plan ${sys}/${name}`,
            onFailure: plan.onFailure,
            steps: plan.steps.map((s) => ({ name: s.name, tasks: s.tasks.map(task) })),
            ...(plan.progression
              ? { progression: structuredClone(plan.progression), analyses: structuredClone(plan.analyses ?? []) }
              : {}),
          };
        }
        void namespace;
        const regs = [...this.registrations.keys()].sort((a, b) => a.localeCompare(b));
        if (regs.length === 0)
          throw ApplicationFailure.nonRetryable(
            `no ActivationExecutionPlan and no ActivationTaskRegistration in ${sys}`,
            'InvalidPlan',
          );
        return {
          source: 'every registration, in name order (no plan)',
          onFailure: 'Stop',
          steps: regs.map((r) => ({ name: r, tasks: [task(r)] })),
        };
      },

      // usages.ts
      readActiveStageVersion: async (namespace, stage) => this.activeUsages.get(key(namespace, stage)),
      holdActivationUsage: async (ref, stage, stageVersion) => {
        void stage;
        const k = key(ref.namespace, activationUsageName(ref.name));
        const existing = this.activationUsages.get(k);
        // createOwned: a predecessor's usage of the same name is replaced; our own is kept as is.
        if (existing?.owner === ref.uid) return `usage-of-${ref.uid}`;
        this.activationUsages.set(k, { owner: ref.uid, stageVersion });
        this.log(`hold ${ref.name} ${stageVersion}`);
        return `usage-of-${ref.uid}`;
      },
      releaseActivationUsage: async (ref) => {
        const k = key(ref.namespace, activationUsageName(ref.name));
        if (this.activationUsages.get(k)?.owner !== ref.uid) return;
        this.activationUsages.delete(k);
        this.log(`release ${ref.name}`);
      },
      pointActiveUsage: async (namespace, stage, stageUid, stageVersion) => {
        void stageUid;
        this.activeUsages.set(key(namespace, stage), stageVersion);
        this.log(`active ${stage} ${stageVersion}`);
      },

      // executions.ts
      createExecution: async (e) => {
        const k = key(e.activation.namespace, e.name);
        const existing = this.executions.get(k);
        if (existing?.owner === e.activation.uid) return;
        const status: FakeExecution['status'] =
          e.initial === 'none'
            ? {}
            : typeof e.initial === 'object'
              ? structuredClone(e.initial)
              : { phase: 'Pending', message: 'waiting for its executor' };
        this.executions.set(k, { spec: structuredClone(e), owner: e.activation.uid, status });
        this.log(`execution ${e.name} created`);
      },
      writeExecutionStatus: async (namespace, name, w) => {
        const ae = this.executions.get(key(namespace, name));
        // A final phase is final: whoever wrote it first decided it.
        if (!ae || final(ae.status.phase)) return;
        ae.status = { ...ae.status, ...structuredClone(w), reason: w.reason ?? w.phase };
        this.log(`execution ${name} ${w.phase}`);
      },
      endExecutions: async (ref, message) => {
        for (const [k, ae] of this.executions) {
          if (ae.owner !== ref.uid || final(ae.status.phase)) continue;
          ae.status = { ...ae.status, phase: 'Error', reason: 'Cancelled', message: `cancelled: ${message}` };
          this.log(`execution ${k.split('/')[1]} Error`);
        }
      },
      recordExecution: async (i) => {
        const ae = this.executions.get(key(i.namespace, i.name));
        if (!ae || final(ae.status.phase)) throw ApplicationFailure.nonRetryable(`${i.name} is gone or ended`);
        ae.recorded = true;
        ae.status = { ...ae.status, phase: 'InProgress', message: i.takenUp };
        this.log(`record ${i.name} by the core`);
        return i.rules;
      },
      readExecutionRecord: async (namespace, name) => {
        const ae = this.executions.get(key(namespace, name));
        return ae?.recorded
          ? { rules: [FAKE_RULE], ...(ae.spec.assignment ? { assignment: ae.spec.assignment } : {}) }
          : undefined;
      },
      recordedExecutions: async (namespace, names) =>
        names.filter((n) => this.executions.get(key(namespace, n))?.recorded),
      executionRecords: async (namespace, names) => ({
        recorded: names.filter((n) => this.executions.get(key(namespace, n))?.recorded),
        gone: names.filter((n) => !this.executions.has(key(namespace, n))),
      }),
      awaitExternalExecution: async (namespace, name) => {
        const ctx = Context.current();
        for (;;) {
          const ae = this.executions.get(key(namespace, name));
          if (!ae)
            throw ApplicationFailure.nonRetryable(
              `ActivationExecution ${namespace}/${name} was deleted`,
              'ExecutionDeleted',
            );
          if (final(ae.status.phase)) return { phase: ae.status.phase, message: ae.status.message ?? '' };
          ctx.heartbeat(ae.status.phase);
          await ctx.sleep(50);
        }
      },

      // stage-versions.ts
      describeStage: async (namespace, stage, stageVersion, o = {}): Promise<StageState> => {
        const st = this.stages.get(key(namespace, stage));
        const lost = stageLoss(
          namespace,
          stage,
          st && { uid: st.uid, deleting: st.deleting === true && !o.puttingBack },
          o.stageUid,
        );
        if (lost || !st) throw ApplicationFailure.nonRetryable(lost!.message, lost!.reason);
        const all = [...this.stageVersions.values()].filter((sv) => sv.namespace === namespace);
        const stageVersions: StageVersionInfo[] = all
          .filter((sv) => sv.stage === stage)
          .map((sv) => ({ name: sv.name, revision: sv.revision, vector: sv.vector }))
          .sort((a, b) => a.revision - b.revision);
        const target = stageVersions.find((sv) => sv.name === stageVersion);
        if (!target) {
          const other = all.find((sv) => sv.name === stageVersion);
          throw ApplicationFailure.nonRetryable(
            other
              ? `StageVersion ${namespace}/${stageVersion} belongs to Stage ${other.stage}, not ${stage}`
              : `StageVersion ${namespace}/${stageVersion} does not exist`,
            'StageVersionNotFound',
          );
        }
        return { stageUid: st.uid, stageVersions, target, ...(st.landscape ? { landscape: st.landscape } : {}) };
      },
      checkStage: async (namespace, stage, stageUid) => {
        const st = this.stages.get(key(namespace, stage));
        return stageLoss(namespace, stage, st && { uid: st.uid, deleting: st.deleting === true }, stageUid);
      },
      markStageVersion: async (namespace, name, holder) => {
        const sv = this.stageVersions.get(key(namespace, name));
        if (sv) {
          sv.activatedBy = holder;
          this.log(`mark ${name} ${holder}`);
        }
        return { terminating: !sv || Boolean(sv.deleting) };
      },
      markDraining: async (namespace, name, stage) => {
        const sv = this.stageVersions.get(key(namespace, name));
        if (sv) {
          sv.serving = stage;
          sv.drainSince = new Date().toISOString();
        }
        this.log(`draining ${name}`);
      },
      markServing: async (namespace, name, stage) => {
        const sv = this.stageVersions.get(key(namespace, name));
        if (!sv) return;
        if (stage === null) delete sv.serving;
        else sv.serving = stage;
        this.log(`serving ${name} ${stage}`);
      },
      serveInstead: async (namespace, name, stage, holder) => {
        const sv = this.stageVersions.get(key(namespace, name));
        if (!sv) return;
        sv.serving = stage;
        this.log(`serving ${name} ${stage}`);
        if (sv.activatedBy !== holder) return;
        delete sv.activatedBy;
        this.log(`unmark ${name}`);
      },
      unmarkStageVersion: async (namespace, name, holder) => {
        const sv = this.stageVersions.get(key(namespace, name));
        if (sv?.activatedBy !== holder) return;
        delete sv.activatedBy;
        this.log(`unmark ${name}`);
      },

      // lease.ts
      acquireStageLease: async (namespace, stage, stageUid, holder, _duration, whenTakeable) => {
        const k = key(namespace, stage);
        const lease = this.leases.get(k) ?? { stageUid, holders: [] };
        if (lease.holder && lease.holder !== holder) {
          throw ApplicationFailure.retryable(
            `Lease ${namespace}/${stageLeaseName(stage)} of Stage ${stage} is held by ${lease.holder}; waiting for it to be released or to expire`,
            STAGE_LEASE_HELD,
          );
        }
        whenTakeable?.(); // as the real one: found takeable, the caller's reads start beside the write
        if (lease.holder !== holder) lease.holders.push(holder);
        lease.holder = holder;
        this.leases.set(k, lease);
        this.log(`lease ${stage} taken by ${holder}`);
      },
      keepStageLease: async (namespace, stage, holder) => {
        // Renews until cancelled, heartbeating so that the cancellation reaches it. The real one
        // also ends when another holder took the Lease over; it notices a Lease merely released
        // only at its next renewal (20 s), long after the workflow cancelled it, so this fake does
        // not end on a release: ending while the workflow task that cancels it is in flight makes
        // the test server refuse that task (ACTIVITY_UNKNOWN) and wedges the workflow.
        const ctx = Context.current();
        for (;;) {
          const lease = this.leases.get(key(namespace, stage));
          if (lease?.holder && lease.holder !== holder)
            return `activation ${holder} lost the Lease of Stage ${stage} to ${lease.holder}`;
          ctx.heartbeat();
          await ctx.sleep(50);
        }
      },
      releaseStageLease: async (namespace, stage, holder) => {
        const lease = this.leases.get(key(namespace, stage));
        if (lease?.holder !== holder) return;
        delete lease.holder;
        this.log(`lease ${stage} released by ${holder}`);
      },
      renewStageLease: async (namespace, stage, holder, seconds) => {
        if (this.leases.get(key(namespace, stage))?.holder === holder)
          this.log(`lease ${stage} held ${seconds}s by ${holder}`);
      },
    };
  }

  // --- the executor ---------------------------------------------------------------------------

  /** `executeTask` for the executor worker(s) of type `fake`, behaving as `behave` said. */
  executorActivities(): ExecutorActivities {
    return {
      executeTask: async (input: TaskInput): Promise<ExecutedTask> => {
        const ctx = Context.current();
        const { registration, call } = this.callOf(input);
        this.log(`execute ${call.execution} start`);
        const behaviour = this.nextBehaviour(registration, input.action);
        const execution = this.executions.get(key(input.execution.namespace, input.execution.name));
        // An Apply takes its execution up with its record (activities/traffic-record.ts).
        if (input.action === 'Apply' && execution && !(behaviour.kind === 'fail' && behaviour.unrecorded)) {
          execution.recorded = true;
          if (!final(execution.status.phase)) execution.status = { ...execution.status, phase: 'InProgress' };
        }
        try {
          if (behaviour.kind === 'fail') {
            throw behaviour.retryable
              ? ApplicationFailure.retryable(behaviour.message, 'ExecutorError')
              : ApplicationFailure.nonRetryable(behaviour.message, 'ExecutorError');
          }
          if (behaviour.kind === 'work' || behaviour.kind === 'hang') {
            const end = behaviour.kind === 'work' ? Date.now() + behaviour.seconds * 1000 : Infinity;
            while (Date.now() < end) {
              ctx.heartbeat();
              // Rejects with CancelledFailure once a heartbeat brought the cancellation back.
              await ctx.sleep(Math.min(50, end - Date.now()));
            }
          }
          call.outcome = 'succeeded';
          const done =
            input.action === 'Apply'
              ? `traffic to ${Object.entries(input.assignment ?? {})
                  .map(([n, w]) => `${n}:${w}`)
                  .join('+')}`
              : `put back what ${input.revertOf} found`;
          const message =
            behaviour.kind === 'succeed' && behaviour.message ? behaviour.message : `${registration}: ${done}`;
          if (behaviour.kind === 'succeed' && behaviour.leavesRecord) return { message };
          // The executor writes its execution's final status itself (activities/execute-task.ts).
          if (execution && !final(execution.status.phase)) {
            execution.status = { ...execution.status, phase: 'Succeeded', reason: 'Succeeded', message };
            this.log(`execution ${call.execution} Succeeded by its executor`);
          }
          return { message, completed: true };
        } catch (err) {
          call.outcome = err instanceof CancelledFailure ? 'cancelled' : 'failed';
          throw err;
        } finally {
          call.endedAt = Date.now();
          this.log(`execute ${call.execution} ${call.outcome}`);
        }
      },
    };
  }

  /** An executor's call of `input`, recorded in executorCalls as it starts (the fake reads the registration from its config). */
  private callOf(input: TaskInput): { registration: string; call: ExecutorCall } {
    const registration = (input.config as { registration: string }).registration;
    const call: ExecutorCall = {
      registration,
      action: input.action,
      execution: input.execution.name,
      stageVersion: input.stageVersion.name,
      ...(input.previousStageVersion ? { previousStageVersion: input.previousStageVersion.name } : {}),
      ...(input.assignment ? { assignment: input.assignment } : {}),
      ...(input.revertOf ? { revertOf: input.revertOf } : {}),
      ...(input.earlier ? { earlier: input.earlier } : {}),
      ...(input.unmovedOnly ? { unmovedOnly: true } : {}),
      ...(input.unmovedAlso ? { unmovedAlso: input.unmovedAlso } : {}),
      attempt: Context.current().info.attempt,
      startedAt: Date.now(),
      outcome: 'running',
    };
    this.executorCalls.push(call);
    return { registration, call };
  }

  /**
   * A landscape's fake worker: it sees the landscape's routes only, so it writes nothing of the
   * control plane (this fake's executions): it observes, and it changes the routes once the core
   * wrote the record; a revert is given its record. Its calls go to executorCalls as the others'.
   */
  landscapeExecutorActivities(landscape: string): LandscapeExecutorActivities {
    return {
      observeTask: async (input: TaskInput) => {
        this.log(`observe ${input.execution.name} in ${landscape}`);
        return [FAKE_RULE];
      },
      // Reports run on real servers (test/landscapes.test.ts).
      reportRoutes: async () => ({ stages: [] }),
      executeTask: async (input: TaskInput): Promise<ExecutedTask> => {
        const { registration, call } = this.callOf(input);
        this.log(`execute ${call.execution} in ${landscape} start${input.record ? ' with its record' : ''}`);
        const behaviour = this.nextBehaviour(registration, input.action);
        try {
          if (input.action === 'Apply' && input.recorded !== true)
            throw ApplicationFailure.nonRetryable('an Apply without the record of the core', 'ExecutorError');
          if (behaviour.kind === 'fail')
            throw behaviour.retryable
              ? ApplicationFailure.retryable(behaviour.message, 'ExecutorError')
              : ApplicationFailure.nonRetryable(behaviour.message, 'ExecutorError');
          call.outcome = 'succeeded';
          return { message: `${registration}: ${input.action} in ${landscape}` };
        } catch (err) {
          call.outcome = 'failed';
          throw err;
        } finally {
          call.endedAt = Date.now();
          this.log(`execute ${call.execution} in ${landscape} ${call.outcome}`);
        }
      },
    };
  }
}

/**
 * What a call's arguments say through Temporal: without what only a composite passes in the same
 * process (a callback, a read begun beside other requests), which never crosses Temporal.
 */
function recordable(args: unknown[]): unknown[] {
  const through = args.filter((a) => typeof a !== 'function' && !(a instanceof Promise));
  while (through.length > 0 && through.at(-1) === undefined) through.pop();
  return through;
}
