/**
 * One workflow per VectorActivation (ADR-0012's decision, made durable): wait for the Stage's lock,
 * skip what is older than the active StageVersion, hold the StageVersion with an "activation"
 * usage, run the plan's steps in order (the tasks of a step together), then point the "active"
 * usage at the new StageVersion. Failed and Cancelled activations wait for a retry signal.
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  proxyActivities,
  setCurrentDetails,
  setHandler,
  sleep,
  upsertSearchAttributes,
  workflowInfo,
  ActivityFailure,
} from '@temporalio/workflow';
import type { ResolvedPlan } from '../activities/activation.js';
import type { LockActivities } from '../activities/lock.js';
import type { VectorActivationPhase } from '../api/vector-activation.js';
import type { StageVersionInfo } from '../executors/types.js';
import {
  cancelSignal,
  lockGrantedSignal,
  lockSupersededSignal,
  progressQuery,
  releaseLockSignal,
  retrySignal,
  stageLockWorkflowId,
  type ActionRequest,
  type ActivationProgress,
  type ActivationRef,
} from '../shared/activation.js';
import { kubeTime as now, temporalWorkflowUrl } from '../shared/format.js';
import { ACTIVATION_PHASE, K8S_NAMESPACE, STAGE, STAGE_VERSION, VECTOR } from '../shared/search-attributes.js';
import { k8sActivities as k8s, runTask, type TaskContext } from './activation-tasks.js';

const { requestStageLock } = proxyActivities<LockActivities>({ startToCloseTimeout: '30 seconds' });

/** How long a Failed or Cancelled activation stays open for a retry. */
const RETRY_WINDOW = '7 days';
const LEASE_SECONDS = 60;
const LEASE_RENEW = '20 seconds';

export interface ActivationOptions {
  /** Base URL of the Temporal UI, for the link in the VectorActivation's status. */
  uiUrl?: string;
  /** Appended to executor task queue names (tests isolate their workers this way). */
  queueSuffix?: string;
}

type LockPhase = 'none' | 'waiting' | 'granted' | 'superseded';
type Final = Extract<VectorActivationPhase, 'Succeeded' | 'Failed' | 'Skipped' | 'Cancelled'>;

