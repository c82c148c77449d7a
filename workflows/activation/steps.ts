/**
 * The plan's steps of one attempt: a step's tasks together, what the attempt ends with when one
 * fails, and the revert that puts back what the tasks found before they changed anything.
 */
import { CancellationScope, condition, isCancellation, patched } from '@temporalio/workflow';
import type { ResolvedPlan } from '../../activities/core.js';
import {
  failureEnding,
  startedStep,
  stepOutcome,
  taskProgressOf,
  type Ending,
  type StepProgress,
} from '../../decisions/activation.js';
import { restoreOrder } from '../../decisions/traffic.js';
import { messageOf } from '../failures.js';
import { bookkeeping } from './bookkeeping-activities.js';
import type { RunParts } from './parts.js';
import { runTask, unrecordedMessage, type Recording, type TaskContext } from './tasks.js';

/**
 * The executions that ran, by `<step index>/<registration>`: an earlier attempt's (a retried task
 * may keep their record), or this attempt's (a progression's next round keeps theirs).
 */
export function ranExecutions(steps: readonly StepProgress[]): Record<string, string> {
  const ran = steps.flatMap((step, i) =>
    step.tasks.flatMap((task) =>
      (task.phase === 'Succeeded' || task.phase === 'Error') && task.execution
        ? [[`${i}/${task.registration}`, task.execution]]
        : [],
    ),
  );
  return Object.fromEntries(ran);
}

/** Awaits executions' final writes; the first that failed, if one did. */
async function firstUnrecorded(recordings: Recording[]): Promise<{ execution: string; error?: unknown } | undefined> {
  return (await Promise.all(recordings)).find((recording) => 'error' in recording);
}

export class StepRunner {
  /** Whether this attempt ran a step, or closes out a run that did: it changed, or tried to change, routing. */
  private routing = false;
  /** The final status writes of a step's executions, made while the next step runs (run). */
  private readonly recordings: Recording[] = [];

  constructor(private readonly run: RunParts) {}

  get changedRouting(): boolean {
    return this.routing;
  }

  /** A new attempt changed nothing yet. */
  startAttempt(): void {
    this.routing = false;
  }

  /** A close-out: the run before changed routes, and its failure counts on the breakers. */
  closesOutRouting(): void {
    this.routing = true;
  }

  /** Awaits the executions' final writes left running; the first that failed, if one did. */
  async unrecorded(): Promise<{ execution: string; error?: unknown } | undefined> {
    return firstUnrecorded(this.recordings.splice(0));
  }

  /**
   * Runs step i (its tasks together); true when it failed (or was cancelled): the caller ends the attempt.
   * `started`: its InProgress is written already (with the hold and the mark). `followed`: another
   * step comes, and the final status of this step's executions is written while it runs; it
   * checks those writes as its own, so a record that fails fails a step, and what ran is reverted.
   * The last step's records are awaited in place: the switch follows only what is recorded.
   */
  async runStep(
    plan: ResolvedPlan,
    ctx: TaskContext,
    i: number,
    started: boolean,
    followed: boolean,
  ): Promise<boolean> {
    const { progress, requests, reporter } = this.run;
    const step = plan.steps[i]!;
    this.routing = true;
    const recordingsBefore = this.recordings.splice(0);
    /** The step's InProgress write, made while its executions are created (one round trip fewer a step). */
    let reporting: Promise<{ error?: unknown }> | undefined;
    if (!started) {
      progress.steps[i] = startedStep(step, progress.steps[i]!);
      // Settled into a value at once: a rejection left waiting would fail the workflow task.
      reporting = reporter.report('InProgress', 'RunningPlan', reporter.stepMessage(plan, i)).then(
        () => ({}),
        (error: unknown) => ({ error }),
      );
    }
    const stepProgress = progress.steps[i]!;

    const scope = new CancellationScope();
    const beside = followed ? this.recordings : undefined;
    const running = scope.run(() =>
      Promise.all(step.tasks.map((task) => runTask(ctx, i, step.name, task, 'Apply', beside))),
    );
    await Promise.race([running, condition(() => requests.cancelled)]).catch((err: unknown) => {
      // The whole workflow was cancelled (Temporal UI/CLI): its executions are being cancelled too.
      if (!isCancellation(err)) throw err;
      requests.cancelledInTemporal();
    });
    if (requests.cancelled) scope.cancel();
    // Every execution reaches a final state before the activation does (ADR-0012).
    const outcomes = await running;
    stepProgress.tasks = taskProgressOf(outcomes);
    stepProgress.phase = stepOutcome(outcomes, requests.cancelled);
    // The step's InProgress could not be written while its executions ran: the activation cannot
    // go on saying nothing, so it ends as a failed step does (reverted under onFailure Revert).
    const reported = await reporting;
    const unwritten = reported && 'error' in reported ? messageOf(reported.error) : undefined;
    const unrecorded = await firstUnrecorded(recordingsBefore);
    if (stepProgress.phase === 'Succeeded' && !unwritten && !unrecorded) return false;
    const failed = outcomes.find((outcome) => !outcome.ok);
    if (unrecorded) reporter.noteError(unrecordedMessage(unrecorded));
    if (failed) reporter.noteError(`step ${step.name}, task ${failed.registration}: ${failed.message}`);
    if (unwritten) reporter.noteError(`step ${step.name}: its InProgress status could not be written: ${unwritten}`);
    return true;
  }

