/**
 * Which Kubernetes Events tell the story of an activation, a Stage and its StageVersions, as pure
 * functions: from the status last written and the one about to be written (a transition), or from
 * what the Stage controller just did. The shells (activities, the watcher, the controller) record
 * what these return; k8s/events.ts aggregates a repeat into one Event. The table of every Event is
 * docs/events.md; each rule has a row in test/unit/events.test.ts.
 */
import { executionName } from '../shared/names.js';
import type { ProgressionReport, StepProgress } from './activation.js';
import { gateEvent } from './step-kinds/index.js';

export type EventKind = 'VectorActivation' | 'Stage' | 'StageVersion';

export interface EventSpec {
  /** Which object of the activation's namespace it regards. */
  kind: EventKind;
  name: string;
  type: 'Normal' | 'Warning';
  reason: string;
  action: string;
  note: string;
}

/** What the events compare of a VectorActivation's status (the one written, or about to be). */
export interface StatusView {
  phase?: string;
  reason?: string;
  message?: string;
  attempt?: number;
  firstError?: string;
  previousStageVersion?: string;
  steps?: readonly StepProgress[];
  progression?: ProgressionReport;
}

export interface ActivationFacts {
  name: string;
  stage: string;
  stageVersion: string;
  /** Who holds the Stage while this one waits (the Lease's holder), if anyone. */
  holder?: string;
}

const FINAL: Record<string, { type: 'Normal' | 'Warning'; action: string }> = {
  Succeeded: { type: 'Normal', action: 'Activate' },
  Failed: { type: 'Warning', action: 'Activate' },
  Skipped: { type: 'Normal', action: 'Skip' },
  Cancelled: { type: 'Normal', action: 'Cancel' },
};

const attemptNote = (attempt: number | undefined) => ((attempt ?? 1) > 1 ? ` (attempt ${attempt})` : '');

function executions(
  activation: string,
  attempt: number,
  index: number,
  step: StepProgress,
  revert = false,
  only?: (t: StepProgress['tasks'][number]) => boolean,
): string {
  const tasks = step.tasks.filter(only ?? (() => true));
  return tasks
    .map((t) =>
      revert
        ? executionName(activation, index, t.registration, attempt, true)
        : (t.execution ?? executionName(activation, index, t.registration, attempt)),
    )
    .join(', ');
}

/**
 * Per step: succeeded, failed, reverted (or its revert failed), by comparing phases. A step's start
 * says nothing: the status shows it running, and its end says it again with what it did.
 */
function stepEvents(a: ActivationFacts, before: StatusView, after: StatusView): EventSpec[] {
  const out: EventSpec[] = [];
  const attempt = after.attempt ?? 1;
  const steps = after.steps ?? [];
  const ev = (type: EventSpec['type'], reason: string, action: string, note: string): EventSpec => ({
    kind: 'VectorActivation',
    name: a.name,
    type,
    reason,
    action,
    note,
  });
  steps.forEach((step, i) => {
    const was = before.steps?.[i]?.name === step.name ? before.steps[i]!.phase : undefined;
    if (step.phase === was) return;
    const of = `step ${i + 1}/${steps.length} ${step.name}${attemptNote(attempt)}`;
    if (step.phase === 'Succeeded')
      out.push(
        ev('Normal', 'StepSucceeded', 'RunStep', `${of} succeeded: execution ${executions(a.name, attempt, i, step)}`),
      );
    if (step.phase === 'Failed' && was === 'InProgress') {
      const failed = step.tasks
        .filter((t) => t.phase === 'Error')
        .map((t) => `${t.execution ?? t.registration}: ${t.message ?? 'failed'}`);
      out.push(ev('Warning', 'StepFailed', 'RunStep', `${of} failed: ${failed.join('; ') || 'cancelled'}`));
    }
    if (step.phase === 'Failed' && was === 'Succeeded')
      out.push(ev('Warning', 'RevertFailed', 'Revert', `${of}: the revert failed; the step stays applied`));
    if (step.phase === 'Reverted') {
      const back = after.previousStageVersion ? `: traffic back on ${after.previousStageVersion}` : '';
      out.push(
        ev(
          'Normal',
          'Reverted',
          'Revert',
          `${of} reverted${back} (execution ${executions(a.name, attempt, i, step, true, (t) => t.phase === 'Succeeded')})`,
        ),
      );
    }
  });
  return out;
}

/**
 * The Events of one status write of a VectorActivation: nothing when the status does not change
 * (the same write repeated), else each transition it makes, in story order.
 */
