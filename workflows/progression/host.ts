/**
 * What a progression needs of the activation's run (the host: workflows/activation/progression-host.ts),
 * and what each step kind's handler (kinds/) needs of the progression.
 */
import type { WebhookBody } from '../../activities/analysis.js';
import type { StageRef } from '../../activities/measure.js';
import type { Ending } from '../../decisions/activation.js';
import type { QueryVars } from '../../decisions/analysis.js';
import type { Gate, Next, ProgressionSpec } from '../../decisions/progression.js';
import type { ActionRequest } from '../../shared/activation.js';
import type { ActivationRequests } from '../activation/requests.js';
import type { ProgressionAnalyses } from './analyses.js';

export interface ProgressionHost {
  readonly requests: ActivationRequests;
  /** The activation's phase now (its answers are refused once it ended). */
  phase(): string;
  /**
   * Runs the plan's steps with `weight` to the target, as round `index`; an Ending when a step
   * failed (handled already). `followed`: another round comes at once, and the records of this
   * round's last step are written while it runs (it checks them as its own).
   */
  round(weight: number, index: number, down: boolean, followed: boolean): Promise<Ending | undefined>;
  /** Puts back every rule a task of this attempt changed, as recorded before it. */
  restore(): Promise<'done' | 'partial'>;
  /** Ends as a cancel in the middle of the progression does (stopped `where`): reverted if the plan says Revert. */
  cancelled(where: string): Promise<Ending>;
  /** Writes the status (InProgress) with the progression's report. */
  report(reason: string, message: string): Promise<void>;
  /**
   * Reads the Stage when a gate wakes the run or before the traffic goes back a step: false when
   * it is gone or being deleted (the run is then cancelled, and ends StageDeleted).
   */
  stageStillOurs(): Promise<boolean>;
  /** The Stage the activation validated: each measurement reads it too (activities/measure.ts). */
  readonly stage: StageRef;
  /** A newer activation waits for the Stage. */
  newerWaiting(): { by: string; revision: number } | undefined;
  /** The Stage's Lease over a long gate: taken for that long instead of renewed (undefined: renewed again). */
  holdLease(seconds: number | undefined): Promise<void>;
  readonly vars: QueryVars;
  readonly webhookBody: (step: number, stepName: string | undefined, weight: number) => WebhookBody;
}

/** What ended the progression before the switch. */
export type Stop = { ending: Ending } | 'promote';
/** Where a step leads, and why when it aborts. */
export interface Outcome {
  next: Next;
  reason?: string;
  why?: string;
}
/** What a step's handler ends with: an ending (a round failed), where it leads, or nothing (go on). */
export type StepResult = { ending: Ending } | Outcome | undefined;

/** The entries of the progression's log: each answer, time-out and supersession. */
export type LoggedAction = 'Approved' | 'Promoted' | 'Aborted' | 'TimedOut' | 'Continued' | 'Superseded';

/** What a step kind's handler needs of the progression. */
export interface ProgressionContext {
  readonly spec: ProgressionSpec;
  readonly host: ProgressionHost;
  readonly analyses: ProgressionAnalyses;
  /** The weight the target has now. */
  readonly weight: number;
  /** "step 3/7 (canary-50)" for the step the progression is at. */
  label(): string;
  /** One round of the plan's steps at `weight`; an Ending when it failed. */
  setWeight(weight: number, followed: boolean): Promise<Ending | undefined>;
  /** The gate the progression waits at from now (undefined: none); the next status says it. */
  showGate(gate: Gate | undefined, since?: number): void;
  /** The gate shown now, if any. */
  readonly gate: Gate | undefined;
  /** Writes the status with the progression's report. */
  writeStatus(reason: string, message: string): Promise<void>;
  /**
   * Whether something stops a wait or an analysis: an answer, a cancel, a newer activation, a
   * failed background run.
   */
  interrupted(): boolean;
  /** Notes an answer, a time-out or a supersession in the progression's log. */
  logAction(action: LoggedAction, message: string, by?: string): void;
}

/** " by alice" when the request says who asked. */
export const byWhom = (request: ActionRequest): string => (request.by ? ` by ${request.by}` : '');
