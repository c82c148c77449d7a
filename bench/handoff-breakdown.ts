/**
 * Where a handoff's time goes, from the workflows' own histories (the Temporal server stamps every
 * event) and the times this process saw the two phases. All clocks are this machine's.
 *   release: the finishing activation's Succeeded seen → its workflow task that sends the lock's
 *            release completed (the SDK ends that task once the status write's local activity is done);
 *   lock:    that task → the grant signal recorded in the next activation (two transfers through the
 *            server and the lock workflow's own task);
 *   pickup:  the grant recorded → the next activation's workflow task started (task dispatch);
 *   ours:    that task started → InProgress seen (the Lease, the Stage reads, usage hold and mark,
 *            the status write: local activities, each a round trip to the apiserver).
 */
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';
import { releaseLockSignal, lockGrantedSignal } from '../shared/activation.js';

const EventType = proto.temporal.api.enums.v1.EventType;
type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

export interface HandoffTimes {
  previousWorkflowId: string;
  nextWorkflowId: string;
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

export async function handoffSegments(client: Client, h: HandoffTimes): Promise<HandoffSegments> {
  const [previous, next] = await Promise.all([h.previousWorkflowId, h.nextWorkflowId].map(async (id) => (await client.workflow.getHandle(id).fetchHistory()).events ?? []));
  const release = [...previous!].reverse().find((e) => e.eventType === EventType.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED && e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName === releaseLockSignal.name);
  const sentBy = previous!.find((e) => Number(e.eventId) === Number(release?.signalExternalWorkflowExecutionInitiatedEventAttributes?.workflowTaskCompletedEventId));
  const grantIndex = next!.findIndex((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED && e.workflowExecutionSignaledEventAttributes?.signalName === lockGrantedSignal.name);
  const grant = next![grantIndex];
  const started = next!.slice(grantIndex).find((e) => e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED);
  const released = at(sentBy, 'workflow task that released the lock');
  const granted = at(grant, 'lock grant');
  const picked = at(started, 'workflow task after the grant');
  return { release: released - h.succeededSeen, lock: granted - released, pickup: picked - granted, ours: h.inProgressSeen - picked };
}
