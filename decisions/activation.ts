/**
 * Every decision of an activation, as pure functions over typed inputs: whether it runs or is
 * Skipped, which steps a retry runs, what a step's outcome is, the final phase with its reason and
 * message, whether a cancel or retry is accepted, and the status to write. The workflow only
 * observes, asks these functions and acts. Pure and deterministic: workflow code imports it.
 * A rule changes here, with a row in test/unit/activation-decisions.test.ts.
 */
import type { Condition } from '../api/meta.js';
import type { VectorActivationPhase } from '../api/vector-activation.js';
import type { StageVersionInfo } from '../api/stage-version.js';
import type { AnalysisRun } from './analysis.js';
import { newerRevision } from './newer.js';

export const FINAL_PHASES = ['Succeeded', 'Failed', 'Skipped', 'Cancelled'] as const;
export type FinalPhase = (typeof FINAL_PHASES)[number];
export const isFinal = (phase: string | undefined): phase is FinalPhase => FINAL_PHASES.includes(phase as FinalPhase);
/** Phases a retry may start from. */
export const isRetryable = (phase: string | undefined) => phase === 'Failed' || phase === 'Cancelled';

// Mirrors of the api/ maxima (api/ itself cannot be imported at run time by workflow code).
const MAX_MESSAGE = 4096;
const MAX_TOP_MESSAGE = 32768;

/** Cuts a text to a status field's maximum, saying so. */
export function clip(text: string, max = MAX_MESSAGE): string {
  return text.length <= max ? text : `${text.slice(0, max - 20)}… (${text.length - max + 20} more)`;
}

/** A condition reason (CamelCase identifier) from any error type; "Error" when nothing is left. */
export function reasonOf(type: string | undefined): string {
  const cleaned = (type ?? '')
    .replace(/[^A-Za-z0-9_]/g, '')
    .replace(/^[^A-Za-z]+/, '')
    .slice(0, 128);
  return cleaned || 'Error';
}

// --- order ---------------------------------------------------------------------------------

export type Verdict =
  | { run: true; previous?: StageVersionInfo }
  | { run: false; phase: 'Skipped' | 'Failed'; reason: string; message: string };

export interface OrderInput {
  stage: string;
  /** The StageVersion this activation switches to, read after the Stage was granted. */
  target: StageVersionInfo;
  /** What the Stage's "active" usage names, read after the grant; undefined: no usage (first activation). */
  activeName: string | undefined;
  /** The Stage's StageVersions, read after the grant. */
  stageVersions: readonly StageVersionInfo[];
  /** A retry runs again what an earlier attempt started, even onto the active StageVersion. */
  retry: boolean;
}

/**
 * ADR-0012 step 3 on fresh state: an older version never overwrites a newer one. Fails closed: an
 * active usage naming a StageVersion that cannot be found means we cannot tell which is newer.
 */
export function orderVerdict(i: OrderInput): Verdict {
  if (i.activeName === undefined) return { run: true };
  const active = i.stageVersions.find((sv) => sv.name === i.activeName);
  if (!active) {
    return {
      run: false,
      phase: 'Failed',
      reason: 'ActiveStageVersionUnknown',
      message: `the active usage of Stage ${i.stage} names StageVersion ${i.activeName}, which does not exist: cannot tell whether ${i.target.name} is newer, so no route was changed`,
    };
  }
  if (newerRevision(active.revision, i.target.revision)) {
    return {
      run: false,
      phase: 'Skipped',
      reason: 'OlderThanActive',
      message: `StageVersion ${i.target.name} (revision ${i.target.revision}) is older than the active ${active.name} (revision ${active.revision})`,
    };
  }
  if (active.name === i.target.name && !i.retry) {
    return {
      run: false,
      phase: 'Skipped',
      reason: 'AlreadyActive',
      message: `StageVersion ${i.target.name} already serves Stage ${i.stage}`,
    };
  }
  // "Previous" is what is active now, on a retry too (another activation may have run between).
  return { run: true, ...(active.name === i.target.name ? {} : { previous: active }) };
}

// --- the Stage ---------------------------------------------------------------------------------

/** The activation's Stage as one read found it; undefined when it does not exist. */
export interface StageSeen {
  uid: string;
  deleting: boolean;
}

/** Why an activation's Stage is no longer one it may act for. */
export interface StageLoss {
  reason: 'StageNotFound' | 'StageDeleted';
  message: string;
}

/**
 * How long a read of the Stage stands for the route write of a later step: the quick steps of a
 * plain activation follow one another within it, so its second step writes on the read the
 * Lease's take made, as an informer's reader would on its cache. The watcher signals a Stage's
 * deletion to the run; this read is the backstop for a signal missed (no watcher running), and a
 * run that waited longer (a slow step, a gate, a breaker) reads again.
 */