export function activationEvents(
  a: ActivationFacts,
  before: StatusView,
  after: StatusView & { phase: string; reason: string; message: string },
): EventSpec[] {
  const out: EventSpec[] = [];
  const attempt = after.attempt ?? 1;
  const ev = (type: EventSpec['type'], reason: string, action: string, note: string): EventSpec => ({
    kind: 'VectorActivation',
    name: a.name,
    type,
    reason,
    action,
    note,
  });
  // Started: the workflow picked it up. An attempt begins by validating (Pending); a new
  // activation's first write is its first news instead: InProgress, or Waiting for its Stage.
  const validating = after.phase === 'Pending' && after.reason === 'Validating';
  const newAttempt = before.phase !== after.phase || (before.attempt ?? 1) !== attempt;
  const firstNews = before.phase === undefined && (after.phase === 'Waiting' || after.phase === 'InProgress');
  if ((validating && newAttempt) || firstNews) {
    out.push(
      ev(
        'Normal',
        'Started',
        'Start',
        `activating StageVersion ${a.stageVersion} on Stage ${a.stage}${attemptNote(attempt)}`,
      ),
    );
  }
  // Held back by a CircuitBreaker (docs/scale.md): its message says which and until when.
  const breaker = after.reason === 'CircuitOpen' || after.reason === 'RateLimited';
  if (breaker && (before.phase !== after.phase || before.reason !== after.reason)) {
    out.push(ev('Normal', after.reason, 'WaitForBreaker', `${after.message}${attemptNote(attempt)}`));
  } else if (after.phase === 'Waiting' && before.phase !== 'Waiting' && !breaker) {
    const holder = a.holder ? `held by ${a.holder}` : 'nobody holds it now';
    out.push(ev('Normal', 'Waiting', 'WaitForStage', `queued for Stage ${a.stage} (${holder})${attemptNote(attempt)}`));
  }
  // Steps leave InProgress before the revert or the end is reported: their events come first. The
  // steps a success ends with are told by its own Event.
  const final = FINAL[after.phase];
  const succeeds = after.phase === 'Succeeded' && before.phase !== after.phase;
  const steps = stepEvents(a, before, after);
  const ended = succeeds ? steps.filter((e) => e.reason === 'StepSucceeded') : [];
  out.push(...steps.filter((e) => !ended.includes(e)));
  out.push(...progressionEvents(a, before.progression, after.progression));
  if (after.reason === 'Reverting' && (before.reason !== 'Reverting' || before.message !== after.message)) {
    out.push(
      ev(
        'Warning',
        'Reverting',
        'Revert',
        `${after.message}${after.previousStageVersion ? ` back to ${after.previousStageVersion}` : ''}${attemptNote(attempt)}`,
      ),
    );
  }
  if (after.phase === 'InProgress' && before.phase !== 'InProgress') {
    const from = after.previousStageVersion ? ` (from ${after.previousStageVersion})` : '';
    out.push({
      kind: 'Stage',
      name: a.stage,
      type: 'Normal',
      reason: 'ActivationStarted',
      action: 'Activate',
      note: `VectorActivation ${a.name} switches the traffic to StageVersion ${a.stageVersion}${from}${attemptNote(attempt)}`,
    });
  }
  if (final && before.phase !== after.phase) {
    let note = `${after.reason}: ${after.message}`;
    if (after.phase === 'Failed' && after.firstError && !after.message.includes(after.firstError))
      note += `; first error: ${after.firstError}`;
    // A step's own note names the attempt already.
    const told = ended.length ? `${note}; ${ended.map((e) => e.note).join('; ')}` : note + attemptNote(attempt);
    out.push(ev(final.type, after.phase, final.action, told));
    if (after.phase === 'Failed') {
      out.push({
        kind: 'Stage',
        name: a.stage,
        type: 'Warning',
        reason: 'ActivationFailed',
        action: 'Activate',
        note: `VectorActivation ${a.name} of StageVersion ${a.stageVersion} failed: ${note}${attemptNote(attempt)}`,
      });
    }
  }
  return out;
}

/** A cancel or retry asked by annotation, answered by the workflow (or by the watcher for it). */
export function requestEvent(
  activation: string,
  action: 'cancel' | 'retry' | 'approve' | 'promote' | 'abort',
  token: string,
  outcome: 'Accepted' | 'Refused',
  message: string,
  by?: string,
): EventSpec {
  const verb = `${action[0]!.toUpperCase()}${action.slice(1)}`;
  const who = by ? ` (asked by ${by})` : '';
  return {
    kind: 'VectorActivation',
    name: activation,
    type: outcome === 'Accepted' ? 'Normal' : 'Warning',
    reason: `${verb}${outcome}`,
    action: verb,
    note: `${token}${who}: ${message}`,
  };
}

/** The Stage's "active" usage moved: the Stage and both StageVersions say so. */
export function activeChangedEvents(stage: string, to: string, from: string | undefined): EventSpec[] {
  const was = from ? ` (was ${from})` : '';
  const out: EventSpec[] = [
    {
      kind: 'Stage',
      name: stage,
      type: 'Normal',
      reason: 'ActiveStageVersionChanged',
      action: 'Activate',
      note: `StageVersion ${to} serves the traffic${was}`,
    },
    {
      kind: 'StageVersion',
      name: to,
      type: 'Normal',
      reason: 'Activated',
      action: 'Activate',
      note: `serves the traffic of Stage ${stage}${was}`,
    },
  ];
  if (from && from !== to)
    out.push({
      kind: 'StageVersion',
      name: from,
      type: 'Normal',
      reason: 'Superseded',
      action: 'Activate',
      note: `Stage ${stage} now serves ${to} instead`,
    });
  return out;
}

