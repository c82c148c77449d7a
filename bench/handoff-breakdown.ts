/**
 * Where a handoff's time goes, from the workflows' own histories (the Temporal server stamps every
 * event) and the times this process saw the two phases. All clocks are this machine's.
 *   release: the finishing activation's Succeeded seen → the lock's answer to its release Update
 *            recorded (a local activity after the status write asks; the lock's task grants);
 *   lock:    that answer → the grant signal recorded in the next activation (the releaser tells it);
 *   pickup:  the grant recorded → the next activation's workflow task started (task dispatch);
 *   ours:    that task started → InProgress seen (the Lease, the Stage reads, usage hold and mark,
 *            the status write: local activities, each a round trip to the apiserver).
 */
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { lockGrantedSignal, releaseLockUpdate } from '../stage-lock/contract.js';

const EventType = proto.temporal.api.enums.v1.EventType;
type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

export interface HandoffTimes {
  previousWorkflowId: string;
  nextWorkflowId: string;
  /** The Stage lock's history, fetched once both were done (the run that served them). */
  lockHistory: HistoryEvent[];
  /** Wall-clock ms when this process saw the previous activation Succeeded. */
  succeededSeen: number;
  /** Wall-clock ms when this process saw the next activation InProgress. */
  inProgressSeen: number;
}

export type HandoffSegments = Record<'release' | 'lock' | 'pickup' | 'ours', number>;

const at = (e: HistoryEvent | undefined, what: string): number => {
  if (!e) throw new Error(`no ${what} in the history`);
  return tsToMs(e.eventTime);
};

/** The lock's history as the bench keeps it: the latest run's (the one that served the last pair). */
export async function lockHistory(client: Client, lockId: string): Promise<HistoryEvent[]> {
  return (await client.workflow.getHandle(lockId).fetchHistory()).events ?? [];
}

export async function handoffSegments(client: Client, h: HandoffTimes): Promise<HandoffSegments> {
  const next = (await client.workflow.getHandle(h.nextWorkflowId).fetchHistory()).events ?? [];
  // The release Update's request names the releaser; its acceptance is stamped when the lock's task completed.
  const accepted = h.lockHistory.find((e) => {
    const a = e.workflowExecutionUpdateAcceptedEventAttributes;
    if (
      e.eventType !== EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED ||
      a?.acceptedRequest?.input?.name !== releaseLockUpdate.name
    )
      return false;
    const payload = a.acceptedRequest.input.args?.payloads?.[0]?.data;
    return (
      payload !== undefined &&
      payload !== null &&
      JSON.parse(Buffer.from(payload).toString()).requester === h.previousWorkflowId
    );
  });
  const grantIndex = next.findIndex(
    (e) =>
      e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED &&
      e.workflowExecutionSignaledEventAttributes?.signalName === lockGrantedSignal.name,
  );
  const grant = next[grantIndex];
  const started = next.slice(grantIndex).find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
  const released = at(accepted, 'release Update accepted by the lock');
  const granted = at(grant, 'lock grant');
  const picked = at(started, 'workflow task after the grant');
  return {
    release: released - h.succeededSeen,
    lock: granted - released,
    pickup: picked - granted,
    ours: h.inProgressSeen - picked,
  };
}
