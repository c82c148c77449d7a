/**
 * One workflow per VectorActivation, reading like ADR-0012's sequence: load → acquire the Stage →
 * decide (on the Stage's state read after the grant) → run the plan's steps → complete. Every
 * decision is a pure function of decisions/activation.ts; this file observes, asks and acts.
 * Failed and Cancelled activations stay open for a retry (Update or signal, or the annotation).
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  isCancellation,
  patched,
  setCurrentDetails,
  setHandler,
  setWorkflowOptions,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { ResolvedPlan, StageState } from '../activities/core.js';
import type { VectorActivationPhase } from '../api/vector-activation.js';
import {
  answerRequest,
  because,
  failureEnding,
  initialProgress,
  isFinal,
  isRetryable,
  orderVerdict,
  reasonOf,
  releasesUsage,
  revertOrder,
  startedStep,
  stepOutcome,
  stepsToRun,
  taskProgressOf,
  activationStatus,
  type Ending,
  type RequestAction,
  type StepProgress,
} from '../decisions/activation.js';
import { SUPERSEDED_REASON } from '../decisions/supersede.js';
import { restoreOrder, weightOf } from '../decisions/traffic.js';
import type { StageVersionInfo } from '../executors/types.js';
import {
  cancelSignal,
  cancelUpdate,
  progressQuery,
  retrySignal,
  retryUpdate,
  type ActionRequest,
  type ActivationProgress,
  holderOf,
  type ActivationRef,
} from '../shared/activation.js';
import { kubeTime as now, temporalWorkflowUrl } from '../shared/format.js';
import { ACTIVATION_PHASE, K8S_NAMESPACE, STAGE, STAGE_VERSION, VECTOR } from '../shared/search-attributes.js';
import { k8sActivities as k8s, runTask, unrecordedMessage, type Recording, type TaskContext } from './activation-tasks.js';
import { causeOf, messageOf } from './failures.js';
import { StageAccess } from './stage-access.js';
import { BREAKER_ASK_AGAIN_SECONDS, passBreakers } from './breaker-gate.js';

/** How long a Failed or Cancelled activation stays open for a retry. */
const RETRY_WINDOW = '7 days';

export interface ActivationOptions {
  /** Base URL of the Temporal UI, for the link in the VectorActivation's status. */
  uiUrl?: string;
  /** Appended to executor task queue names (tests isolate their workers this way). */
  queueSuffix?: string;
  /**
   * 'retry': the watcher started this workflow for a retry asked of a Failed or Cancelled object
   * whose workflow had closed. Without it, an object in a final phase is never run again.
   */
  resume?: 'retry';
  /** How often a waiting activation asks its Stage's lock again (default 120 s; tests shorten it). */
  lockAskAgainSeconds?: number;
}

/**
 * Under Worker Versioning an activation runs to its end on the build that started it (docs/scale.md).
 * Declared only on a versioned worker: an unversioned one must not send a behaviour (the SDK refuses).
 */