export async function vectorActivation(ref: ActivationRef, options: ActivationOptions = {}): Promise<ActivationProgress> {
  const info = workflowInfo();
  const progress: ActivationProgress = { phase: 'Pending', attempt: 1, steps: [] };
  const seen = new Set<string>();
  let cancelRequested: ActionRequest | undefined;
  let retryRequested = false;
  let lock: LockPhase = 'none';
  let supersededBy = '';
  let firstError: string | undefined;
  let startTime: string | undefined;
  let previous: StageVersionInfo | undefined;
  /** The StageVersion this activation marked as in use (admission refuses changes to it). */
  let marked: string | undefined;

  const fresh = (r: ActionRequest) => (r.token === undefined ? true : !seen.has(r.token) && !!seen.add(r.token));
  setHandler(progressQuery, () => progress);
  setHandler(cancelSignal, (r) => {
    // Cancelling a Failed or Cancelled activation closes its retry window.
    if (fresh(r) && !['Succeeded', 'Skipped'].includes(progress.phase)) cancelRequested = r;
  });
  setHandler(retrySignal, (r) => {
    if (fresh(r) && (progress.phase === 'Failed' || progress.phase === 'Cancelled')) retryRequested = true;
  });
  setHandler(lockGrantedSignal, () => {
    if (lock === 'waiting') lock = 'granted';
  });
  setHandler(lockSupersededSignal, ({ by, revision }) => {
    if (lock === 'waiting') {
      lock = 'superseded';
      supersededBy = `${by} (revision ${revision})`;
    }
  });

  const workflowUrl = options.uiUrl ? temporalWorkflowUrl(options.uiUrl, info.namespace, info.workflowId) : undefined;

  async function report(phase: VectorActivationPhase, reason: string, message: string): Promise<void> {
    progress.phase = phase;
    progress.reason = reason;
    progress.message = message;
    upsertSearchAttributes([{ key: ACTIVATION_PHASE, value: phase }]);
    setCurrentDetails(`**${phase}** (${reason}): ${message}`);
    const final = ['Succeeded', 'Failed', 'Skipped', 'Cancelled'].includes(phase);
    await CancellationScope.nonCancellable(() =>
      k8s.writeActivationStatus(ref, {
        phase,
        reason,
        message,
        workflowId: info.workflowId,
        ...(workflowUrl ? { workflowUrl } : {}),
        attempt: progress.attempt,
        ...(previous ? { previousStageVersion: previous.name } : {}),
        ...(firstError ? { firstError } : {}),
        ...(startTime ? { startTime } : {}),
        ...(final ? { completionTime: now() } : {}),
        steps: progress.steps,
      }),
    );
  }

  const va = await k8s.loadActivation(ref);
  if (!va) return progress; // deleted before we started: nothing to do, nothing to report to
  upsertSearchAttributes([
    { key: STAGE, value: va.stage },
    { key: STAGE_VERSION, value: va.stageVersion },
    { key: K8S_NAMESPACE, value: ref.namespace },
    ...(va.vector ? [{ key: VECTOR, value: va.vector }] : []),
  ]);
  const lockId = stageLockWorkflowId(ref.namespace, va.stage);
  const holder = `${ref.namespace}/${ref.name}`;

  /** One attempt: from the lock to a final phase. */
  async function attempt(): Promise<Final> {
    await report('Pending', 'Validating', `checking Stage ${va!.stage} and StageVersion ${va!.stageVersion}`);
    let stage: Awaited<ReturnType<typeof k8s.describeStage>>;
    try {
      stage = await k8s.describeStage(ref.namespace, va!.stage, va!.stageVersion);
    } catch (err) {
      return fail(err);
    }
    lock = 'waiting';
    await requestStageLock(ref.namespace, va!.stage, { requester: info.workflowId, revision: stage.target.revision, activation: holder });
    await report('Waiting', 'WaitingForStage', `waiting for Stage ${va!.stage} (lock ${lockId})`);
    await condition(() => lock !== 'waiting' || cancelRequested !== undefined);
    // Signal handlers changed `lock` meanwhile; TypeScript cannot know.
    const outcome = lock as LockPhase;
    if (outcome === 'superseded') {
      return finish('Skipped', 'Superseded', `superseded while waiting by the newer activation ${supersededBy}`);
    }
    if (outcome !== 'granted') {
      await releaseLock();
      return finish('Cancelled', 'Cancelled', `cancelled while waiting for Stage ${va!.stage}${reasonOf(cancelRequested)}`);
    }
    // The Stage is ours until releaseLock: mirror it into a Lease for kubectl users.
    const leaseScope = new CancellationScope();
    try {
      void leaseScope.run(async () => {
        for (;;) {
          await sleep(LEASE_RENEW);
          await k8s.holdStageLease(ref.namespace, va!.stage, holder, LEASE_SECONDS);
        }
      }).catch(() => undefined);
      return await withStage(stage);
    } finally {
      leaseScope.cancel();
      await CancellationScope.nonCancellable(() =>
        Promise.all([
          unmark(), // normally done by finish(); here for an attempt that ended by an error
          k8s.releaseStageLease(ref.namespace, va!.stage, holder),
          releaseLock(),
        ]),
      );
    }
  }

  async function releaseLock(): Promise<void> {
    lock = 'none';
    await getExternalWorkflowHandle(lockId).signal(releaseLockSignal, { requester: info.workflowId }).catch(() => undefined);
  }

  async function withStage(stage: Awaited<ReturnType<typeof k8s.describeStage>>): Promise<Final> {
    // Independent reads and the Lease go together: the handoff between activations is this long.
    const [activeName, resolved] = await Promise.all([
      k8s.readActiveStageVersion(ref.namespace, va!.stage),
      k8s.resolvePlan(va!.executionPlan).then(
        (plan) => ({ plan }),
        (error: unknown) => ({ error }),
      ),
      k8s.holdStageLease(ref.namespace, va!.stage, holder, LEASE_SECONDS),
    ]);
    const active = stage.stageVersions.find((sv) => sv.name === activeName);
    if (active && stage.target.revision < active.revision) {
      return finish('Skipped', 'OlderThanActive', `StageVersion ${stage.target.name} (revision ${stage.target.revision}) is older than the active ${active.name} (revision ${active.revision})`);
    }
    if (active && active.name === stage.target.name && progress.attempt === 1) {
      return finish('Skipped', 'AlreadyActive', `StageVersion ${stage.target.name} already serves Stage ${va!.stage}`);
    }
    if (progress.attempt === 1 || !previous) previous = active;

    if ('error' in resolved) return fail(resolved.error);
    const plan: ResolvedPlan = resolved.plan;
    if (progress.steps.length === 0) {
      progress.steps = plan.steps.map((s) => ({ name: s.name, phase: 'Pending', tasks: s.tasks.map((t) => ({ registration: t.registration, phase: 'Pending' })) }));
    }
    await k8s.holdActivationUsage(ref, va!.stage, stage.target.name);
    marked = stage.target.name;
    if ((await k8s.markStageVersion(ref.namespace, stage.target.name, holder)).terminating) {
      return finish('Failed', 'StageVersionTerminating', `StageVersion ${stage.target.name} is being deleted`);
    }
    startTime ??= now();
    await report('InProgress', 'RunningPlan', `switching Stage ${va!.stage} to ${stage.target.name} with ${plan.source}`);

    const ctx: TaskContext = {
      ref,
      stage: va!.stage,
      ...(va!.vectorDeployment ? { vectorDeployment: va!.vectorDeployment } : {}),
      target: stage.target,
      ...(previous ? { previous } : {}),
      stageVersions: stage.stageVersions,
      attempt: progress.attempt,
      ...(options.queueSuffix ? { queueSuffix: options.queueSuffix } : {}),
    };
    for (const [i, step] of plan.steps.entries()) {
      const stepProgress = progress.steps[i];
      if (!stepProgress || stepProgress.name !== step.name) {
        return finish('Failed', 'PlanChanged', `the plan changed since the first attempt (step ${i} is now ${step.name}); create a new VectorActivation`);
      }
      if (stepProgress.phase === 'Succeeded') continue; // done in an earlier attempt
      stepProgress.phase = 'InProgress';
      stepProgress.tasks = step.tasks.map((t) => ({ registration: t.registration, phase: 'InProgress' }));
      await report('InProgress', 'RunningPlan', `step ${i + 1}/${plan.steps.length} (${step.name}) of ${plan.source}`);

      const scope = new CancellationScope();
      const running = scope.run(() => Promise.all(step.tasks.map((t) => runTask(ctx, i, step.name, t, 'Apply'))));
      await Promise.race([running, condition(() => cancelRequested !== undefined)]).catch((err: unknown) => {
        // The whole workflow was cancelled (Temporal UI/CLI): its executions are being cancelled too.
        if (!isCancellation(err)) throw err;
        cancelRequested ??= { reason: 'the workflow was cancelled in Temporal' };
      });
      if (cancelRequested) scope.cancel();
      // Every execution reaches a final state before the activation does (ADR-0012).
      const outcomes = await running;
      stepProgress.tasks = outcomes.map((o) => ({ registration: o.registration, execution: o.execution, phase: o.ok ? 'Succeeded' : 'Error', message: o.message }));
      if (outcomes.every((o) => o.ok) && !cancelRequested) {
        stepProgress.phase = 'Succeeded';
        continue;
      }
      stepProgress.phase = 'Failed';
      const failed = outcomes.find((o) => !o.ok);
      firstError ??= failed ? `step ${step.name}, task ${failed.registration}: ${failed.message}` : undefined;
      if (plan.onFailure === 'Revert') await revert(plan, ctx, i);
      const applied = progress.steps.filter((s) => s.phase === 'Succeeded').map((s) => s.name);
      const state = plan.onFailure === 'Revert' ? 'succeeded tasks were reverted' : applied.length ? `steps left applied: ${applied.join(', ')}` : 'no step was applied';
      if (cancelRequested) return finish('Cancelled', 'Cancelled', `cancelled in step ${step.name}${reasonOf(cancelRequested)}; ${state}`);
      return finish('Failed', 'TaskFailed', `${firstError}; ${state}`);
    }
    // Success (ADR-0012 step 9): the new version is marked serving and the active usage moves to it
    // before anything is taken from the old one, so the serving version is never unheld.
    await k8s.markServing(ref.namespace, stage.target.name, va!.stage);
    await k8s.pointActiveUsage(ref.namespace, va!.stage, stage.stageUid, stage.target.name);
    if (previous && previous.name !== stage.target.name) await k8s.markServing(ref.namespace, previous.name, null);
    await k8s.releaseActivationUsage(ref);
    return finish('Succeeded', 'Activated', `Stage ${va!.stage} now serves ${stage.target.name}${previous ? ` (was ${previous.name})` : ''}`);
  }

  /** Undoes the succeeded tasks of steps [0..failedStep], newest step first. */
  async function revert(plan: ResolvedPlan, ctx: TaskContext, failedStep: number): Promise<void> {
    for (let i = failedStep; i >= 0; i--) {
      const step = plan.steps[i]!;
      const stepProgress = progress.steps[i]!;
      const done = step.tasks.filter((t) => stepProgress.tasks.find((p) => p.registration === t.registration)?.phase === 'Succeeded');
      if (done.length === 0) continue;
      await report('InProgress', 'Reverting', `reverting step ${step.name}`);
      const outcomes = await CancellationScope.nonCancellable(() => Promise.all(done.map((t) => runTask(ctx, i, step.name, t, 'Revert'))));
      stepProgress.phase = outcomes.every((o) => o.ok) ? 'Reverted' : 'Failed';
      for (const o of outcomes.filter((x) => !x.ok)) firstError ??= `revert of ${o.registration}: ${o.message}`;
    }
  }

  async function unmark(): Promise<void> {
    const name = marked;
    marked = undefined;
    if (name) await CancellationScope.nonCancellable(() => k8s.unmarkStageVersion(ref.namespace, name, holder));
  }

  async function finish(phase: Final, reason: string, message: string): Promise<Final> {
    if (phase === 'Skipped') await k8s.releaseActivationUsage(ref);
    // Whoever reads the final phase finds the StageVersion free to change again.
    await unmark();
    await report(phase, reason, message);
    return phase;
  }

  function fail(err: unknown): Promise<Final> {
    const cause = err instanceof ActivityFailure ? err.cause : err;
    const reason = cause instanceof ApplicationFailure && cause.type ? cause.type : 'Error';
    const message = cause instanceof Error ? cause.message : String(cause);
    firstError ??= message;
    return finish('Failed', reason, message);
  }

  try {
    for (;;) {
      const phase = await attempt();
      if (phase === 'Succeeded' || phase === 'Skipped') return progress;
      // Failed or Cancelled: stay open for a retry (signal, or the konfidence.cloud/retry annotation).
      // A retry that arrived while this attempt was still cleaning up counts; a cancel now ends it.
      cancelRequested = undefined;
      const woken = await condition(() => retryRequested || cancelRequested !== undefined, RETRY_WINDOW);
      if (!woken || !retryRequested) return progress;
      retryRequested = false;
      progress.attempt++;
    }
  } catch (err) {
    if (isCancellation(err)) {
      // The workflow itself was cancelled (Temporal UI/CLI): leave the queue, say so on the object.
      await CancellationScope.nonCancellable(async () => {
        if (lock === 'waiting') await releaseLock();
        await report('Cancelled', 'WorkflowCancelled', 'the workflow was cancelled in Temporal');
      });
    }
    throw err;
  }
}

function reasonOf(r: ActionRequest | undefined): string {
  return r?.reason ? ` (${r.reason})` : '';
}
