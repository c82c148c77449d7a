/**
 * What a progressive activation decides, as pure functions: what each progression step is and
 * which gate it waits at until when (its kind's rules: decisions/step-kinds/), what an answer
 * (approve, promote, abort) or a time-out does there, whether an answer is accepted at all, which
 * weights an abort goes down through, and which background analyses run at a step. The workflow
 * (workflows/progression/) observes, asks these and acts; tables test every rule
 * (test/unit/progression-decisions.test.ts).
 */
// Types only from the schema module: erased when compiled, so workflow code loads no zod.
import type { ProgressionSpec, ProgressionStep } from '../api/progression.js';
import type { GateType } from '../api/progression-defaults.js';
import {
  GATES,
  gateOf,
  gateReason,
  inconclusiveGate,
  seconds,
  stepKind,
  type Gate,
  type StepKind,
} from './step-kinds/index.js';

export type { Gate, GateType, ProgressionSpec, StepKind };
export { gateOf, gateReason, inconclusiveGate, seconds, stepKind };
export type ProgressionAction = 'approve' | 'promote' | 'abort';
/** A progression step as the plan has it, defaults applied (api/progression.ts progressionStep). */
export type ProgressionStepSpec = ProgressionStep;

/** "step 3/7 (canary-50)", as messages name a step. */
export function stepLabel(spec: ProgressionSpec, step: number): string {
  const count = spec.steps.length;
  if (step >= count) return `the switch to 100 % (after step ${count}/${count})`;
  const name = spec.steps[step]!.name;
  return `step ${step + 1}/${count}${name ? ` (${name})` : ''}`;
}

// --- gates ---------------------------------------------------------------------------------

/** What ends a wait at a gate, in the order the workflow looks: a person's answer first. */
export type GateEnd = 'approved' | 'promoted' | 'aborted' | 'cancelled' | 'superseded' | 'analysisFailed' | 'timedOut';
export type Next = 'next' | 'promote' | 'abort' | 'cancel' | 'supersede';

/** Where an activation goes from a gate, by what ended the wait. */
export function afterGate(gate: Pick<Gate, 'onTimeout'>, end: GateEnd): Next {
  switch (end) {
    case 'approved':
      return 'next';
    case 'promoted':
      return 'promote';
    case 'aborted':
    case 'analysisFailed':
      return 'abort';
    case 'cancelled':
      return 'cancel';
    case 'superseded':
      return 'supersede';
    case 'timedOut':
      return gate.onTimeout;
  }
}

// --- answers to people ---------------------------------------------------------------------

export interface ProgressionView {
  phase: string;
  /** The activation has a progression (its plan has one). Unknown before the plan is read. */
  progressive?: boolean;
  /** The gate it waits at now, if any. */
  gate?: GateType;
  /** The progression is done: the switch to 100 % (or the abort) runs. */
  ending?: 'switching' | 'aborting';
  /** An answer accepted already and not yet acted on. */
  pending?: ProgressionAction;
}

export type Answer = { accepted: true } | { accepted: false; message: string };

const refused = (message: string): Answer => ({ accepted: false, message: `refused: ${message}` });

/**
 * Approve ends a pause, an approval or an inconclusive analysis; promote skips every remaining step
 * and gate; abort puts the traffic back and fails the activation. Each is refused, saying why, when
 * nothing it could act on waits: before the activation holds its Stage, once it ended (an abort
 * after a full promotion is refused: the new version serves, and activating the previous one is the
 * way back), or when the progression is done.
 */
export function answerProgression(action: ProgressionAction, view: ProgressionView): Answer {
  if (view.phase === 'Succeeded') {
    return refused(
      action === 'abort'
        ? 'the activation Succeeded: the new StageVersion serves all traffic; to go back, activate the previous StageVersion'
        : 'the activation Succeeded; nothing waits',
    );
  }
  if (['Failed', 'Skipped', 'Cancelled'].includes(view.phase))
    return refused(`the activation is ${view.phase}; nothing waits`);
  if (view.phase !== 'InProgress') {
    const instead = action === 'abort' ? '; cancel it instead' : '';
    return refused(`the activation is ${view.phase}: it does not hold its Stage yet${instead}`);
  }
  if (view.progressive === false)
    return refused(
      `the activation's plan has no progression; ${action === 'abort' ? 'cancel it instead' : 'nothing waits'}`,
    );
  if (view.ending === 'aborting') return refused('the activation is aborting already');
  if (view.pending) return refused(`${view.pending} was accepted already and is being acted on`);
  if (action === 'abort') return { accepted: true };
  if (view.ending === 'switching') return refused('the progression is done: the switch to 100 % runs');
  if (action === 'promote') return { accepted: true };
  if (!view.gate) return refused('nothing waits for an approval now');
  const gate = GATES[view.gate];
  return gate.approvable
    ? { accepted: true }
    : refused(`the activation runs ${gate.runs}, which decides by itself; promote skips it`);
}

// --- weights -------------------------------------------------------------------------------

/**
 * The weights an abort takes the new version down through before the recorded traffic is put
 * back: those of the plan's ramp below the weight it has now, highest first. None: at once.
 */
export function abortWeights(current: number, ramp: readonly number[] | undefined): number[] {
  const below = (ramp ?? []).filter((weight) => weight > 0 && weight < current);
  return [...new Set(below)].sort((first, second) => second - first);
}

/**
 * Every weight a progression may set, in the order its rounds set them: its setWeights, 100 when
 * the last is below it, then the abort's ramp. Round `r` of an attempt sets at most the r-th.
 */
export function progressionWeights(spec: ProgressionSpec): number[] {
  const up = spec.steps.flatMap((step) => (step.setWeight !== undefined ? [step.setWeight] : []));
  const down = [...new Set(spec.abort?.weights ?? [])].sort((first, second) => second - first);
  return [...up, ...(up.at(-1) === 100 ? [] : [100]), ...down];
}

/** The background analyses that run at step `step` (from their `from` step up to, not including, their `to` step). */
export function backgroundAt(spec: ProgressionSpec, step: number): string[] {
  const indexOf = (name: string | undefined, fallback: number) =>
    name === undefined ? fallback : spec.steps.findIndex((candidate) => candidate.name === name);
  return (spec.background ?? [])
    .filter((background) => indexOf(background.from, 0) <= step && step < indexOf(background.to, spec.steps.length))
    .map((background) => background.analysis);
}

// --- the Stage's Lease while the progression waits ----------------------------------------

/** A Lease taken over a wait outlives it by this much: the activation renews it again meanwhile. */
export const STRETCH_MARGIN_SECONDS = 300;

/**
 * How long the Lease is taken for over a wait of `waitMs`: the wait and a margin, in one write,
 * instead of a renewal running beside a wait in which nothing happens (a thousand activations
 * waiting at gates then cost nothing).
 */
export function leaseSecondsOver(waitMs: number): number {
  return Math.max(Math.ceil(waitMs / 1000), 0) + STRETCH_MARGIN_SECONDS;
}