export const STAGE_READ_STANDS_MS = 1_000;

/** Whether a step's route write must read the Stage first: never read, or read too long ago (workflow time, ms). */
export function stageReadDue(readAt: number | undefined, now: number): boolean {
  return readAt === undefined || now - readAt >= STAGE_READ_STANDS_MS;
}

/**
 * Whether an activation may act for its Stage as read now: not when it is missing, being deleted,
 * or another Stage of the same name than the one it validated (`validatedUid`: the Stage is
 * identified by its uid, never by its name alone). Before validation a missing Stage was never
 * there (StageNotFound); after it, it was deleted.
 */
export function stageLoss(
  namespace: string,
  stage: string,
  seen: StageSeen | undefined,
  validatedUid?: string,
): StageLoss | undefined {
  const name = `Stage ${namespace}/${stage}`;
  if (!seen)
    return validatedUid
      ? { reason: 'StageDeleted', message: `${name} was deleted` }
      : { reason: 'StageNotFound', message: `${name} does not exist` };
  if (validatedUid !== undefined && seen.uid !== validatedUid) {
    return {
      reason: 'StageDeleted',
      message: `${name} was deleted (the Stage of that name now is another one, uid ${seen.uid})`,
    };
  }
  if (seen.deleting) return { reason: 'StageDeleted', message: `${name} is being deleted` };
  return undefined;
}

/**
 * Whether a switch to the revision `target` may move the Stage's active usage from where it found
 * it (`current`, when its move from what it read under the Lease was refused), and mark its target
 * serving when its in-activation mark is gone: not when the usage names a newer revision. Only a
 * later activation moves it meanwhile, and then this switch is a late repeat of an earlier one: an
 * older version never overwrites a newer one. A revision not known (a StageVersion gone) holds
 * nothing back.
 */
export function mayMoveActive(target: number | undefined, current: number | undefined): boolean {
  return target === undefined || current === undefined || !newerRevision(current, target);
}

// --- steps ---------------------------------------------------------------------------------

export type TaskPhase = 'Pending' | 'InProgress' | 'Succeeded' | 'Error';
export type StepPhase = 'Pending' | 'InProgress' | 'Succeeded' | 'Failed' | 'Reverted';
export interface TaskProgress {
  registration: string;
  execution?: string;
  phase: TaskPhase;
  message?: string;
}
export interface StepProgress {
  name: string;
  phase: StepPhase;
  tasks: TaskProgress[];
}
export interface PlanShape {
  steps: { name: string; tasks: { registration: string }[] }[];
}

export function initialProgress(plan: PlanShape): StepProgress[] {
  return plan.steps.map((s) => ({
    name: s.name,
    phase: 'Pending',
    tasks: s.tasks.map((t) => ({ registration: t.registration, phase: 'Pending' })),
  }));
}

/**
 * Whether an ending gives the activation usage back. Skipped: nothing ran. Failed or Cancelled:
 * only when no step has started in any attempt, since a step left applied may still send traffic to
 * the StageVersion; a usage kept for nothing would hold a StageVersion being deleted for ever.
 * (Succeeded gives it back with the serving switch.)
 */
export function releasesUsage(phase: VectorActivationPhase, steps: readonly StepProgress[]): boolean {
  if (phase === 'Skipped') return true;
  return (phase === 'Failed' || phase === 'Cancelled') && steps.every((s) => s.phase === 'Pending');
}

/** A step as it starts: InProgress, with each of its plan's tasks InProgress. */
export function startedStep(step: PlanShape['steps'][number], progress: StepProgress): StepProgress {
  return {
    ...progress,
    phase: 'InProgress',
    tasks: step.tasks.map((t) => ({ registration: t.registration, phase: 'InProgress' })),
  };
}

/**
 * The steps an attempt runs: all of them, on a retry too: another activation may have moved the
 * routes of a step that succeeded before, and a step whose routes hold its assignment already
 * changes nothing. A plan whose steps changed since the first attempt cannot be retried.
 */
export function stepsToRun(plan: PlanShape, progress: readonly StepProgress[]): { run: number[] } | { error: string } {
  if (progress.length === 0) return { run: plan.steps.map((_, i) => i) };
  const names = plan.steps.map((s) => s.name).join(',');
  if (names !== progress.map((s) => s.name).join(',')) {
    return {
      error: `the plan's steps changed since the first attempt (now ${names}, then ${progress.map((s) => s.name).join(',')}); create a new VectorActivation`,
    };
  }
  return { run: plan.steps.map((_, i) => i) };
}

/**
 * The progress of an attempt whose run closed without finishing, as its executions say (the run's
 * own status lags behind them): a task whose execution recorded a rule ran, Succeeded if the
 * status said so and Error otherwise (it was ended); an unfinished one without a record changed
 * nothing, and a step none of whose tasks ran stays Pending (so the usage is given back when no
 * step ran, releasesUsage). `executions[i][j]`: the execution name of step i's task j in this attempt.
 */
