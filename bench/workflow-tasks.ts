/**
 * How long the workflow tasks of finished workflows took, from their histories: a task's time is
 * its WorkflowTaskStarted (the server handed it to a worker) to the event that ended it (completed,
 * failed or timed out), both stamped by the server. Local activities run inside a task, so a slow
 * Kubernetes request there counts as well as the workflow code and a cold sandbox.
 */
import type { Client } from '@temporalio/client';
import { tsToMs } from '@temporalio/common/lib/time.js';
import proto from '@temporalio/proto';

const EventType = proto.temporal.api.enums.v1.EventType;
const ENDS = new Set([
  EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED,
  EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
]);

export interface SlowestTask {
  workflowId: string;
  /** The WorkflowTaskStarted event's id. */
  eventId: number;
  ms: number;
}

/** Every workflow task of the workflow's latest run: its started event's id and how long it took. */
export async function workflowTaskTimes(client: Client, workflowId: string): Promise<SlowestTask[]> {
  const events = (await client.workflow.getHandle(workflowId).fetchHistory()).events ?? [];
  const tasks: SlowestTask[] = [];
  let started: { eventId: number; at: number } | undefined;
  for (const e of events) {
    if (e.eventType === EventType.EVENT_TYPE_WORKFLOW_TASK_STARTED)
      started = { eventId: Number(e.eventId), at: tsToMs(e.eventTime) };
    else if (started && ENDS.has(e.eventType!)) {
      tasks.push({ workflowId, eventId: started.eventId, ms: tsToMs(e.eventTime) - started.at });
      started = undefined;
    }
  }
  return tasks;
}

/** The slowest workflow task of these workflows, and the slowest of each one's first task. */
export async function slowestWorkflowTasks(client: Client, workflowIds: readonly string[]) {
  const all = await Promise.all(workflowIds.map((id) => workflowTaskTimes(client, id)));
  const slowest = (tasks: SlowestTask[]) => tasks.reduce((a, b) => (b.ms > a.ms ? b : a), tasks[0]!);
  const every = all.flat();
  const firsts = all.map((tasks) => tasks[0]).filter((t): t is SlowestTask => t !== undefined);
  return { tasks: every.length, slowest: slowest(every), slowestFirst: slowest(firsts) };
}