setWorkflowOptions(() => (workflowInfo().currentDeploymentVersion?.deploymentName ? { versioningBehavior: 'PINNED' } : {}), vectorActivation);
export async function vectorActivation(ref: ActivationRef, options: ActivationOptions = {}): Promise<ActivationProgress> {
  const info = workflowInfo();
  const holder = holderOf(ref);
  const progress: ActivationProgress & { steps: StepProgress[] } = { phase: 'Pending', attempt: 1, steps: [] };
  const seen = new Set<string>();
  let cancelRequested: ActionRequest | undefined;
  let retryRequested = false;
  let closeRequested = false;
  let firstError: string | undefined;
  let startTime: string | undefined;
  let previous: StageVersionInfo | undefined;
  /** The StageVersion this activation marked as in activation (admission refuses changes to it). */
  let marked: string | undefined;
  /** The ActivationPhase search attribute as last upserted. */
  let upsertedPhase: string | undefined;
  /** The final status writes of a step's executions, made while the next step runs (runStep). */
  const recordings: Recording[] = [];

  // --- requests: Updates answer (accepted, or refused with the reason); signals cannot --------
  const answer = (action: RequestAction, r: ActionRequest) => (r.token && seen.has(`${action}:${r.token}`) ? { accepted: true as const } : answerRequest(action, progress.phase));
  const apply = (action: RequestAction, r: ActionRequest): string => {
    if (r.token && seen.has(`${action}:${r.token}`)) return `already handled (${r.token})`;
    if (r.token) seen.add(`${action}:${r.token}`);
    if (action === 'retry') retryRequested = true;
    else {
      cancelRequested = r;
      closeRequested ||= r.deleted === true;
    }
    return `${action} accepted while ${progress.phase}`;
  };
  const handle = (action: RequestAction, r: ActionRequest) => (answer(action, r).accepted ? apply(action, r) : undefined);
  setHandler(progressQuery, () => progress);
  setHandler(cancelSignal, (r) => void handle('cancel', r));
  setHandler(retrySignal, (r) => void handle('retry', r));
  for (const [update, action] of [[cancelUpdate, 'cancel'], [retryUpdate, 'retry']] as const) {
    setHandler(update, (r) => ({ outcome: 'Accepted' as const, message: apply(action, r) }), {
      validator: (r) => {
        const a = answer(action, r);
        if (!a.accepted) throw new Error(a.message);
      },
    });
  }

  const workflowUrl = options.uiUrl ? temporalWorkflowUrl(options.uiUrl, info.namespace, info.workflowId) : undefined;

  async function report(phase: VectorActivationPhase, reason: string, message: string): Promise<void> {
    noteReport(phase, reason, message);
    const status = statusOf(phase, reason, message);
    const written = await CancellationScope.nonCancellable(() => k8s.writeActivationStatus(ref, status));
    // A status write that finds the VectorActivation gone is its deletion, whether or not a
    // watcher saw it: no new step starts, the running ones are cancelled, and the workflow closes.
    if (written === false && patched('gone-is-deleted')) {
      cancelRequested ??= { reason: 'the VectorActivation was deleted', deleted: true };
      closeRequested = true;
    }
  }

  /** What the workflow shows of a report (query, search attribute, current details), written or not. */
  function noteReport(phase: VectorActivationPhase, reason: string, message: string): void {
    progress.phase = phase;
    progress.reason = reason;
    progress.message = message;
    // An unchanged phase (the next step's InProgress) costs no history event; runs that upserted
    // it every time replay so.
    if (phase !== upsertedPhase || !patched('phase-attribute-on-change')) upsertSearchAttributes([{ key: ACTIVATION_PHASE, value: phase }]);
    upsertedPhase = phase;
    setCurrentDetails(`**${phase}** (${reason}): ${message}`);
  }

  /** The status a report writes; `steps` and `start` when they are not yet the workflow's own. */
  function statusOf(phase: VectorActivationPhase, reason: string, message: string, steps = progress.steps, start = startTime) {
    return activationStatus({
      phase,
      reason,
      message,
      workflowId: info.workflowId,
      ...(workflowUrl ? { workflowUrl } : {}),
      attempt: progress.attempt,
      ...(previous ? { previousStageVersion: previous.name } : {}),
      ...(firstError ? { firstError } : {}),
      ...(start ? { startTime: start } : {}),
      ...(isFinal(phase) ? { completionTime: now() } : {}),
      steps,
    });
  }

  // --- load -------------------------------------------------------------------------------
  const va = await k8s.loadActivation(ref);
  if (!va) return progress; // deleted before we started: nothing to do, nothing to report to
  // The object's status is the record of what ran, not Temporal's retention: a final one is not
  // run again unless a retry was asked for.
  const recorded = va.status;
  if (isFinal(recorded.phase) && !(options.resume === 'retry' && isRetryable(recorded.phase))) {
    return { ...progress, phase: recorded.phase!, steps: recorded.steps ?? [] };
  }
  progress.attempt = (recorded.attempt ?? 1) + (options.resume === 'retry' ? 1 : 0);
  progress.steps = recorded.steps ?? [];
  firstError = recorded.firstError;
  startTime = recorded.startTime;
  /** The previous StageVersion an earlier run recorded: a resumed run reverts to it. */
  const recordedPrevious = recorded.previousStageVersion;
  /** An earlier run may have switched traffic already: order it as a retry, not as a fresh start. */
  const resumed = options.resume === 'retry' || recorded.phase === 'InProgress';
  upsertSearchAttributes([
    { key: STAGE, value: va.stage },
    { key: STAGE_VERSION, value: va.stageVersion },
    { key: K8S_NAMESPACE, value: ref.namespace },
    ...(va.vector ? [{ key: VECTOR, value: va.vector }] : []),
  ]);
  const access = new StageAccess(ref.namespace, va.stage, holder, options.lockAskAgainSeconds);

  /** One attempt: from the Stage's lock to a final phase. */
  async function attempt(retry: boolean): Promise<Ending> {
    const validating = report('Pending', 'Validating', `checking Stage ${va!.stage} and StageVersion ${va!.stageVersion}`);
    // The check reads while Pending is written; a failed check is written after it, as Failed.
    if (!patched('validate-while-pending')) await validating;
    const [written, described] = await Promise.allSettled([validating, k8s.describeStage(ref.namespace, va!.stage, va!.stageVersion)]);
    if (written.status === 'rejected') throw written.reason;
    if (described.status === 'rejected') return fail(described.reason);
    const before = described.value;
    const lock = await access.acquire(
      before.target.revision,
      () => cancelRequested !== undefined,
      () => report('Waiting', 'WaitingForStage', `waiting for Stage ${va!.stage} (lock ${access.lockId})`),
    );
    if (lock === 'superseded') return finish({ phase: 'Skipped', reason: SUPERSEDED_REASON, message: `superseded while waiting by the newer activation ${access.supersededBy}` });
    if (lock === 'cancelled') return finish({ phase: 'Cancelled', reason: 'Cancelled', message: `cancelled while waiting for Stage ${va!.stage}${because(cancelRequested?.reason)}` });
    try {
      return await withStage(retry, before.stageUid);
    } catch (err) {
      // Bookkeeping that failed for good (a refused write, retries exhausted): say so and let go.
      if (isCancellation(err)) throw err;
      return fail(err);
    } finally {
      await CancellationScope.nonCancellable(() => Promise.all([unmark(), access.release()]));
    }
  }

  async function withStage(retry: boolean, stageUid: string): Promise<Ending> {
    // ADR-0012 steps 2–3: the Lease, then the Stage's state read now, after the grant; never what
    // was read while waiting (a newer version may have become active meanwhile).
    let stage: StageState, activeName: string | undefined, plan: ResolvedPlan, guarded: boolean;
    try {
      if (patched('stage-taken-in-one')) {
        const read = { stageVersion: va!.stageVersion, ...(va!.executionPlan ? { executionPlan: va!.executionPlan } : {}) };
        ({ plan, stage, activeName, guarded } = await access.takeStage(stageUid, read, (message) => report('Waiting', 'WaitingForLease', message)));
      } else {
        // Runs from before takeStage: the Lease (beside the plan), then the reads, as their history says.
        [, plan] = await Promise.all([access.takeLease(stageUid), k8s.resolvePlan(va!.executionPlan, ref.namespace)]);
        // Runs that read no breakers here ask for admission as they always did.
        const breakersRead = patched('breakers-read-with-stage');
        [stage, activeName, guarded] = await Promise.all([
          k8s.describeStage(ref.namespace, va!.stage, va!.stageVersion),
          k8s.readActiveStageVersion(ref.namespace, va!.stage),
          breakersRead ? k8s.breakersApply(ref.namespace) : true,
        ]);
      }
    } catch (err) {
      return fail(err);
    }
    // A retry starts from the truth: "previous" is what is active now, and every step runs again
    // (one whose routes hold its assignment already changes nothing). The old branch of the patch
    // reverts to the previous version the first attempt recorded and runs only the unfinished steps.
    // Asked only of a retry: a first attempt runs the same either way, and costs no marker.
    const fromTruth = retry && patched('retry-from-truth');
    const earlier = fromTruth ? undefined : (previous ?? stage.stageVersions.find((sv) => sv.name === recordedPrevious));
    const verdict = orderVerdict({ stage: va!.stage, target: stage.target, activeName, stageVersions: stage.stageVersions, retry, ...(earlier ? { recordedPrevious: earlier } : {}) });
    if (!verdict.run) return finish(verdict);
    previous = verdict.previous;

    const toRun = stepsToRun(plan, progress.steps, fromTruth);
    /** What ran in earlier attempts, before this one starts its steps anew. */
    const earlierRuns = Object.fromEntries(
      progress.steps.flatMap((s, i) => s.tasks.flatMap((t) => ((t.phase === 'Succeeded' || t.phase === 'Error') && t.execution ? [[`${i}/${t.registration}`, t.execution]] : []))),
    );
    if ('error' in toRun) return finish({ phase: 'Failed', reason: 'PlanChanged', message: toRun.error });
    if (progress.steps.length === 0) progress.steps = initialProgress(plan);

    // CircuitBreakers (docs/scale.md): the first routing change of this attempt waits while one is
    // Open or out of tokens, holding the Stage; later steps ask again only under a rate limit.
    const breakerWait = Math.min(BREAKER_ASK_AGAIN_SECONDS, options.lockAskAgainSeconds ?? BREAKER_ASK_AGAIN_SECONDS);
    const cancelled = () => cancelRequested !== undefined;
    let limited = false;
    if (toRun.run.length > 0 && guarded && patched('circuit-breaker')) {
      const gate = await passBreakers(ref, progress.attempt, toRun.run[0]!, true, (w) => report('Waiting', w.reason, w.message), cancelled, breakerWait);
      if (!gate.admitted) return finish({ phase: 'Cancelled', reason: 'Cancelled', message: `cancelled while waiting at a CircuitBreaker${because(cancelRequested?.reason)}` });
      limited = gate.limited;
    }

    // ADR-0012 step 4 and requirement 4, together: the usage holds it, the mark protects it.
    // InProgress follows them, the first step's (one status write instead of two in a row), never
    // beside them: that would tell a step started (Events, metrics) that a StageVersion found
    // being deleted, or a refused hold, then never runs.
    marked = stage.target.name;
    const terminating = { phase: 'Failed', reason: 'StageVersionTerminating', message: `StageVersion ${stage.target.name} is being deleted` } as const;
    const first = toRun.run[0];
    /** Whether the first step's InProgress was written with the hold and the mark. */
    let started = false;
    if (first !== undefined && patched('step-started-with-hold')) {
      // One local activity holds, marks, and only then writes InProgress; the workflow takes the
      // step as started once it was written.
      const steps: StepProgress[] = [...progress.steps];
      steps[first] = startedStep(plan.steps[first]!, steps[first]!);
      const begun = startTime ?? now();
      const message = stepMessage(plan, first);
      const status = statusOf('InProgress', 'RunningPlan', message, steps, begun);
      const run = await CancellationScope.nonCancellable(() => k8s.startRun({ ref, stage: va!.stage, target: stage.target.name, holder, status }));
      if (run.terminating) return finish(terminating);
      progress.steps = steps;
      startTime = begun;
      noteReport('InProgress', 'RunningPlan', message);
      started = true;
    } else {
      const [, mark] = await Promise.all([k8s.holdActivationUsage(ref, va!.stage, stage.target.name), k8s.markStageVersion(ref.namespace, stage.target.name, holder)]);
      if (mark.terminating) return finish(terminating);
      startTime ??= now();
    }

    const ctx: TaskContext = {
      ref,
      stage: va!.stage,
      ...(va!.vectorDeployment ? { vectorDeployment: va!.vectorDeployment } : {}),
      target: stage.target,
      ...(previous ? { previous } : {}),
      stageVersions: stage.stageVersions,
      attempt: progress.attempt,
      ...(Object.keys(earlierRuns).length ? { earlier: earlierRuns } : {}),
      ...(options.queueSuffix ? { queueSuffix: options.queueSuffix } : {}),
    };
    for (const [n, i] of toRun.run.entries()) {
      if (limited && n > 0) {
        const gate = await passBreakers(ref, progress.attempt, i, false, (w) => report('InProgress', w.reason, w.message), cancelled, breakerWait);
        if (!gate.admitted) {
          // Cancelled between steps: what ran is reverted as after a cancelled step.
          const revert = plan.onFailure === 'Revert' ? await revertSteps(plan, ctx, i) : undefined;
          return finish(failureEnding({ step: plan.steps[i]!.name, ...(firstError ? { firstError } : {}), cancelled: cancelRequested ?? {}, onFailure: plan.onFailure, ...(revert ? { revert } : {}), progress: progress.steps }));
        }
      }
      const ending = await runStep(plan, ctx, i, started && n === 0, n < toRun.run.length - 1);
      if (ending) return ending;
    }
    // ADR-0012 step 9: the new version is marked serving and the active usage moves to it before
    // anything is taken from the old one, so the serving version is never unheld. What is given
    // goes together, then what is taken (the old version keeps its serving mark until then).
    const unserve = () => (previous && previous.name !== stage.target.name ? k8s.markServing(ref.namespace, previous.name, null) : undefined);
    if (patched('switch-serving-in-one')) {
      // The in-activation mark goes with what is taken: the active usage holds the target now.
      // A previous StageVersion that a registration's weight leaves a share to is marked serving
      // before the active usage leaves it: the Stage controller takes the mark once no managed
      // route sends it traffic.
      const previousKeeps = plan.steps.some((st) => st.tasks.some((t) => weightOf(t.config) < 100));
      await k8s.switchServing({ ref, stage: va!.stage, stageUid: stage.stageUid, target: stage.target.name, ...(previous ? (previousKeeps ? { stillServing: previous.name } : { previous: previous.name }) : {}), holder });
      marked = undefined;
    } else if (patched('final-marks-together')) {
      await Promise.all([k8s.markServing(ref.namespace, stage.target.name, va!.stage), k8s.pointActiveUsage(ref.namespace, va!.stage, stage.stageUid, stage.target.name)]);
      await Promise.all([unserve(), k8s.releaseActivationUsage(ref)]);
    } else {
      await k8s.markServing(ref.namespace, stage.target.name, va!.stage);
      await k8s.pointActiveUsage(ref.namespace, va!.stage, stage.stageUid, stage.target.name);
      await unserve();
      await k8s.releaseActivationUsage(ref);
    }
    return finish({ phase: 'Succeeded', reason: 'Activated', message: `Stage ${va!.stage} now serves ${stage.target.name}${previous ? ` (was ${previous.name})` : ''}` });
  }

  /**
   * Runs step i (its tasks together); undefined when it succeeded, else how the activation ends.
   * `started`: its InProgress is written already (with the hold and the mark). `followed`: another
   * step comes, and the final status of this step's executions is written while it runs; it
   * checks those writes as its own, so a record that fails fails a step, and what ran is reverted.
   * The last step's records are awaited in place: the switch follows only what is recorded.
   */
  async function runStep(plan: ResolvedPlan, ctx: TaskContext, i: number, started = false, followed = false): Promise<Ending | undefined> {
    const step = plan.steps[i]!;
    const recordingsBefore = recordings.splice(0);
    /** The step's InProgress write, made while its executions are created (one round trip fewer a step). */
    let reporting: Promise<{ error?: unknown }> | undefined;
    if (!started) {
      progress.steps[i] = startedStep(step, progress.steps[i]!);
      const reported = report('InProgress', 'RunningPlan', stepMessage(plan, i));
      // Settled into a value at once: a rejection left waiting would fail the workflow task.
      if (patched('step-report-beside-tasks')) reporting = reported.then(() => ({}), (error: unknown) => ({ error }));
      else await reported;
    }
    const stepProgress = progress.steps[i]!;

    const scope = new CancellationScope();
    const running = scope.run(() => Promise.all(step.tasks.map((t) => runTask(ctx, i, step.name, t, 'Apply', followed ? recordings : undefined))));
    await Promise.race([running, condition(() => cancelRequested !== undefined)]).catch((err: unknown) => {
      // The whole workflow was cancelled (Temporal UI/CLI): its executions are being cancelled too.
      if (!isCancellation(err)) throw err;
      cancelRequested ??= { reason: 'the workflow was cancelled in Temporal' };
    });
    if (cancelRequested) scope.cancel();
    // Every execution reaches a final state before the activation does (ADR-0012).
    const outcomes = await running;
    stepProgress.tasks = taskProgressOf(outcomes);
    stepProgress.phase = stepOutcome(outcomes, cancelRequested !== undefined);
    // The step's InProgress could not be written while its executions ran: the activation cannot
    // go on saying nothing, so it ends as a failed step does (reverted under onFailure Revert).
    const reported = await reporting;
    const unwritten = reported && 'error' in reported ? messageOf(reported.error) : undefined;
    const unrecorded = (await Promise.all(recordingsBefore)).find((r) => 'error' in r);
    if (stepProgress.phase === 'Succeeded' && !unwritten && !unrecorded) return undefined;
    const failed = outcomes.find((o) => !o.ok);
    if (unrecorded) firstError ??= unrecordedMessage(unrecorded);
    if (failed) firstError ??= `step ${step.name}, task ${failed.registration}: ${failed.message}`;
    if (unwritten) firstError ??= `step ${step.name}: its InProgress status could not be written: ${unwritten}`;
    const revert = plan.onFailure === 'Revert' ? await revertSteps(plan, ctx, i) : undefined;
    // Left applied (Stop): which refused tasks recorded a rule, and so may have changed it.
    const refused = revert ? [] : stepProgress.tasks.flatMap((t) => (t.phase === 'Error' && t.execution ? [t.execution] : []));
    const recorded = refused.length && patched('partly-applied-from-records') ? { recorded: await k8s.recordedExecutions(ref.namespace, refused) } : {};
    return finish(failureEnding({ step: step.name, ...(firstError ? { firstError } : {}), ...(cancelRequested ? { cancelled: cancelRequested } : {}), onFailure: plan.onFailure, ...(revert ? { revert } : {}), progress: progress.steps, ...recorded }));
  }

  /**
   * Puts back what every task of steps [0..failedStep] that ran found before it changed anything
   * (its execution's record), newest step first. The old branch of the patch undoes only the
   * succeeded tasks, by a move back to the previous StageVersion.
   */
  async function revertSteps(plan: ResolvedPlan, ctx: TaskContext, failedStep: number): Promise<'done' | 'partial' | 'noPrevious'> {
    const fromRecord = patched('revert-from-record');
    // Without a record nor a previous StageVersion there is nowhere to send the traffic back to.
    if (!fromRecord && !previous) return 'noPrevious';
    // A task that recorded no rule changed none: it has nothing to put back.
    const ran = fromRecord ? restoreOrder(progress.steps, failedStep) : [];
    const recorded = ran.length ? new Set(await k8s.recordedExecutions(ref.namespace, ran.flatMap((s) => s.tasks.map((t) => t.execution)))) : new Set<string>();
    const order = fromRecord
      ? ran.map((s) => ({ ...s, tasks: s.tasks.filter((t) => recorded.has(t.execution)) })).filter((s) => s.tasks.length > 0)
      : revertOrder(progress.steps, failedStep).map(({ step, registrations }) => ({ step, tasks: registrations.map((registration) => ({ registration, execution: undefined })) }));
    let all = true;
    for (const { step: i, tasks: ran } of order) {
      const step = plan.steps[i]!;
      await report('InProgress', 'Reverting', `reverting step ${step.name}`);
      const tasks = ran.map((r) => ({ task: step.tasks.find((t) => t.registration === r.registration)!, execution: r.execution }));
      const outcomes = await CancellationScope.nonCancellable(() => Promise.all(tasks.map(({ task, execution }) => runTask(ctx, i, step.name, task, 'Revert', undefined, execution))));
      const ok = outcomes.every((o) => o.ok);
      // The step that failed stays Failed, put back or not: it is the one the status names.
      if (progress.steps[i]!.phase !== 'Failed') progress.steps[i]!.phase = ok ? 'Reverted' : 'Failed';
      all &&= ok;
      for (const o of outcomes.filter((x) => !x.ok)) firstError ??= `revert of ${o.registration}: ${o.message}`;
    }
    return all ? 'done' : 'partial';
  }

  async function unmark(): Promise<void> {
    const name = marked;
    marked = undefined;
    if (name) await CancellationScope.nonCancellable(() => k8s.unmarkStageVersion(ref.namespace, name, holder));
  }

  async function finish(ending: Ending): Promise<Ending> {
    await CancellationScope.nonCancellable(async () => {
      // Every execution reaches a final state before the activation does (ADR-0012).
      const unrecorded = (await Promise.all(recordings.splice(0))).find((r) => 'error' in r);
      if (unrecorded) firstError ??= unrecordedMessage(unrecorded);
      // A Failed or Cancelled activation keeps its usage while a step left applied may still send
      // traffic to it. Runs from before gave it back only when Skipped.
      const release = releasesUsage(ending.phase, progress.steps);
      if (ending.phase === 'Skipped' || (release && patched('usage-freed-when-nothing-ran'))) await k8s.releaseActivationUsage(ref);
      // A failed attempt counts on the CircuitBreakers before anyone reads Failed; a breaker that
      // cannot be written must not keep the activation from ending.
      if (ending.phase === 'Failed' && patched('circuit-breaker')) await k8s.recordActivationFailure(ref, progress.attempt).catch(() => undefined);
      // Whoever reads the final phase finds the StageVersion free to change again and the Lease
      // free: one local activity lets both go, then writes it.
      if (patched('finish-in-one')) {
        const name = marked;
        marked = undefined;
        const status = statusOf(ending.phase, ending.reason, ending.message);
        await k8s.finishRun({ ref, stage: va!.stage, holder, lease: access.handOverLease(), ...(name ? { marked: name } : {}), status });
        // The query and the search attribute say the ending once it is written, the Lease free.
        noteReport(ending.phase, ending.reason, ending.message);
        return;
      }
      await Promise.all([unmark(), access.releaseLease()]);
      // The status write records the Events of the transition (decisions/events.ts). Workflows
      // that reached this line before that keep recording the final Event here as their history
      // says (replay); drop the old branch once none of them is open (7-day retry window).
      if (patched('events-in-status-write')) await report(ending.phase, ending.reason, ending.message);
      else {
        await Promise.all([
          report(ending.phase, ending.reason, ending.message),
          k8s.recordActivationEvent(ref, ending.phase === 'Failed' ? 'Warning' : 'Normal', reasonOf(ending.reason), ending.message),
        ]);
      }
    });
    return ending;
  }

  function stepMessage(plan: ResolvedPlan, i: number): string {
    return `step ${i + 1}/${plan.steps.length} (${plan.steps[i]!.name}) of ${plan.source}`;
  }

  function fail(err: unknown): Promise<Ending> {
    const cause = causeOf(err);
    const reason = cause instanceof ApplicationFailure && cause.type ? cause.type : 'Error';
    const message = messageOf(err);
    firstError ??= message;
    return finish({ phase: 'Failed', reason, message });
  }

  try {
    for (let retry = resumed; ; retry = true) {
      const ending = await attempt(retry);
      if (ending.phase === 'Succeeded' || ending.phase === 'Skipped' || closeRequested) return progress;
      // Failed or Cancelled: stay open for a retry. A retry that arrived while this attempt was
      // still cleaning up counts; a cancel now closes the window.
      cancelRequested = undefined;
      const woken = await condition(() => retryRequested || cancelRequested !== undefined || closeRequested, RETRY_WINDOW);
      if (!woken || !retryRequested || closeRequested) return progress;
      retryRequested = false;
      progress.attempt++;
    }
  } catch (err) {
    if (isCancellation(err)) {
      // The workflow itself was cancelled (Temporal UI/CLI): leave the queue, say so on the object.
      await CancellationScope.nonCancellable(async () => {
        await Promise.all([unmark(), access.release(), ...recordings.splice(0)]);
        await report('Cancelled', 'WorkflowCancelled', 'the workflow was cancelled in Temporal');
      });
    }
    throw err;
  }
}
