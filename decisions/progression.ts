/**
 * What a progressive activation decides, as pure functions: what each progression step is (its
 * kind's rules: decisions/step-kinds/), which gate it waits at and until when, what an answer (approve, promote, abort) or a time-out does
 * there, whether an answer is accepted at all, which weights an abort goes down through, and which
 * background analyses run at a step. The workflow (workflows/progression.ts) observes, asks these
 * and acts; tables test every rule (test/unit/progression-decisions.test.ts).
 */
// Types only from the schema module: erased when compiled, so workflow code loads no zod.
import type { ProgressionSpec, ProgressionStep } from '../api/progression.js';
import { INCONCLUSIVE_TIMEOUT_SECONDS, type GateType } from '../api/progression-defaults.js';
import { GATES, gateReason, stepKind, type StepKind } from './step-kinds/index.js';

export type { GateType, ProgressionSpec, StepKind };
export { gateReason, stepKind };
export type ProgressionAction = 'approve' | 'promote' | 'abort';
/** A progression step as the plan has it, defaults applied (api/progression.ts progressionStep). */
export type ProgressionStepSpec = ProgressionStep;

/** "step 3/7 (canary-50)", as messages name a step. */
export function stepLabel(p: ProgressionSpec, i: number): string {
  if (i >= p.steps.length) return `the switch to 100 % (after step ${p.steps.length}/${p.steps.length})`;
  const name = p.steps[i]!.name;
  return `step ${i + 1}/${p.steps.length}${name ? ` (${name})` : ''}`;
}

// --- gates ---------------------------------------------------------------------------------

export interface Gate {
  type: GateType;
  /** Workflow time (ms) the gate ends by itself: a timed pause ends, an approval times out. */
  until?: number;
  /** What a time-out does: go on (a timed pause; an approval with onTimeout Continue) or abort. */
  onTimeout: 'next' | 'abort';
  message: string;
}

/** The gate a pause or approval step waits at, from `now` (workflow time, ms). */
export function gateOf(kind: StepKind, now: number, label: string): Gate | undefined {
  if (kind.kind === 'pause')
    return {
      type: 'Pause',
      until: now + kind.seconds * 1000,
      onTimeout: 'next',
      message: `${label}: paused for ${seconds(kind.seconds)}; approve or promote to go on now, abort to go back`,
    };
  if (kind.kind === 'approval') {
    const then = kind.onTimeout === 'Continue' ? 'it goes on' : 'it aborts';
    return {
      type: 'Approval',
      until: now + kind.seconds * 1000,
      onTimeout: kind.onTimeout === 'Continue' ? 'next' : 'abort',
      message: `${label}: waiting for an approval (after ${seconds(kind.seconds)} ${then}); approve, promote or abort`,
    };
  }
  return undefined;
}

/** The gate an inconclusive analysis waits at for a person; after a day it aborts. */
export function inconclusiveGate(now: number, label: string, about: string): Gate {
  return {
    type: 'Inconclusive',
    until: now + INCONCLUSIVE_TIMEOUT_SECONDS * 1000,
    onTimeout: 'abort',
    message: `${label}: ${about}; approve to go on, abort to go back (aborts by itself after ${seconds(INCONCLUSIVE_TIMEOUT_SECONDS)})`,
  };
}

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
export function answerProgression(action: ProgressionAction, v: ProgressionView): Answer {
  if (v.phase === 'Succeeded') {
    return refused(
      action === 'abort'
        ? 'the activation Succeeded: the new StageVersion serves all traffic; to go back, activate the previous StageVersion'
        : 'the activation Succeeded; nothing waits',
    );
  }
  if (['Failed', 'Skipped', 'Cancelled'].includes(v.phase))
    return refused(`the activation is ${v.phase}; nothing waits`);
  if (v.phase !== 'InProgress')
    return refused(
      `the activation is ${v.phase}: it does not hold its Stage yet${action === 'abort' ? '; cancel it instead' : ''}`,
    );
  if (v.progressive === false)
    return refused(
      `the activation's plan has no progression; ${action === 'abort' ? 'cancel it instead' : 'nothing waits'}`,
    );
  if (v.ending === 'aborting') return refused('the activation is aborting already');
  if (v.pending) return refused(`${v.pending} was accepted already and is being acted on`);
  if (action === 'abort') return { accepted: true };
  if (v.ending === 'switching') return refused('the progression is done: the switch to 100 % runs');
  if (action === 'promote') return { accepted: true };
  if (!v.gate) return refused('nothing waits for an approval now');
  const gate = GATES[v.gate];
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
  return [...new Set((ramp ?? []).filter((w) => w > 0 && w < current))].sort((a, b) => b - a);
}

/**
 * Every weight a progression may set, in the order its rounds set them: its setWeights, 100 when
 * the last is below it, then the abort's ramp. Round `r` of an attempt sets at most the r-th.
 */
export function progressionWeights(p: ProgressionSpec): number[] {
  const up = p.steps.flatMap((s) => (s.setWeight !== undefined ? [s.setWeight] : []));
  return [...up, ...(up.at(-1) === 100 ? [] : [100]), ...[...new Set(p.abort?.weights ?? [])].sort((a, b) => b - a)];
}

/** The background analyses that run at step `i` (from its `from` step up to, not including, its `to` step). */
export function backgroundAt(p: ProgressionSpec, i: number): string[] {
  const at = (name: string | undefined, fallback: number) =>
    name === undefined ? fallback : p.steps.findIndex((s) => s.name === name);
  return (p.background ?? []).filter((b) => at(b.from, 0) <= i && i < at(b.to, p.steps.length)).map((b) => b.analysis);
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

/** 90 → "90s", 3600 → "1h", 259200 → "3d". */
export function seconds(s: number): string {
  if (s % 86400 === 0) return `${s / 86400}d`;
  if (s % 3600 === 0) return `${s / 3600}h`;
  if (s % 60 === 0) return `${s / 60}m`;
  return `${s}s`;
}
