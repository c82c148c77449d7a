/**
 * What the CLI decides from an activation's state: its generated name, whether waiting is over and
 * with which exit code. Pure: table-tested in test/unit/cli-exit.test.ts.
 */
import { isFinal } from '../decisions/activation.js';
import { joinName } from '../shared/names.js';
import { EXIT, type ExitCode } from './exit-codes.js';

/**
 * Name of a VectorActivation the CLI creates: the StageVersion's name and a random suffix, so that
 * activating the same StageVersion again is a new object; joinName keeps it a valid object name
 * (≤ 253 characters, shortened with a hash) for every valid StageVersion name.
 */
export function activationName(stageVersion: string, suffix: string): string {
  return joinName(stageVersion, suffix);
}

export type WaitOutcome = { done: false } | { done: true; code: ExitCode; verdict: string };

/**
 * When waiting for an activation ends, and how it went for the one who asked. Success means the
 * StageVersion asked for serves the traffic: Succeeded, or Skipped because it already did
 * (AlreadyActive). Skipped otherwise (Superseded, OlderThanActive), Failed and Cancelled mean it does
 * not: exit 1.
 */
export function waitOutcome(phase: string | undefined, reason: string | undefined): WaitOutcome {
  if (!isFinal(phase)) return { done: false };
  if (phase === 'Succeeded') return { done: true, code: EXIT.ok, verdict: 'the StageVersion serves the traffic' };
  if (phase === 'Skipped' && reason === 'AlreadyActive')
    return { done: true, code: EXIT.ok, verdict: 'the StageVersion already served the traffic' };
  if (phase === 'Skipped')
    return {
      done: true,
      code: EXIT.failed,
      verdict: `skipped (${reason ?? 'no reason given'}): the StageVersion does not serve the traffic`,
    };
  return {
    done: true,
    code: EXIT.failed,
    verdict: `${phase.toLowerCase()}: the StageVersion does not serve the traffic`,
  };
}

/** The answer to a cancel or retry the CLI asked for, as an exit code. */
export const requestExitCode = (outcome: 'Accepted' | 'Refused'): ExitCode =>
  outcome === 'Accepted' ? EXIT.ok : EXIT.failed;