  /**
   * How an attempt ends after step i failed or was cancelled: reverted under Revert (every step up to
   * `through`: a progression's earlier rounds applied the steps after i too), else left applied.
   */
  async failure(
    plan: ResolvedPlan,
    ctx: TaskContext,
    i: number,
    at: { through?: number; where?: string } = {},
  ): Promise<Ending> {
    const { progress, requests, reporter } = this.run;
    const step = plan.steps[i]!;
    const revert = plan.onFailure === 'Revert' ? await this.revertSteps(plan, ctx, at.through ?? i) : undefined;
    // Left applied (Stop): which refused tasks recorded a rule, and so may have changed it.
    const tasks = revert ? [] : (progress.steps[i]?.tasks ?? []);
    const refused = tasks.flatMap((task) => (task.phase === 'Error' && task.execution ? [task.execution] : []));
    // An execution that is gone took its record along: it may have changed its rules.
    const records = refused.length ? await this.recordsOf(refused) : undefined;
    const recorded = records ? { recorded: [...records.recorded, ...records.gone] } : {};
    const { firstError } = reporter;
    const cancelled = requests.stopCause();
    return failureEnding({
      step: step.name,
      ...(at.where ? { where: at.where } : {}),
      ...(firstError ? { firstError } : {}),
      ...(cancelled ? { cancelled } : {}),
      onFailure: plan.onFailure,
      ...(revert ? { revert } : {}),
      progress: progress.steps,
      ...recorded,
    });
  }

  /**
   * Puts back what every task of steps [0..failedStep] that ran found before it changed anything
   * (its execution's record), newest step first. A task that recorded no rule changed none; one
   * whose execution is gone cannot be put back, and makes the revert partial.
   */
  async revertSteps(plan: ResolvedPlan, ctx: TaskContext, failedStep: number): Promise<'done' | 'partial'> {
    const { progress, reporter } = this.run;
    const ran = restoreOrder(progress.steps, failedStep);
    const { recorded, gone } = await this.recordsOf(ran.flatMap((step) => step.tasks.map((task) => task.execution)));
    let all = true;
    for (const { step: i, tasks } of ran) {
      // A task that succeeded changed its rules: with its execution deleted (its namespace going, say)
      // the record of what was there went too, and nothing of it can be put back.
      const stepProgress = progress.steps[i]!;
      const lost = stepProgress.tasks.filter(
        (task) => task.phase === 'Succeeded' && task.execution !== undefined && gone.has(task.execution),
      );
      for (const task of lost) {
        task.message = `ActivationExecution ${task.execution} is gone, and with it the record of what it changed: nothing of it was put back`;
        reporter.noteError(`revert of ${task.registration}: ${task.message}`);
      }
      let ok = lost.length === 0;
      const done = tasks.filter((task) => recorded.has(task.execution));
      if (done.length > 0) {
        const step = plan.steps[i]!;
        await reporter.report('InProgress', 'Reverting', `reverting step ${step.name}`);
        const planned = (registration: string) => step.tasks.find((task) => task.registration === registration)!;
        const outcomes = await CancellationScope.nonCancellable(() =>
          Promise.all(
            done.map((ranTask) =>
              runTask(ctx, i, step.name, planned(ranTask.registration), 'Revert', undefined, ranTask.execution),
            ),
          ),
        );
        ok &&= outcomes.every((outcome) => outcome.ok);
        for (const outcome of outcomes.filter((result) => !result.ok))
          reporter.noteError(`revert of ${outcome.registration}: ${outcome.message}`);
      }
      // The step that failed stays Failed, put back or not: it is the one the status names.
      if ((done.length > 0 || lost.length > 0) && stepProgress.phase !== 'Failed')
        stepProgress.phase = ok ? 'Reverted' : 'Failed';
      all &&= ok;
    }
    return all ? 'done' : 'partial';
  }

  /** Which executions recorded a rule, and which are gone (deleted with their records). */
  private async recordsOf(names: string[]): Promise<{ recorded: Set<string>; gone: Set<string> }> {
    if (names.length === 0) return { recorded: new Set(), gone: new Set() };
    const { namespace } = this.run.ref;
    if (!patched('gone-records'))
      return { recorded: new Set(await bookkeeping.recordedExecutions(namespace, names)), gone: new Set() };
    const { recorded, gone } = await bookkeeping.executionRecords(namespace, names);
    return { recorded: new Set(recorded), gone: new Set(gone) };
  }
}
