/**
 * One activation's run, reading like ADR-0012's sequence: acquire the Stage → decide (on the
 * Stage's state read after the grant) → run the plan's steps → complete. The class holds what the
 * run knows (its progress, the previous StageVersion, its marks); every decision is a pure function
 * of decisions/, and the methods observe, ask and act.
 */
import { ApplicationFailure, CancellationScope, condition, isCancellation, patched, setCurrentDetails, sleep, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { LoadedActivation, ResolvedPlan } from '../activities/core.js';
import type { VectorActivationPhase } from '../api/vector-activation.js';
import {
  activationStatus,
  closedOutProgress,
  failureEnding,
  initialProgress,
  isFinal,
  lastRanStep,
  orderVerdict,
  releasesUsage,
  startedStep,
  stepOutcome,
  stepsToRun,
  stoppedEnding,
  taskProgressOf,
  type ActivationReport,
  type Ending,
  type StepProgress,
} from '../decisions/activation.js';
import { SUPERSEDED_REASON } from '../decisions/supersede.js';
import { statusWrite, type KnownStatus, type StatusOver } from '../decisions/status-write.js';
import { applyAssignment, restoreOrder, weightOf } from '../decisions/traffic.js';
import { progressionWeights } from '../decisions/progression.js';
import { Progression, type ProgressionHost } from './progression.js';
import type { StageVersionInfo } from '../api/stage-version.js';
import { holderOf, type ActivationProgress, type ActivationRef } from '../shared/activation.js';
import { kubeTime as now, temporalWorkflowUrl } from '../shared/format.js';
import { ACTIVATION_PHASE } from '../shared/search-attributes.js';
import { heartbeatSecondsOf, k8sActivities as k8s, runTask, unrecordedMessage, type Recording, type TaskContext } from './activation-tasks.js';
import { executionName } from '../shared/names.js';
import type { ActivationRequests } from './activation-requests.js';
import { BREAKER_ASK_AGAIN_SECONDS, passBreakers } from './breaker-gate.js';
import { countsOnBreakers } from '../decisions/breaker.js';
import { causeOf, messageOf, stageLossOf } from './failures.js';
import { StageAccess } from '../stage-lock/client.js';

export interface RunOptions {
  /** Base URL of the Temporal UI, for the link in the VectorActivation's status. */
  uiUrl?: string;
  /** Appended to executor task queue names (tests isolate their workers this way). */
  queueSuffix?: string;
  /** How often a waiting activation asks its Stage's lock again (default 120 s; tests shorten it). */
  lockAskAgainSeconds?: number;
  /** How long an activation waits for another holder's Stage Lease before it fails (default LEASE_WAIT_SECONDS, workflows/policies.ts). */
  leaseWaitSeconds?: number;
}

export class ActivationRun {
  readonly progress: ActivationProgress & { steps: StepProgress[] };
  private readonly holder: string;
  private readonly access: StageAccess;
  private readonly workflowUrl: string | undefined;
  private firstError: string | undefined;
  private startTime: string | undefined;
  private previous: StageVersionInfo | undefined;
  /** Whether this run may have set the close-out finalizer (startRun, or a close-out run). */
  private kept = false;
  /** Whether this attempt ran a step, or closes out a run that did: it changed, or tried to change, routing. */
  private routing = false;
  /** The StageVersion this run marked as in activation (admission refuses changes to it). */
  private marked: string | undefined;
  /** The activation usage as this run created it (its uid), for a release without a read. */
  private usageUid: string | undefined;
  /** What the active usage pointed at when read under the Lease (null: none). */
  private active: string | null = null;
  /** The uid of the Stage this attempt validated: every later read of the Stage must find this one. */
  private stageUid: string | undefined;
  /** The ActivationPhase search attribute as last upserted. */
  private upsertedPhase: string | undefined;
  /** The progression, while one runs: its report goes into every status written. */
  private progression: Progression | undefined;
  /** The final status writes of a step's executions, made while the next step runs (runStep). */
  private readonly recordings: Recording[] = [];
  /**
   * What the object holds of the status this run writes, as far as it knows (read when it started,
   * then what it wrote): each write goes over it without a read. Undefined once a write failed or
   * found the object gone or being deleted: every later write reads first.
   */
  private known: KnownStatus | undefined;

  constructor(
    private readonly ref: ActivationRef,
    private readonly va: LoadedActivation,
    private readonly requests: ActivationRequests,
    progress: ActivationProgress & { steps: StepProgress[] },
    private readonly options: RunOptions,
  ) {
    const info = workflowInfo();
    this.progress = progress;
    this.holder = holderOf(ref);
    this.access = new StageAccess(ref.namespace, va.stage, this.holder, options.lockAskAgainSeconds, options.leaseWaitSeconds);
    this.workflowUrl = options.uiUrl ? temporalWorkflowUrl(options.uiUrl, info.namespace, info.workflowId) : undefined;
    this.firstError = va.status.firstError;
    this.startTime = va.status.startTime;
    this.known = va.known;
  }

  // --- one attempt: from the Stage's lock to a final phase ----------------------------------

  async attempt(retry: boolean): Promise<Ending> {
    const { va, access } = this;
    // A progression of an attempt before is no more: answers wait for this attempt's own.
    this.progression = undefined;
    this.routing = false;
    this.requests.progression = undefined;
    this.requests.answer = undefined;
    // The check reads while Pending is written; a failed check is written after it, as Failed.
    const validating = this.report('Pending', 'Validating', `checking Stage ${va.stage} and StageVersion ${va.stageVersion}`);
    const [written, described] = await Promise.allSettled([validating, k8s.describeStage(this.ref.namespace, va.stage, va.stageVersion)]);
    if (written.status === 'rejected') throw written.reason;
    if (described.status === 'rejected') return this.fail(described.reason);
    const before = described.value;
    this.stageUid = before.stageUid;
    this.requests.knowStage(before.stageUid);
    const lock = await access.acquire(
      before.target.revision,
      () => this.requests.cancelled,
      () => this.report('Waiting', 'WaitingForStage', `waiting for Stage ${va.stage} (lock ${access.lockId})`),
    );
    if (lock === 'superseded') return this.finish({ phase: 'Skipped', reason: SUPERSEDED_REASON, message: `superseded while waiting by the newer activation ${access.supersededBy}` });
    if (lock === 'cancelled') return this.finish(this.stopped(`while waiting for Stage ${va.stage}`));
    try {
      return await this.withStage(retry, before.stageUid);
    } catch (err) {
      // Bookkeeping that failed for good (a refused write, retries exhausted): say so and let go.
      if (isCancellation(err)) throw err;
      return this.fail(err);
    } finally {
      await this.letGo();
    }
  }

  private async withStage(retry: boolean, stageUid: string): Promise<Ending> {
    const { va } = this;
    // ADR-0012 steps 2–3: the Lease, then the Stage's state read now, after the grant; never what
    // was read while waiting (a newer version may have become active meanwhile).
    let taken;
    try {
      const read = { stageVersion: va.stageVersion, ...(va.executionPlan ? { executionPlan: va.executionPlan } : {}), ...(va.created ? { created: va.created } : {}) };
      taken = await this.access.takeStage(stageUid, read, (message) => this.report('Waiting', 'WaitingForLease', message));
    } catch (err) {
      // Validated before the wait, the Stage is gone now (read here, or told while the Lease was
      // waited for): the activation stops, as when the watcher says so.
      if (!patched('stage-checks')) return this.fail(err);
      const lost = stageLossOf(err);
      // The Lease waited for in vain (a foreign holder, or a Lease its Stage took along) may be the
      // Stage's loss too: a signal cannot reach the run inside that wait, so the Stage is read.
      if (lost) this.requests.stageGone(lost);
      else await this.stageStillOurs();
      if (this.requests.stageLost === undefined) return this.fail(err);
      return this.finish(this.stopped('before its first step'));
    }
    const { plan, stage, activeName, guarded } = taken;
    this.active = activeName ?? null;
    // A retry starts from the truth: "previous" is what is active now, and every step runs again
    // (one whose routes hold its assignment already changes nothing).
    const verdict = orderVerdict({ stage: va.stage, target: stage.target, activeName, stageVersions: stage.stageVersions, retry });
    if (!verdict.run) return this.finish(verdict);
    this.previous = verdict.previous;
    const toRun = stepsToRun(plan, this.progress.steps);
    if ('error' in toRun) return this.finish({ phase: 'Failed', reason: 'PlanChanged', message: toRun.error });
    /** What ran in earlier attempts, before this one starts its steps anew: a retried task may keep their record. */
    const earlier = this.ranExecutions();
    if (this.progress.steps.length === 0) this.progress.steps = initialProgress(plan);

    // CircuitBreakers (docs/scale.md): the first routing change of this attempt waits while one is
    // Open or out of tokens, holding the Stage; later steps ask again only under a rate limit.
    let limited = false;
    if (toRun.run.length > 0 && guarded) {
      const gate = await this.passBreakers(toRun.run[0]!, true);
      // A breaker may have held it for long: the Stage is read again before the first route write.
      if (!gate.admitted || !(await this.stageStillOurs())) return this.finish(this.stopped('while waiting at a CircuitBreaker'));
      limited = gate.limited;
    }

    // A cancel (or the Stage's loss) heard while the Stage was taken: nothing is held or marked for it.
    if (this.requests.cancelled && patched('stage-checks')) return this.finish(this.stopped('before its first step'));
    if (plan.progression) this.progression = this.progressionOf(plan, stage, limited);
    const started = toRun.run.length > 0 && (await this.startRun(plan, toRun.run[0]!, stage.target.name));
    if (started === 'terminating') return this.finish({ phase: 'Failed', reason: 'StageVersionTerminating', message: `StageVersion ${stage.target.name} is being deleted` });
    if (typeof started === 'object') return this.finish({ phase: 'Failed', reason: 'NameTaken', message: `${started.refused}; no route was changed` });
    if (started === 'gone') {
      this.requests.deleted();
      return this.finish({ phase: 'Cancelled', reason: 'Cancelled', message: 'the VectorActivation was deleted before its first step; no route was changed' });
    }

    const ctx = this.taskContext(stage, Object.keys(earlier).length ? { earlier } : {});
    if (this.progression) {
      const outcome = await this.progression.run();
      if (outcome !== 'switch') return this.finish(outcome);
    } else {
      for (const [n, i] of toRun.run.entries()) {
        // Cancelled between steps, or the Stage gone: what ran is reverted as after a cancelled step.
        if (limited && n > 0 && !(await this.passBreakers(i, false)).admitted) return this.finish(await this.failure(plan, ctx, i));
        if (n > 0 && !(await this.stageStillOurs())) return this.finish(await this.failure(plan, ctx, i, { where: `before step ${plan.steps[i]!.name}` }));
        if (await this.runStep(plan, ctx, i, n === 0, n < toRun.run.length - 1)) return this.finish(await this.failure(plan, ctx, i));
      }
    }
    const switched = await this.switchServing(plan, stage);
    if (switched.stageLost) {
      this.requests.stageGone(switched.stageLost);
      return this.finish(await this.failure(plan, ctx, Math.max(lastRanStep(this.progress.steps), 0), { where: 'before the switch' }));
    }
    const { previous } = this;
    return this.finish({ phase: 'Succeeded', reason: 'Activated', message: `Stage ${va.stage} now serves ${stage.target.name}${previous ? ` (was ${previous.name})` : ''}` });
  }

  private passBreakers(step: number, first: boolean) {
    const wait = Math.min(BREAKER_ASK_AGAIN_SECONDS, this.options.lockAskAgainSeconds ?? BREAKER_ASK_AGAIN_SECONDS);
    const phase = first ? 'Waiting' : 'InProgress';
    return passBreakers(this.ref, this.progress.attempt, step, first, (w) => this.report(phase, w.reason, w.message), () => this.requests.cancelled, wait);
  }

  /**
   * ADR-0012 step 4 and requirement 4, together: one local activity holds the usage, marks the
   * StageVersion in activation and only then writes the first step's InProgress. Never beside
   * them: that would tell a step started (Events, metrics) that then never runs.
   */
  private async startRun(plan: ResolvedPlan, first: number, target: string): Promise<'started' | 'terminating' | 'gone' | { refused: string }> {
    this.marked = target;
    const steps: StepProgress[] = [...this.progress.steps];
    steps[first] = startedStep(plan.steps[first]!, steps[first]!);
    const begun = this.startTime ?? now();
    const message = this.stepMessage(plan, first);
    const status = this.statusOf('InProgress', 'RunningPlan', message, steps, begun);
    this.kept = true;
    const { over, settle } = this.writing(status);
    const starting = CancellationScope.nonCancellable(() => k8s.startRun({ ref: this.ref, stage: this.va.stage, target, holder: this.holder, status, ...(over ? { over } : {}) }));
    const run = await settle(starting, (r) => !r.terminating && !r.refused && !r.gone);
    if (run.terminating) return 'terminating';
    if (run.gone) return 'gone';
    if (run.refused) return { refused: run.refused };
    this.usageUid = run.usageUid;
    this.progress.steps = steps;
    this.startTime = begun;
    this.noteReport('InProgress', 'RunningPlan', message);
    return 'started';
  }

  /**
   * ADR-0012 step 9, in one local activity: the new version is marked serving and the active usage
   * moves to it before anything is taken from the old one, so the serving version is never unheld.
   * The previous StageVersion stays marked serving: with a share left by a registration's weight
   * until no managed route sends it traffic; with none, it drains (a gateway may still send it
   * requests) and the Stage controller takes the mark once the Stage's drain has passed.
   */
  private async switchServing(plan: ResolvedPlan, { stageUid, target: { name: target }, stageVersions }: { stageUid: string; target: StageVersionInfo; stageVersions: StageVersionInfo[] }): Promise<{ stageLost?: string }> {
    const { previous } = this;
    const previousKeeps = !plan.progression && plan.steps.some((st) => st.tasks.some((t) => weightOf(t.config) < 100));
    // The previous one keeps its mark either way; with no share left it starts to drain.
    const old = previous ? (previousKeeps ? { stillServing: previous.name } : { previous: previous.name }) : {};
    const uids = Object.fromEntries(stageVersions.flatMap((sv) => (sv.uid ? [[sv.name, sv.uid]] : [])));
    const revisions = Object.fromEntries(stageVersions.map((sv) => [sv.name, sv.revision]));
    const known = { active: this.active, uids, revisions, ...(this.usageUid ? { usageUid: this.usageUid } : {}) };
    // A switch recorded before it could find the Stage gone returned nothing: it switched.
    const switched = (await k8s.switchServing({ ref: this.ref, stage: this.va.stage, stageUid, target, ...old, holder: this.holder, ...known })) ?? {};
    if (!switched.stageLost) this.marked = undefined; // the active usage holds the target now
    return switched;
  }

  /**
   * Whether the Stage this attempt validated is still there, read now (before a route write, or
   * when a gate or an analysis wakes the run); gone or being deleted, the run is stopped as by a
   * cancel and ends StageDeleted. The watcher usually says so sooner (stageDeletedSignal).
   */
  private async stageStillOurs(): Promise<boolean> {
    if (this.requests.stageLost === undefined && this.stageUid !== undefined && patched('stage-checks')) {
      const lost = await k8s.checkStage(this.ref.namespace, this.va.stage, this.stageUid);
      if (lost) this.requests.stageGone(lost.message);
    }
    return this.requests.stageLost === undefined;
  }

  /** How the attempt ends when it stops `where` before a step ran: cancelled, or its Stage gone. */
  private stopped(where: string): Ending {
    return stoppedEnding(where, this.requests.stopCause() ?? {});
  }

  // --- a step -------------------------------------------------------------------------------

  /**
   * Runs step i (its tasks together); true when it failed (or was cancelled): the caller ends the attempt.
   * `started`: its InProgress is written already (with the hold and the mark). `followed`: another
   * step comes, and the final status of this step's executions is written while it runs; it
   * checks those writes as its own, so a record that fails fails a step, and what ran is reverted.
   * The last step's records are awaited in place: the switch follows only what is recorded.
   */
  private async runStep(plan: ResolvedPlan, ctx: TaskContext, i: number, started: boolean, followed: boolean): Promise<boolean> {
    const step = plan.steps[i]!;
    this.routing = true;
    const recordingsBefore = this.recordings.splice(0);
    /** The step's InProgress write, made while its executions are created (one round trip fewer a step). */
    let reporting: Promise<{ error?: unknown }> | undefined;
    if (!started) {
      this.progress.steps[i] = startedStep(step, this.progress.steps[i]!);
      // Settled into a value at once: a rejection left waiting would fail the workflow task.
      reporting = this.report('InProgress', 'RunningPlan', this.stepMessage(plan, i)).then(() => ({}), (error: unknown) => ({ error }));
    }
    const stepProgress = this.progress.steps[i]!;

    const scope = new CancellationScope();
    const running = scope.run(() => Promise.all(step.tasks.map((t) => runTask(ctx, i, step.name, t, 'Apply', followed ? this.recordings : undefined))));
    await Promise.race([running, condition(() => this.requests.cancelled)]).catch((err: unknown) => {
      // The whole workflow was cancelled (Temporal UI/CLI): its executions are being cancelled too.
      if (!isCancellation(err)) throw err;
      this.requests.cancel ??= { reason: 'the workflow was cancelled in Temporal' };
    });
    if (this.requests.cancelled) scope.cancel();
    // Every execution reaches a final state before the activation does (ADR-0012).
    const outcomes = await running;
    stepProgress.tasks = taskProgressOf(outcomes);
    stepProgress.phase = stepOutcome(outcomes, this.requests.cancelled);
    // The step's InProgress could not be written while its executions ran: the activation cannot
    // go on saying nothing, so it ends as a failed step does (reverted under onFailure Revert).
    const reported = await reporting;
    const unwritten = reported && 'error' in reported ? messageOf(reported.error) : undefined;
    const unrecorded = (await Promise.all(recordingsBefore)).find((r) => 'error' in r);
    if (stepProgress.phase === 'Succeeded' && !unwritten && !unrecorded) return false;
    const failed = outcomes.find((o) => !o.ok);
    if (unrecorded) this.firstError ??= unrecordedMessage(unrecorded);
    if (failed) this.firstError ??= `step ${step.name}, task ${failed.registration}: ${failed.message}`;
    if (unwritten) this.firstError ??= `step ${step.name}: its InProgress status could not be written: ${unwritten}`;
    return true;
  }

  /**
   * How an attempt ends after step i failed or was cancelled: reverted under Revert (every step up to
   * `through`: a progression's earlier rounds applied the steps after i too), else left applied.
   */
  private async failure(plan: ResolvedPlan, ctx: TaskContext, i: number, o: { through?: number; where?: string } = {}): Promise<Ending> {
    const { through = i, where } = o;
    const step = plan.steps[i]!;
    const revert = plan.onFailure === 'Revert' ? await this.revertSteps(plan, ctx, through) : undefined;
    // Left applied (Stop): which refused tasks recorded a rule, and so may have changed it.
    const refused = revert ? [] : (this.progress.steps[i]?.tasks ?? []).flatMap((t) => (t.phase === 'Error' && t.execution ? [t.execution] : []));
    // An execution that is gone took its record along: it may have changed its rules.
    const records = refused.length ? await this.recordsOf(refused) : undefined;
    const recorded = records ? { recorded: [...records.recorded, ...records.gone] } : {};
    const { firstError } = this;
    const cancelled = this.requests.stopCause();
    return failureEnding({
      step: step.name,
      ...(where ? { where } : {}),
      ...(firstError ? { firstError } : {}),
      ...(cancelled ? { cancelled } : {}),
      onFailure: plan.onFailure,
      ...(revert ? { revert } : {}),
      progress: this.progress.steps,
      ...recorded,
    });
  }

  // --- a progression: the plan's steps at each weight, gates between ------------------------

  /**
   * The plan's progression (workflows/progression.ts), with the round, the restore and the status
   * writes it asks of this run; its run() is 'switch' once the target has all the traffic, else
   * how the attempt ends (not yet written).
   */
  private progressionOf(plan: ResolvedPlan, stage: { target: StageVersionInfo; stageVersions: StageVersionInfo[] }, limited: boolean): Progression {
    const { ref, va } = this;
    let started = false;
    const ran = () => lastRanStep(this.progress.steps);
    const context = (round?: { weight: number; index: number }) => this.taskContext(stage, { earlier: this.ranExecutions(), ...(round ? { round } : {}) });
    const host: ProgressionHost = {
      requests: this.requests,
      phase: () => this.progress.phase,
      round: async (weight, index, down, followed) => {
        const ctx = context({ weight, index });
        const order = plan.steps.map((_, i) => i);
        if (down) order.reverse();
        for (const [n, i] of order.entries()) {
          if (limited && started && !(await this.passBreakers(i, false)).admitted) return this.failure(plan, ctx, i, { through: Math.max(i, ran()) });
          // Every route write but the attempt's first (read under the Lease just before) reads the
          // Stage first; an abort's way back reads it itself (Progression.abort).
          if (started && !down && !(await this.stageStillOurs())) return this.failure(plan, ctx, i, { through: Math.max(i, ran()), where: `before step ${plan.steps[i]!.name} at ${weight} %` });
          const first = !started;
          started = true;
          if (await this.runStep(plan, ctx, i, first, followed || n < order.length - 1)) return this.failure(plan, ctx, i, { through: Math.max(i, ran()) });
        }
        return undefined;
      },
      restore: () => this.revertSteps(plan, context(), ran()),
      cancelled: (where) => this.failure(plan, context(), Math.max(ran(), 0), { where }),
      report: (reason, message) => this.report('InProgress', reason, message),
      stageStillOurs: () => this.stageStillOurs(),
      stage: { namespace: ref.namespace, stage: va.stage, uid: this.stageUid! },
      newerWaiting: () => this.access.newerWaiting,
      holdLease: (seconds) => this.access.holdLease(seconds),
      vars: {
        namespace: ref.namespace,
        stage: va.stage,
        stageVersion: stage.target.name,
        ...(this.previous ? { previousStageVersion: this.previous.name } : {}),
        activation: ref.name,
        ...(stage.target.backend ? { backend: { service: stage.target.backend.service, ...(stage.target.backend.port ? { port: stage.target.backend.port } : {}) } } : {}),
      },
      webhookBody: (step, stepName, weight) => ({
        activation: { namespace: ref.namespace, name: ref.name, uid: ref.uid },
        stage: va.stage,
        stageVersion: stage.target.name,
        ...(this.previous ? { previousStageVersion: this.previous.name } : {}),
        step,
        ...(stepName ? { stepName } : {}),
        weight,
      }),
    };
    return new Progression(plan.progression!, plan.analyses ?? [], host);
  }

  /**
   * The executions that ran, by `<step index>/<registration>`: an earlier attempt's (a retried task
   * may keep their record), or this attempt's (a progression's next round keeps theirs).
   */
  private ranExecutions(): Record<string, string> {
    return Object.fromEntries(
      this.progress.steps.flatMap((s, i) => s.tasks.flatMap((t) => ((t.phase === 'Succeeded' || t.phase === 'Error') && t.execution ? [[`${i}/${t.registration}`, t.execution]] : []))),
    );
  }

  /**
   * Puts back what every task of steps [0..failedStep] that ran found before it changed anything
   * (its execution's record), newest step first. A task that recorded no rule changed none; one
   * whose execution is gone cannot be put back, and makes the revert partial.
   */
  private async revertSteps(plan: ResolvedPlan, ctx: TaskContext, failedStep: number): Promise<'done' | 'partial'> {
    const ran = restoreOrder(this.progress.steps, failedStep);
    const { recorded, gone } = await this.recordsOf(ran.flatMap((s) => s.tasks.map((t) => t.execution)));
    let all = true;
    for (const { step: i, tasks } of ran) {
      // A task that succeeded changed its rules: with its execution deleted (its namespace going, say)
      // the record of what was there went too, and nothing of it can be put back.
      const progress = this.progress.steps[i]!;
      const lost = progress.tasks.filter((x) => x.phase === 'Succeeded' && x.execution !== undefined && gone.has(x.execution));
      for (const t of lost) {
        t.message = `ActivationExecution ${t.execution} is gone, and with it the record of what it changed: nothing of it was put back`;
        this.firstError ??= `revert of ${t.registration}: ${t.message}`;
      }
      let ok = lost.length === 0;
      const done = tasks.filter((t) => recorded.has(t.execution));
      if (done.length > 0) {
        const step = plan.steps[i]!;
        await this.report('InProgress', 'Reverting', `reverting step ${step.name}`);
        const outcomes = await CancellationScope.nonCancellable(() =>
          Promise.all(done.map((r) => runTask(ctx, i, step.name, step.tasks.find((t) => t.registration === r.registration)!, 'Revert', undefined, r.execution))),
        );
        ok &&= outcomes.every((o) => o.ok);
        for (const o of outcomes.filter((x) => !x.ok)) this.firstError ??= `revert of ${o.registration}: ${o.message}`;
      }
      // The step that failed stays Failed, put back or not: it is the one the status names.
      if ((done.length > 0 || lost.length > 0) && progress.phase !== 'Failed') progress.phase = ok ? 'Reverted' : 'Failed';
      all &&= ok;
    }
    return all ? 'done' : 'partial';
  }

  /** Which executions recorded a rule, and which are gone (deleted with their records). */
  private async recordsOf(names: string[]): Promise<{ recorded: Set<string>; gone: Set<string> }> {
    if (names.length === 0) return { recorded: new Set(), gone: new Set() };
    if (!patched('gone-records')) return { recorded: new Set(await k8s.recordedExecutions(this.ref.namespace, names)), gone: new Set() };
    const { recorded, gone } = await k8s.executionRecords(this.ref.namespace, names);
    return { recorded: new Set(recorded), gone: new Set(gone) };
  }

  // --- a close-out: the run before closed without finishing ---------------------------------

  /**
   * The run before closed without finishing (terminated, timed out, failed), or its object is being
   * deleted with that run gone: its executions end first, then, with the Stage held again, what its
   * tasks changed is put back under onFailure Revert (only rules nobody moved since), and the
   * activation ends Failed saying why. ADR-0012's order: executions, revert, usage, then the Stage.
   */
  async closeOut(why: { reason: string; message: string }): Promise<Ending> {
    const { ref, va, access } = this;
    this.firstError ??= why.message;
    this.kept = true; // the run before set it
    this.marked = va.stageVersion; // the run before may have marked it; only the holder's mark is taken away
    // Without the Stage (gone, or a newer activation has it), the run before's Lease goes too.
    const ended = async (state: string) => {
      await k8s.releaseStageLease(ref.namespace, va.stage, this.holder);
      return this.finish({ phase: 'Failed', reason: why.reason, message: `${why.message}; ${state}` });
    };
    try {
      await k8s.endExecutions(ref, why.message);
      let before;
      try {
        before = await k8s.describeStage(ref.namespace, va.stage, va.stageVersion, { puttingBack: true });
      } catch (err) {
        return await ended(`nothing was put back: ${messageOf(err)}`);
      }
      const lock = await access.acquire(
        before.target.revision,
        () => false,
        () => this.report('Waiting', 'WaitingForStage', `closing out: waiting for Stage ${va.stage} (lock ${access.lockId})`),
      );
      if (lock !== 'granted') return await ended(`nothing was put back: the newer activation ${access.supersededBy} sets the routes`);
      try {
        return await this.closeOutWithStage(why, before.stageUid);
      } catch (err) {
        if (isCancellation(err)) throw err;
        return await this.finish({ phase: 'Failed', reason: why.reason, message: `${why.message}; the close-out failed: ${messageOf(err)}` });
      }
    } finally {
      await this.letGo();
    }
  }

  private async closeOutWithStage(why: { reason: string; message: string }, stageUid: string): Promise<Ending> {
    const { ref, va } = this;
    const read = { stageVersion: va.stageVersion, ...(va.executionPlan ? { executionPlan: va.executionPlan } : {}), puttingBack: true };
    const { plan, stage } = await this.access.takeStage(stageUid, read, (message) => this.report('Waiting', 'WaitingForLease', message));
    this.previous = stage.stageVersions.find((sv) => sv.name === va.status.previousStageVersion);
    // The run before's executor activities stop at their next heartbeat, which fails once it has closed.
    const tasks = plan.steps.flatMap((st) => st.tasks.filter((t) => t.executor !== 'External'));
    if (tasks.length > 0) await sleep(`${Math.max(...tasks.map(heartbeatSecondsOf))} seconds`);
    const attempt = this.progress.attempt;
    // A progression's rounds each made executions of their own: the latest one recorded of each
    // task is where its traffic stands (every round keeps the record of the one before).
    const weights = plan.progression ? progressionWeights(plan.progression) : [];
    const rounds = Math.max(weights.length, 1);
    const names = (i: number, registration: string) => Array.from({ length: rounds }, (_, r) => executionName(ref.name, i, registration, attempt, false, r));
    const recorded = new Set(await k8s.recordedExecutions(ref.namespace, plan.steps.flatMap((st, i) => st.tasks.flatMap((t) => names(i, t.registration)))));
    const executions = plan.steps.map((st, i) => st.tasks.map((t) => [...names(i, t.registration)].reverse().find((n) => recorded.has(n)) ?? names(i, t.registration)[0]!));
    this.progress.steps = closedOutProgress(plan, this.progress.steps, executions, recorded);
    const last = lastRanStep(this.progress.steps);
    if (last < 0) return this.finish({ phase: 'Failed', reason: why.reason, message: `${why.message}; no step had changed a route` });
    this.routing = true; // the run before changed routes: its failure counts on the breakers
    const previous = this.previous?.name;
    const ctx = this.taskContext(stage, { unmovedOnly: true, ...(weights.length ? { unmovedAlso: weights.map((w) => applyAssignment(va.stageVersion, previous, w)) } : {}) });
    const revert = plan.onFailure === 'Revert' ? await this.revertSteps(plan, ctx, last) : undefined;
    const ending = failureEnding({ step: plan.steps[last]!.name, firstError: why.message, onFailure: plan.onFailure, ...(revert ? { revert } : {}), progress: this.progress.steps, recorded: [...recorded] });
    return this.finish({ ...ending, reason: why.reason });
  }

  // --- the end ------------------------------------------------------------------------------

  private async finish(ending: Ending): Promise<Ending> {
    await CancellationScope.nonCancellable(async () => {
      // Every execution reaches a final state before the activation does (ADR-0012).
      const unrecorded = (await Promise.all(this.recordings.splice(0))).find((r) => 'error' in r);
      if (unrecorded) this.firstError ??= unrecordedMessage(unrecorded);
      // A Failed or Cancelled activation keeps its usage while a step left applied may still send
      // traffic to it.
      if (releasesUsage(ending.phase, this.progress.steps)) await k8s.releaseActivationUsage(this.ref);
      // A failed attempt that changed, or tried to change, routing counts on the CircuitBreakers
      // before anyone reads Failed; a breaker that cannot be written must not keep the activation
      // from ending.
      if (countsOnBreakers(ending.phase, this.routing)) await k8s.recordActivationFailure(this.ref, this.progress.attempt).catch(() => undefined);
      // Whoever reads the final phase finds the StageVersion free to change again and the Lease
      // free: one local activity lets both go, then writes it.
      const name = this.marked;
      this.marked = undefined;
      const status = this.statusOf(ending.phase, ending.reason, ending.message);
      const { over, settle } = this.writing(status);
      const finishing = k8s.finishRun({ ref: this.ref, stage: this.va.stage, holder: this.holder, lease: this.access.handOverLease(), ...(name ? { marked: name } : {}), status, ...(over ? { over } : {}) });
      await settle(finishing, (written) => written);
      // The query and the search attribute say the ending once it is written, the Lease free.
      this.noteReport(ending.phase, ending.reason, ending.message);
    });
    return ending;
  }

  private fail(err: unknown): Promise<Ending> {
    const cause = causeOf(err);
    const reason = cause instanceof ApplicationFailure && cause.type ? cause.type : 'Error';
    const message = messageOf(err);
    this.firstError ??= message;
    return this.finish({ phase: 'Failed', reason, message });
  }

  /** The workflow itself was cancelled (Temporal UI/CLI) outside a step: end as Cancelled, let the Stage go. */
  async cancelledInTemporal(): Promise<void> {
    await CancellationScope.nonCancellable(async () => {
      await this.finish({ phase: 'Cancelled', reason: 'WorkflowCancelled', message: 'the workflow was cancelled in Temporal' });
      await this.letGo();
    });
  }

  /**
   * After the final status: the mark (if still set), the Stage's lock, and then, beside the lock,
   * the close-out finalizer, which a deletion waits for: off the handoff's path (the next
   * activation waits for the lock, not for the finalizer). Left behind by a crash, the watcher
   * takes it away from a final object being deleted.
   */
  private async letGo(): Promise<void> {
    await CancellationScope.nonCancellable(() => Promise.all([this.unmark(), this.access.release(), this.kept ? k8s.removeCloseOutFinalizer(this.ref) : undefined]));
    this.kept = false;
  }

  private async unmark(): Promise<void> {
    const name = this.marked;
    this.marked = undefined;
    if (name) await CancellationScope.nonCancellable(() => k8s.unmarkStageVersion(this.ref.namespace, name, this.holder));
  }

  // --- what the object and the workflow say -------------------------------------------------

  private async report(phase: VectorActivationPhase, reason: string, message: string): Promise<void> {
    this.noteReport(phase, reason, message);
    const status = this.statusOf(phase, reason, message);
    const { over, settle } = this.writing(status);
    const written = await settle(CancellationScope.nonCancellable(() => k8s.writeActivationStatus(this.ref, status, over)), (w) => w);
    // A status write that finds the VectorActivation gone is its deletion, whether or not a
    // watcher saw it: no new step starts, the running ones are cancelled, and the workflow closes.
    if (written === false) this.requests.deleted();
  }

  /**
   * A status write over what the run knows the object holds (`over`, when it knows it), taken as
   * made from here on: a write issued beside it goes over it too. `settle` awaits it and says
   * whether the object holds it as known; if not (it failed, was not made, or found the object gone
   * or being deleted) the run forgets what it knew, and later writes read first.
   */
  private writing(status: ActivationReport) {
    const known = this.known;
    const write = known ? statusWrite(known, status, new Date()) : undefined;
    const over: StatusOver | undefined = known && write ? { known, conditions: write.conditions, stage: this.va.stage, stageVersion: this.va.stageVersion } : undefined;
    this.known = write?.after;
    const settle = async <T>(writing: Promise<T>, made: (result: T) => boolean): Promise<T> => {
      const result = await writing.catch((err: unknown) => {
        this.known = undefined;
        throw err;
      });
      if (!made(result)) this.known = undefined;
      return result;
    };
    return { over, settle };
  }

  /** What the workflow shows of a report (query, search attribute, current details), written or not. */
  private noteReport(phase: VectorActivationPhase, reason: string, message: string): void {
    Object.assign(this.progress, { phase, reason, message });
    // An unchanged phase (the next step's InProgress) costs no history event.
    if (phase !== this.upsertedPhase) upsertSearchAttributes([{ key: ACTIVATION_PHASE, value: phase }]);
    this.upsertedPhase = phase;
    const p = this.progression?.report;
    const at = p ? (p.step < p.steps ? `step ${p.step + 1}/${p.steps}` : 'the switch') : '';
    const gate = p?.gate ? `; waiting at ${p.gate.type} since ${p.gate.since}${p.gate.until ? ` until ${p.gate.until}` : ''}` : '';
    setCurrentDetails(`**${phase}** (${reason}): ${message}${p ? `\n\n**Progression**: ${at}, ${p.weight} % to ${this.va.stageVersion}${gate}` : ''}`);
  }

  /** The status a report writes; `steps` and `start` when they are not yet the run's own. */
  private statusOf(phase: VectorActivationPhase, reason: string, message: string, steps = this.progress.steps, start = this.startTime) {
    const { previous, firstError, workflowUrl } = this;
    return activationStatus({
      phase,
      reason,
      message,
      workflowId: workflowInfo().workflowId,
      ...(workflowUrl ? { workflowUrl } : {}),
      attempt: this.progress.attempt,
      ...(previous ? { previousStageVersion: previous.name } : {}),
      ...(firstError ? { firstError } : {}),
      ...(start ? { startTime: start } : {}),
      ...(isFinal(phase) ? { completionTime: now() } : {}),
      steps,
      ...(this.progression ? { progression: this.progression.report } : {}),
    });
  }

  /** What every task of this attempt is told: the activation, the Stage's StageVersions, the previous one. */
  private taskContext(stage: { target: StageVersionInfo; stageVersions: StageVersionInfo[] }, extra: Pick<TaskContext, 'earlier' | 'unmovedOnly' | 'unmovedAlso' | 'round'>): TaskContext {
    const { ref, va, previous } = this;
    return {
      ref,
      stage: va.stage,
      ...(va.vectorDeployment ? { vectorDeployment: va.vectorDeployment } : {}),
      target: stage.target,
      ...(previous ? { previous } : {}),
      stageVersions: stage.stageVersions,
      attempt: this.progress.attempt,
      ...extra,
      ...(this.options.queueSuffix ? { queueSuffix: this.options.queueSuffix } : {}),
    };
  }

  private stepMessage(plan: ResolvedPlan, i: number): string {
    const setting = this.progression?.setting;
    return `step ${i + 1}/${plan.steps.length} (${plan.steps[i]!.name}) of ${plan.source}${setting !== undefined ? `, setting ${setting} % to ${this.va.stageVersion}` : ''}`;
  }
}
