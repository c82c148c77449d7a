/**
 * The Events of a transition, said once its write went through (docs/events.md). On a first
 * attempt they are created without a look-up: a retry re-reads, finds the transition made, and
 * says nothing. Two cases look for a repeat instead (and count it): a write that failed in a way
 * that may still have landed (no answer, a 5xx) says them before it throws, since its retry would
 * find nothing to say; and a retried attempt, which may race an earlier one still running.
 */
import { Context } from '@temporalio/activity';
import { apiStatus } from '../k8s/client.js';
import type { RecordOptions } from '../k8s/events.js';

/** Whether this is a retry of the activity (outside an activity: a first attempt). */
function retried(): boolean {
  try {
    return Context.current().info.attempt > 1;
  } catch {
    return false;
  }
}

/**
 * A write that failed but may have reached the apiserver: no answer, or a 5xx. Not a refusal (4xx),
 * and not a deposed leader's fenced write (k8s/leader-election.ts), which was never sent.
 */
function mayHaveLanded(err: unknown): boolean {
  if (err instanceof Error && err.name === 'NotLeaderError') return false;
  const code = apiStatus(err);
  return code === undefined || code >= 500;
}

/** Runs `write`, then `say`s its Events when `made` tells it made the transition. */
export async function writeThenSay<T>(
  write: () => Promise<T>,
  say: (options: RecordOptions) => void,
  made: (result: T) => boolean = () => true,
): Promise<T> {
  let result: T;
  try {
    result = await write();
  } catch (err) {
    if (mayHaveLanded(err)) say({ once: false });
    throw err;
  }
  if (made(result)) say({ once: !retried() });
  return result;
}
