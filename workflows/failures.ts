/** What failed, as a workflow sees an activity's failure: the cause, not the wrapper around it. */
import { ActivityFailure, ApplicationFailure } from '@temporalio/workflow';

export function causeOf(err: unknown): unknown {
  return err instanceof ActivityFailure && err.cause ? err.cause : err;
}

export function messageOf(err: unknown): string {
  const cause = causeOf(err);
  return cause instanceof Error ? cause.message : String(cause);
}

/** The message of a failure that says the activation's Stage is missing or going (decisions/activation.ts stageLoss). */
export function stageLossOf(err: unknown): string | undefined {
  const cause = causeOf(err);
  return cause instanceof ApplicationFailure && (cause.type === 'StageDeleted' || cause.type === 'StageNotFound')
    ? cause.message
    : undefined;
}