/** The Stage controller created a StageVersion for the Stage's new vector. */
export function stageVersionCreatedEvents(sv: {
  name: string;
  stage: string;
  revision: number;
  vector: string;
}): EventSpec[] {
  return [
    {
      kind: 'Stage',
      name: sv.stage,
      type: 'Normal',
      reason: 'StageVersionCreated',
      action: 'Create',
      note: `created StageVersion ${sv.name} (revision ${sv.revision}) for ${sv.vector}`,
    },
    {
      kind: 'StageVersion',
      name: sv.name,
      type: 'Normal',
      reason: 'Created',
      action: 'Create',
      note: `revision ${sv.revision} of Stage ${sv.stage}, for ${sv.vector}`,
    },
  ];
}

/** The Stage controller saw the target StageVersion Ready and created its VectorActivation. */
export function activationCreatedEvents(va: { name: string; stage: string; stageVersion: string }): EventSpec[] {
  return [
    {
      kind: 'Stage',
      name: va.stage,
      type: 'Normal',
      reason: 'ActivationCreated',
      action: 'Create',
      note: `StageVersion ${va.stageVersion} is Ready: created VectorActivation ${va.name}`,
    },
    {
      kind: 'StageVersion',
      name: va.stageVersion,
      type: 'Normal',
      reason: 'Ready',
      action: 'Create',
      note: `Ready: VectorActivation ${va.name} created to activate it on Stage ${va.stage}`,
    },
  ];
}

/** The Stage controller deleted an unused StageVersion beyond the history limit. */
export function cleanedUpEvents(sv: { name: string; stage: string }, why: string): EventSpec[] {
  return [
    {
      kind: 'Stage',
      name: sv.stage,
      type: 'Normal',
      reason: 'StageVersionCleanedUp',
      action: 'Delete',
      note: `${why}; deleted`,
    },
    {
      kind: 'StageVersion',
      name: sv.name,
      type: 'Normal',
      reason: 'CleanedUp',
      action: 'Delete',
      note: `${why}; deleted`,
    },
  ];
}

const LOG_EVENTS: Record<string, { type: 'Normal' | 'Warning'; action: string }> = {
  Approved: { type: 'Normal', action: 'Approve' },
  Promoted: { type: 'Normal', action: 'Promote' },
  Continued: { type: 'Normal', action: 'Approve' },
  Aborted: { type: 'Warning', action: 'Abort' },
  TimedOut: { type: 'Warning', action: 'Abort' },
  Superseded: { type: 'Warning', action: 'Abort' },
};

/**
 * A progressive activation's story: each weight set, each gate it waits at (and until when),
 * each analysis verdict, and each answer (who approved, promoted or aborted, a time-out).
 */
export function progressionEvents(
  a: ActivationFacts,
  before: ProgressionReport | undefined,
  after: ProgressionReport | undefined,
): EventSpec[] {
  if (!after) return [];
  const out: EventSpec[] = [];
  const ev = (type: EventSpec['type'], reason: string, action: string, note: string): EventSpec => ({
    kind: 'VectorActivation',
    name: a.name,
    type,
    reason,
    action,
    note,
  });
  if (after.weight !== (before?.weight ?? 0))
    out.push(
      ev(
        'Normal',
        'WeightSet',
        'SetWeight',
        `StageVersion ${a.stageVersion} receives ${after.weight} % of Stage ${a.stage}'s traffic`,
      ),
    );
  const gate = after.gate;
  if (gate && (gate.type !== before?.gate?.type || gate.since !== before.gate.since)) {
    out.push(
      ev('Normal', gateEvent(gate.type), 'Wait', `${gate.message}${gate.until ? ` (until ${gate.until})` : ''}`),
    );
  }
  for (const run of after.analysisRuns ?? []) {
    if (run.phase === 'Running' || run.phase === 'Inconclusive') continue;
    const was = before?.analysisRuns?.find(
      (r) => r.name === run.name && r.step === run.step && r.background === run.background,
    );
    if (was?.phase === run.phase) continue;
    const type = run.phase === 'Successful' ? 'Normal' : 'Warning';
    out.push(
      ev(
        type,
        `Analysis${run.phase === 'Successful' ? 'Passed' : run.phase}`,
        'Analyze',
        run.message ?? `analysis ${run.name}: ${run.phase}`,
      ),
    );
  }
  const seen = new Set((before?.log ?? []).map((e) => `${e.time}/${e.action}/${e.step}`));
  for (const e of after.log ?? []) {
    if (seen.has(`${e.time}/${e.action}/${e.step}`)) continue;
    const kind = LOG_EVENTS[e.action] ?? { type: 'Normal' as const, action: e.action };
    out.push(ev(kind.type, e.action, kind.action, `${e.message}${e.by ? ` (asked by ${e.by})` : ''}`));
  }
  return out;
}
