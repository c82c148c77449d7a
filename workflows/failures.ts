/** What failed, as a workflow sees an activity's failure: the cause, not the wrapper around it. */
import { ActivityFailure } from '@temporalio/workflow';

export function causeOf(err: unknown): unknown {
  return err instanceof ActivityFailure && err.cause ? err.cause : err;
}

export function messageOf(err: unknown): string {
  const cause = causeOf(err);
  return cause instanceof Error ? cause.message : String(cause);
}
