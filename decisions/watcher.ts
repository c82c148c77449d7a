/**
 * What the watcher does for one VectorActivation, decided from the object alone: its status is the
 * record of what ran, so a finished activation never gets a new workflow unless a retry is asked
 * for, and start-up with many objects touches only the unfinished ones. Pure; table-tested in
 * test/unit/watcher-decisions.test.ts.
 */
import { ANNOTATION_CANCEL, ANNOTATION_RETRY } from '../shared/activation.js';
import { answerRequest, isFinal, type RequestAction } from './activation.js';

const ANNOTATIONS: Record<RequestAction, string> = { cancel: ANNOTATION_CANCEL, retry: ANNOTATION_RETRY };

export interface ObservedActivation {
  phase?: string;
  deleting: boolean;
  /** It carries the close-out finalizer: its run may have changed routes, and a deletion waits for it. */
  closing?: boolean;
  annotations: Record<string, string>;
  /** status.requests: the requests already answered. */
  answered: { action: RequestAction; token: string }[];
}

export type WatcherAction =
  /** Make sure the workflow runs (start it, or find it running; a closed one is closed out). */
  | { kind: 'ensure' }
  /** Hand the request to the workflow (an Update answers it); a closed workflow gets `whenClosed`. */
  | { kind: 'relay'; action: RequestAction; token: string }
  /** Answer without Temporal: the phase alone refuses it. */
  | { kind: 'refuse'; action: RequestAction; token: string; message: string }
  /** Being deleted with the close-out finalizer: tell the workflow, or close out a run that closed. */
  | { kind: 'deleted' };

/** The token of an annotation's current value: each new value is a new request, acted on once. */
export const requestToken = (action: RequestAction, value: string) => `${ANNOTATIONS[action]}=${value}`;

export function watcherActions(o: ObservedActivation): WatcherAction[] {
  if (o.deleting) return o.closing ? [{ kind: 'deleted' }] : [];
  const actions: WatcherAction[] = isFinal(o.phase) ? [] : [{ kind: 'ensure' }];
  for (const action of ['cancel', 'retry'] as const) {
    const value = o.annotations[ANNOTATIONS[action]];
    if (value === undefined) continue;
    const token = requestToken(action, value);
    if (o.answered.some((a) => a.action === action && a.token === token)) continue;
    const answer = isFinal(o.phase) ? answerRequest(action, o.phase!) : { accepted: true as const };
    actions.push(answer.accepted ? { kind: 'relay', action, token } : { kind: 'refuse', action, token, message: answer.message });
  }
  return actions;
}

/** When the workflow of an unfinished activation has closed: the reason and what happened, for its close-out run. */
export function closedWorkflow(status: string, workflowId: string): { reason: string; message: string } {
  const how: Record<string, [string, string]> = {
    TERMINATED: ['WorkflowTerminated', 'was terminated'],
    TIMED_OUT: ['WorkflowTimedOut', 'timed out'],
    FAILED: ['WorkflowFailed', 'failed'],
    CANCELLED: ['WorkflowCancelled', 'was cancelled'],
    COMPLETED: ['WorkflowCompleted', 'completed without writing a final status'],
  };
  const [reason, what] = how[status] ?? ['WorkflowClosed', `closed (${status})`];
  return { reason, message: `the activation's workflow ${workflowId} ${what}` };
}

/** The final status the watcher writes itself when the close-out run cannot be had (it closed too). */
export function closedWorkflowEnding(status: string, workflowId: string): { reason: string; message: string } {
  const { reason, message } = closedWorkflow(status, workflowId);
  return { reason, message: `${message}; the Stage, the StageVersion and the activation usage were released, nothing was reverted` };
}
