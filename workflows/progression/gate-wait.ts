/**
 * The wait at a gate (a pause, an approval, an inconclusive analysis): a durable timer, not polling,
 * so it is exact however long it waits, ended early by an answer, a cancel, a newer activation or a
 * failed background analysis. The Stage's Lease is taken once for the wait's length.
 */
import { condition } from '@temporalio/workflow';
import { afterGate, gateReason, leaseSecondsOver, type Gate, type GateEnd } from '../../decisions/progression.js';
import { byWhom, type LoggedAction, type Outcome, type ProgressionContext } from './host.js';

/** What an answer at a gate ends it with, and how the log and the messages say it. */
const ANSWERED = {
  approve: { end: 'approved', logged: 'Approved', verb: 'approved', more: '' },
  promote: {
    end: 'promoted',
    logged: 'Promoted',
    verb: 'promoted',
    more: ': the remaining steps and gates are skipped',
  },
  abort: { end: 'aborted', logged: 'Aborted', verb: 'aborted', more: '' },
} as const satisfies Record<string, { end: GateEnd; logged: LoggedAction; verb: string; more: string }>;

/** Waits at a gate until an answer, a cancel, a newer activation, a background verdict or its time. */
export async function waitAtGate(progression: ProgressionContext, gate: Gate): Promise<Outcome> {
  const { host } = progression;
  const since = Date.now();
  progression.showGate(gate, since);
  if (gate.until !== undefined) await host.holdLease(leaseSecondsOver(gate.until - since));
  await progression.writeStatus(gateReason(gate.type), gate.message);
  const timedOut =
    gate.until !== undefined &&
    !(await condition(() => progression.interrupted(), Math.max(gate.until - Date.now(), 1)));
  progression.showGate(undefined);
  await host.holdLease(undefined);
  // Whatever woke it, a Stage that went meanwhile (and nobody said so) ends the run.
  if (!(await host.stageStillOurs())) return { next: afterGate(gate, 'cancelled') };
  const label = progression.label();
  if (timedOut) {
    const next = afterGate(gate, 'timedOut');
    const waited = Math.round((gate.until! - since) / 1000);
    const why = `${label}: the ${gate.type === 'Approval' ? 'approval' : 'wait'} timed out after ${waited}s`;
    if (gate.type !== 'Pause')
      progression.logAction(
        next === 'next' ? 'Continued' : 'TimedOut',
        `${why}; ${next === 'next' ? 'going on' : 'aborting'}`,
      );
    return { next, reason: 'TimedOut', why };
  }
  const answer = host.requests.take();
  if (answer) {
    const said = ANSWERED[answer.action];
    const what = `${said.verb} at ${label}${said.more}${answer.action === 'abort' ? byWhom(answer.request) : ''}`;
    progression.logAction(said.logged, what, answer.request.by);
    return { next: afterGate(gate, said.end), reason: 'Aborted', why: what };
  }
  if (host.requests.cancelled) return { next: afterGate(gate, 'cancelled') };
  if (host.newerWaiting()) return { next: afterGate(gate, 'superseded') };
  return progression.analyses.failedOutcome();
}
