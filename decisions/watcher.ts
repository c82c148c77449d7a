/**
 * What the watcher does for one VectorActivation, decided from the object alone: its status is the
 * record of what ran, so a finished activation never gets a new workflow unless a retry is asked
 * for, and start-up with many objects touches only the unfinished ones. Pure; table-tested in
 * test/unit/watcher-decisions.test.ts.
 */
import {
  ANNOTATION_ABORT,
  ANNOTATION_APPROVE,
  ANNOTATION_CANCEL,
  ANNOTATION_PROMOTE,
  ANNOTATION_RETRY,
} from '../shared/activation.js';
import { answerRequest, isFinal, type RequestAction } from './activation.js';
import { answerProgression, type ProgressionAction } from './progression.js';

/** Every request a person can make by annotation. */
export type AnnotationRequest = RequestAction | ProgressionAction;
export const REQUEST_ANNOTATIONS: Record<AnnotationRequest, string> = {
  cancel: ANNOTATION_CANCEL,
  retry: ANNOTATION_RETRY,
  approve: ANNOTATION_APPROVE,
  promote: ANNOTATION_PROMOTE,
  abort: ANNOTATION_ABORT,
};
const progressionActions = new Set<AnnotationRequest>(['approve', 'promote', 'abort']);

/**
 * Who asked, by a progression request's annotation value: the user name it starts with (the
 * admission policy refuses a value that does not start with the writer's user name, followed by
 * the end or a space, and a user name with a space in it).
 */
export function requesterOf(action: AnnotationRequest, value: string): string | undefined {
  return progressionActions.has(action) ? value.split(' ')[0] : undefined;
}

export interface ObservedActivation {
  phase?: string;
  deleting: boolean;
  /** It carries the close-out finalizer: its run may have changed routes, and a deletion waits for it. */
  closing?: boolean;
  annotations: Record<string, string>;
  /** status.requests: the requests already answered. */
  answered: { action: AnnotationRequest; token: string }[];
}

export type WatcherAction =
  /** Make sure the workflow runs (start it, or find it running; a closed one is closed out). */
  | { kind: 'ensure' }
  /** Hand the request to the workflow (an Update answers it); a closed workflow gets `whenClosed`. */
  | { kind: 'relay'; action: AnnotationRequest; token: string; by?: string }
  /** Answer without Temporal: the phase alone refuses it. */
  | { kind: 'refuse'; action: AnnotationRequest; token: string; message: string; by?: string }
  /** Being deleted with the close-out finalizer: tell the workflow, or close out a run that closed. */
  | { kind: 'deleted' };

/** The token of an annotation's current value: each new value is a new request, acted on once. */
export const requestToken = (action: AnnotationRequest, value: string) => `${REQUEST_ANNOTATIONS[action]}=${value}`;

export function watcherActions(o: ObservedActivation): WatcherAction[] {
  if (o.deleting) return o.closing ? [{ kind: 'deleted' }] : [];
  const actions: WatcherAction[] = isFinal(o.phase) ? [] : [{ kind: 'ensure' }];
  for (const action of Object.keys(REQUEST_ANNOTATIONS) as AnnotationRequest[]) {
    const value = o.annotations[REQUEST_ANNOTATIONS[action]];
    if (value === undefined) continue;
    const token = requestToken(action, value);
    if (o.answered.some((a) => a.action === action && a.token === token)) continue;
    const by = requesterOf(action, value);
    const about = by ? { by } : {};
    const answer = !isFinal(o.phase)
      ? { accepted: true as const }
      : action === 'cancel' || action === 'retry'
        ? answerRequest(action, o.phase!)
        : answerProgression(action, { phase: o.phase! });
    actions.push(
      answer.accepted
        ? { kind: 'relay', action, token, ...about }
        : { kind: 'refuse', action, token, message: answer.message, ...about },
    );
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
  return {
    reason,
    message: `${message}; the Stage, the StageVersion and the activation usage were released, nothing was reverted`,
  };
}

/**
 * A request relayed by annotation to an activation whose workflow has not started (the namespace's
 * Stage limit holds it, or its start is still to come): it waits its turn like any other, so a
 * cancel ends it where it is (no workflow ran, no route changed) and any other request has
 * nothing to act on.
 */
export function beforeStartAnswer(action: AnnotationRequest): { cancel: true } | { refused: string } {
  if (action === 'cancel') return { cancel: true };
  const what = action === 'retry' ? 'nothing to retry' : 'nothing waits for an answer';
  return { refused: `refused: the activation has not started yet (it waits for its turn in its namespace); ${what}` };
}