export function closedOutProgress(
  plan: PlanShape,
  steps: readonly StepProgress[],
  executions: readonly (readonly string[])[],
  recorded: ReadonlySet<string>,
): StepProgress[] {
  const before = steps.length === plan.steps.length ? steps : initialProgress(plan);
  return plan.steps.map((step, i) => {
    const tasks = step.tasks.map((t, j): TaskProgress => {
      const was = before[i]!.tasks.find((x) => x.registration === t.registration) ?? {
        registration: t.registration,
        phase: 'Pending',
      };
      const execution = executions[i]![j]!;
      if (recorded.has(execution))
        return { ...was, execution, phase: was.phase === 'Succeeded' ? 'Succeeded' : 'Error' };
      return was.phase === 'InProgress'
        ? { registration: t.registration, phase: 'Error', message: 'ended: its run closed before it changed a route' }
        : was;
    });
    // A step in which no task ran (recorded, or succeeded) changed nothing: still Pending.
    const ran = tasks.some((t) => t.execution !== undefined || t.phase === 'Succeeded');
    const phase: StepPhase = !ran ? 'Pending' : tasks.every((t) => t.phase === 'Succeeded') ? 'Succeeded' : 'Failed';
    return { name: step.name, phase, tasks };
  });
}

/** The last step of `steps` in which a task ran; -1 when none did. */
export function lastRanStep(steps: readonly StepProgress[]): number {
  for (let i = steps.length - 1; i >= 0; i--) if (steps[i]!.tasks.some((t) => t.execution !== undefined)) return i;
  return -1;
}

export interface TaskOutcome {
  registration: string;
  execution: string;
  ok: boolean;
  message: string;
}

/** A step succeeds when every task did and nobody cancelled meanwhile. */
export function stepOutcome(outcomes: readonly TaskOutcome[], cancelled: boolean): StepProgress['phase'] {
  return outcomes.every((o) => o.ok) && !cancelled ? 'Succeeded' : 'Failed';
}

export function taskProgressOf(outcomes: readonly TaskOutcome[]): TaskProgress[] {
  return outcomes.map((o) => ({
    registration: o.registration,
    execution: o.execution,
    phase: o.ok ? 'Succeeded' : 'Error',
    message: clip(o.message),
  }));
}

// --- the end -------------------------------------------------------------------------------

export interface Ending {
  phase: FinalPhase;
  reason: string;
  message: string;
}

/** What stopped an activation early: a cancel (with its reason), or its Stage lost (stageLoss's message). */
export interface StopCause {
  reason?: string;
  stageLost?: string;
}

/**
 * How an activation ends when it is stopped `where` ("while waiting for Stage shop", "in step
 * mesh"), with `state` saying what stayed applied: Cancelled, reason StageDeleted when its Stage
 * went (whatever else asked it to stop), else reason Cancelled.
 */
export function stoppedEnding(where: string, stop: StopCause, state?: string): Ending {
  if (stop.stageLost)
    return {
      phase: 'Cancelled',
      reason: 'StageDeleted',
      message: `${stop.stageLost}: the activation stopped ${where}; ${state ?? 'no route was changed'}`,
    };
  return {
    phase: 'Cancelled',
    reason: 'Cancelled',
    message: `cancelled ${where}${because(stop.reason)}${state ? `; ${state}` : ''}`,
  };
}

export interface FailureInput {
  step: string;
  /** Where the activation stopped, when not in `step` ("before step mesh"). */
  where?: string;
  firstError?: string;
  cancelled?: StopCause;
  onFailure: 'Stop' | 'Revert';
  /** What the revert did: every recorded rule put back, or some left changed. */
  revert?: 'done' | 'partial';
  progress: readonly StepProgress[];
  /**
   * The executions that recorded a rule before they ended (they may have changed it); when given,
   * a task that ended Error without a record changed nothing and makes no step "maybe partly applied".
   */
  recorded?: readonly string[];
}

