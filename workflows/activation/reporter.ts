/**
 * What the activation says: every status write of the run and what Temporal shows of it (the
 * progress query, the ActivationPhase search attribute, the current details). It keeps what the
 * object holds of the status, as far as it knows, so a write goes over it without a read.
 */
import { CancellationScope, setCurrentDetails, upsertSearchAttributes, workflowInfo } from '@temporalio/workflow';
import type { LoadedActivation, ResolvedPlan } from '../../activities/core.js';
import type { StageVersionInfo } from '../../api/stage-version.js';
import type { VectorActivationPhase } from '../../api/vector-activation.js';
import {
  activationStatus,
  isFinal,
  type ActivationReport,
  type ProgressionReport,
  type StepProgress,
} from '../../decisions/activation.js';
import { statusWrite, type KnownStatus, type StatusOver } from '../../decisions/status-write.js';
import type { ActivationProgress, ActivationRef } from '../../shared/activation.js';
import { kubeTime as now, temporalWorkflowUrl } from '../../shared/format.js';
import { ACTIVATION_PHASE } from '../../shared/search-attributes.js';
import { bookkeeping } from './bookkeeping-activities.js';
import type { ActivationRequests } from './requests.js';

/** A status write over what the object holds, and how to settle what the run knows once it is made. */
export interface StatusWriting {
  over: StatusOver | undefined;
  settle<T>(writing: Promise<T>, made: (result: T) => boolean): Promise<T>;
}

/** What the status shows of a running progression. */
export interface ShownProgression {
  readonly report: ProgressionReport;
  /** The weight the round running now sets. */
  readonly setting: number | undefined;
}

export class ActivationReporter {
  private readonly workflowUrl: string | undefined;
  /** The first error of the run: the status keeps it through retries and reverts. */
  private firstErrorMessage: string | undefined;
  private startedAt: string | undefined;
  /** The StageVersion that served before this activation (the status's previousStageVersion). */
  private previousVersion: StageVersionInfo | undefined;
  /** The progression, while one runs: its report goes into every status written. */
  private progression: ShownProgression | undefined;
  /** The ActivationPhase search attribute as last upserted. */
  private upsertedPhase: string | undefined;
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
    private readonly progress: ActivationProgress & { steps: StepProgress[] },
    uiUrl: string | undefined,
  ) {
    const info = workflowInfo();
    this.workflowUrl = uiUrl ? temporalWorkflowUrl(uiUrl, info.namespace, info.workflowId) : undefined;
    this.firstErrorMessage = va.status.firstError;
    this.startedAt = va.status.startTime;
    this.known = va.known;
  }

  get firstError(): string | undefined {
    return this.firstErrorMessage;
  }

  get previous(): StageVersionInfo | undefined {
    return this.previousVersion;
  }

  /** Keeps `message` as the run's first error, unless one is kept already. */
  noteError(message: string): void {
    this.firstErrorMessage ??= message;
  }

  /** The StageVersion that served before, as the attempt (or the close-out) found it. */
  notePrevious(previous: StageVersionInfo | undefined): void {
    this.previousVersion = previous;
  }

  /** The run's first step started at `time` (the status's startTime, kept through retries). */
  noteStart(time: string): void {
    this.startedAt = time;
  }

  /** A progression runs (or none, undefined): its report goes into every status from now on. */
  showProgression(progression: ShownProgression | undefined): void {
    this.progression = progression;
  }

  /** What the status says of step i while it runs. */
  stepMessage(plan: ResolvedPlan, i: number): string {
    const setting = this.progression?.setting;
    const weight = setting !== undefined ? `, setting ${setting} % to ${this.va.stageVersion}` : '';
    return `step ${i + 1}/${plan.steps.length} (${plan.steps[i]!.name}) of ${plan.source}${weight}`;
  }

  /** Writes the status and shows it in Temporal. A write that finds the object gone is its deletion. */
  async report(phase: VectorActivationPhase, reason: string, message: string): Promise<void> {
    this.show(phase, reason, message);
    const status = this.statusOf(phase, reason, message);
    const { over, settle } = this.writing(status);
    const write = CancellationScope.nonCancellable(() => bookkeeping.writeActivationStatus(this.ref, status, over));
    const written = await settle(write, (made) => made);
    // Whether or not a watcher saw it: no new step starts, the running ones are cancelled, and the
    // workflow closes.
    if (written === false) this.requests.deleted();
  }

  /**
   * A status write over what the run knows the object holds (`over`, when it knows it), taken as
   * made from here on: a write issued beside it goes over it too. `settle` awaits it and says
   * whether the object holds it as known; if not (it failed, was not made, or found the object gone
   * or being deleted) the run forgets what it knew, and later writes read first.
   */
  writing(status: ActivationReport): StatusWriting {
    const known = this.known;
    const write = known ? statusWrite(known, status, new Date()) : undefined;
    const { stage, stageVersion } = this.va;
    const stageUid = this.requests.knownStageUid;
    const over: StatusOver | undefined =
      known && write
        ? { known, conditions: write.conditions, stage, stageVersion, ...(stageUid ? { stageUid } : {}) }
        : undefined;
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
  show(phase: VectorActivationPhase, reason: string, message: string): void {
    Object.assign(this.progress, { phase, reason, message });
    // An unchanged phase (the next step's InProgress) costs no history event.
    if (phase !== this.upsertedPhase) upsertSearchAttributes([{ key: ACTIVATION_PHASE, value: phase }]);
    this.upsertedPhase = phase;
    setCurrentDetails(`**${phase}** (${reason}): ${message}${this.progressionDetails()}`);
  }

  /** The status a report writes; `steps` and `start` when they are not yet the run's own. */
  statusOf(
    phase: VectorActivationPhase,
    reason: string,
    message: string,
    steps = this.progress.steps,
    start = this.startedAt,
  ) {
    const { previousVersion: previous, firstErrorMessage: firstError, workflowUrl } = this;
    const progression = this.progression?.report;
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
      ...(progression ? { progression } : {}),
    });
  }

  /** The run's start as the status says it (kept through retries), or now for a first step. */
  startTime(): string {
    return this.startedAt ?? now();
  }

  private progressionDetails(): string {
    const report = this.progression?.report;
    if (!report) return '';
    const where = report.step < report.steps ? `step ${report.step + 1}/${report.steps}` : 'the switch';
    const { gate } = report;
    const waiting = gate
      ? `; waiting at ${gate.type} since ${gate.since}${gate.until ? ` until ${gate.until}` : ''}`
      : '';
    return `\n\n**Progression**: ${where}, ${report.weight} % to ${this.va.stageVersion}${waiting}`;
  }
}
