/**
 * Carrying out a request annotation (decide-object.ts RequestStep): relayed to a running workflow as
 * an Update, answered without Temporal when the phase refuses it, answered before the start when no
 * workflow runs (a cancel ends the activation where it waits), and a deletion handed over. The
 * answer goes into status.requests and an Event (k8s/activation-store.ts answerRequest).
 */
import { WorkflowNotFoundError, WorkflowUpdateFailedError } from '@temporalio/client';
import { beforeStartAnswer, type AnnotationRequest, type WatcherAction } from '../../decisions/watcher.js';
import { answerRequest, cancelBeforeStart, type RequestAnswer } from '../../k8s/activation-store.js';
import {
  abortUpdate,
  approveUpdate,
  cancelUpdate,
  promoteUpdate,
  retryUpdate,
  type ActivationRef,
} from '../../shared/activation.js';
import { refOf, workflowIdOf, type CachedActivation } from '../../shared/cached-activation.js';
import type { ActivationActions } from './act.js';
import { latestRun } from './observe.js';
import type { RequestStep } from './decide-object.js';

const UPDATES = {
  cancel: cancelUpdate,
  retry: retryUpdate,
  approve: approveUpdate,
  promote: promoteUpdate,
  abort: abortUpdate,
};

export async function carryOut(
  actions: ActivationActions,
  activation: CachedActivation,
  step: RequestStep,
): Promise<void> {
  const action = step.action;
  if (step.beforeStart && action.kind === 'relay') return beforeStart(actions, activation, action);
  if (action.kind === 'deleted') return actions.deleting(activation);
  const ref = refOf(activation);
  if (action.kind === 'refuse') return refuse(actions, ref, action, action.message);
  return relay(actions, activation, action);
}

const by = (request: { by?: string }) => (request.by ? { by: request.by } : {});

function answer(actions: ActivationActions, ref: ActivationRef, requestAnswer: RequestAnswer): Promise<void> {
  return answerRequest(actions.options.deps, ref, requestAnswer, () =>
    actions.options.gate.fence(`answering ${requestAnswer.token} on ${ref.namespace}/${ref.name}`, ref.namespace),
  );
}

/** Answers a request Refused, saying why. */
function refuse(
  actions: ActivationActions,
  ref: ActivationRef,
  request: { action: AnnotationRequest; token: string; by?: string },
  message: string,
): Promise<void> {
  return answer(actions, ref, {
    action: request.action,
    token: request.token,
    outcome: 'Refused',
    message,
    ...by(request),
  });
}

/** Hands the request to the workflow as an Update; a closed workflow gets a retry in a new run, or a refusal. */
async function relay(
  actions: ActivationActions,
  cachedActivation: CachedActivation,
  action: Extract<WatcherAction, { kind: 'relay' }>,
): Promise<void> {
  const ref = refOf(cachedActivation);
  const reply = (outcome: RequestAnswer['outcome'], message: string, who = by(action)) =>
    answer(actions, ref, { action: action.action, token: action.token, outcome, message, ...who });
  try {
    actions.options.gate.fence(`the ${action.action} Update of ${ref.namespace}/${ref.name}`, ref.namespace);
    const handle = actions.options.client.workflow.getHandle(workflowIdOf(cachedActivation));
    const result = await handle.executeUpdate(UPDATES[action.action], {
      args: [{ token: action.token, reason: `annotation ${action.token.split('=')[0]}`, ...by(action) }],
    });
    return await reply('Accepted', result.message);
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError)
      return reply('Refused', (err.cause as Error | undefined)?.message ?? err.message);
    if (!(err instanceof WorkflowNotFoundError)) throw err;
  }
  if (action.action !== 'cancel' && action.action !== 'retry') {
    return reply(
      'Refused',
      `refused: the activation is ${cachedActivation.status?.phase} and its workflow has closed; nothing waits`,
    );
  }
  // The workflow has closed (its retry window passed, or retention dropped it).
  if (action.action === 'retry') {
    await actions.startWorkflow(cachedActivation, { resume: 'retry' }, 'ALLOW_DUPLICATE');
    return reply('Accepted', 'retry started in a new workflow run (the previous run had closed)', {});
  }
  return reply(
    'Refused',
    `refused: the activation is ${cachedActivation.status?.phase} and its workflow has closed; nothing to cancel`,
    {},
  );
}

/**
 * A request to an activation whose workflow has not started: a cancel ends it where it is (when
 * the conditional write finds it started meanwhile, its workflow gets the request at the next
 * reconcile); anything else is refused.
 */
async function beforeStart(
  actions: ActivationActions,
  activation: CachedActivation,
  action: { action: AnnotationRequest; token: string; by?: string },
): Promise<void> {
  const ref = refOf(activation);
  const result = beforeStartAnswer(action.action);
  if ('refused' in result) return refuse(actions, ref, action, result.refused);
  // As a burst's loser is skipped: no pass starts it meanwhile, and one a pass (or a leader
  // before) started, whose workflow has not written a status yet, is not ended under it.
  const { passStates } = actions.options;
  passStates.skipping(ref.namespace, ref.uid, true);
  try {
    if ((await latestRun(actions.options.client, workflowIdOf(activation))) === undefined) {
      actions.options.gate.fence(`cancelling ${ref.namespace}/${ref.name} before its start`, ref.namespace);
      const message = `cancelled before it started${action.by ? ` by ${action.by}` : ''}: no workflow ran, no route was changed`;
      // Ended: it stays among those being skipped until the watch brings the write back.
      if (await cancelBeforeStart(actions.options.deps, ref, message))
        return await answer(actions, ref, {
          action: 'cancel',
          token: action.token,
          outcome: 'Accepted',
          message,
          ...by(action),
        });
    }
  } catch (err) {
    passStates.skipping(ref.namespace, ref.uid, false);
    throw err;
  }
  // Started meanwhile: its workflow gets the request at the next reconcile; not started, its turn comes.
  passStates.skipping(ref.namespace, ref.uid, false);
  actions.options.pass(ref.namespace);
}