/** ADR-0012 failure rule, Kargo's lesson: a failed activation says exactly what stayed applied. */
export function failureEnding(i: FailureInput): Ending {
  const applied = i.progress
    .filter((s) => s.phase === 'Succeeded' || (s.phase === 'Failed' && s.tasks.some((t) => t.phase === 'Succeeded')))
    .map((s) => s.name);
  // A task that ended Error after it ran may have changed some of its routes before it was refused.
  const mayHaveChanged = (t: TaskProgress) =>
    t.phase === 'Error' && t.execution !== undefined && (i.recorded === undefined || i.recorded.includes(t.execution));
  const partly = i.progress
    .filter((s) => !applied.includes(s.name) && s.phase === 'Failed' && s.tasks.some(mayHaveChanged))
    .map((s) => s.name);
  const left = [
    applied.length ? `steps left applied: ${applied.join(', ')}` : 'no step was applied',
    ...(partly.length ? [`maybe partly applied: ${partly.join(', ')}`] : []),
  ].join('; ');
  let state: string;
  if (i.onFailure !== 'Revert') state = left;
  else if (i.revert === 'partial') state = `the revert failed for some tasks; ${left}`;
  else state = 'every task that ran was reverted: its routes are back as it found them';
  if (i.cancelled) return stoppedEnding(i.where ?? `in step ${i.step}`, i.cancelled, state);
  return { phase: 'Failed', reason: 'TaskFailed', message: `${i.firstError ?? `step ${i.step} failed`}; ${state}` };
}

export function because(reason: string | undefined): string {
  return reason ? ` (${reason})` : '';
}

// --- cancel and retry ----------------------------------------------------------------------

export type RequestAction = 'cancel' | 'retry';
export type RequestAnswer = { accepted: true } | { accepted: false; message: string };

/**
 * Cancel stops anything that has not ended well (a Failed or Cancelled one closes its retry
 * window); retry runs a Failed or Cancelled activation again. Everything else is refused, saying why.
 */
export function answerRequest(action: RequestAction, phase: string): RequestAnswer {
  if (action === 'cancel') {
    if (phase === 'Succeeded' || phase === 'Skipped')
      return { accepted: false, message: `refused: the activation is ${phase}; nothing to cancel` };
    return { accepted: true };
  }
  if (isRetryable(phase)) return { accepted: true };
  return {
    accepted: false,
    message: `refused: the activation is ${phase}; only a Failed or Cancelled activation can be retried`,
  };
}

// --- status --------------------------------------------------------------------------------

export type ConditionInput = Pick<Condition, 'type' | 'status' | 'reason' | 'message'>;

/** Progressing while it runs; Succeeded True, False or Unknown (still running). */
export function activationConditions(phase: VectorActivationPhase, reason: string, message: string): ConditionInput[] {
  const final = isFinal(phase);
  const r = reasonOf(reason);
  const m = clip(message, MAX_TOP_MESSAGE);
  return [
    { type: 'Progressing', status: final ? 'False' : 'True', reason: r, message: m },
    { type: 'Succeeded', status: phase === 'Succeeded' ? 'True' : final ? 'False' : 'Unknown', reason: r, message: m },
  ];
}

export interface ActivationReport {
  phase: VectorActivationPhase;
  reason: string;
  message: string;
  workflowId: string;
  workflowUrl?: string;
  attempt: number;
  previousStageVersion?: string;
  firstError?: string;
  startTime?: string;
  completionTime?: string;
  steps: StepProgress[];
  /** A progressive activation's step, weight, gate, analyses and answers (workflows/progression.ts). */
  progression?: ProgressionReport;
}

/** What a progression reports (api/progression.ts progressionStatus); null removes a field in the status' merge patch. */
export interface ProgressionReport {
  step: number;
  steps: number;
  stepName?: string | null;
  weight: number;
  gate?: { type: string; since: string; until?: string; message: string } | null;
  analysisRuns?: (AnalysisRun & { consecutiveErrors?: number })[];
  log?: { time: string; step: number; action: string; by?: string; message: string }[];
}

/** The status fields the workflow owns, each within its schema maximum. */
export function activationStatus(r: ActivationReport): ActivationReport {
  return {
    ...r,
    reason: reasonOf(r.reason),
    message: clip(r.message, MAX_TOP_MESSAGE),
    ...(r.firstError ? { firstError: clip(r.firstError) } : {}),
    steps: r.steps.map((s) => ({
      ...s,
      tasks: s.tasks.map((t) => (t.message ? { ...t, message: clip(t.message) } : t)),
    })),
    ...(r.progression ? { progression: progressionStatus(r.progression) } : {}),
  };
}

/** The progression's report as the status holds it: absent fields cleared, messages clipped, counters of its own left out. */
function progressionStatus(p: ProgressionReport): ProgressionReport {
  return {
    ...p,
    stepName: p.stepName ?? null,
    gate: p.gate ? { ...p.gate, message: clip(p.gate.message) } : null,
    ...(p.analysisRuns
      ? {
          analysisRuns: p.analysisRuns.map(({ consecutiveErrors: _kept, ...run }) => ({
            ...run,
            ...(run.message ? { message: clip(run.message) } : {}),
            measurements: run.measurements.map((m) => (m.message ? { ...m, message: clip(m.message) } : m)),
          })),
        }
      : {}),
    ...(p.log ? { log: p.log.map((e) => ({ ...e, message: clip(e.message) })) } : {}),
  };
}
