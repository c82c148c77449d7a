/**
 * Terminating a workflow on the time-skipping test server without stopping its clock. The server
 * holds a time-skipping lock for each task of a workflow it waits on (a workflow task, an activity,
 * a child workflow's start, a signal to another workflow) and gives it back only when the task
 * completes (sdk-java#1138). A workflow terminated with a task outstanding never completes it: its
 * lock stays, and every timer after it, in every later test of the file, waits in real time.
 */
import { WorkflowNotFoundError, type WorkflowHandle } from '@temporalio/client';
import proto from '@temporalio/proto';
import { pollUntil } from '../../../scripts/env/process.js';

// @temporalio/proto is CommonJS whose named exports Node's ESM loader cannot see.
const types = proto.temporal.api.enums.v1.EventType;
type HistoryEvent = proto.temporal.api.history.v1.IHistoryEvent;

/** For each kind of task: the event that opens it and the events that close it. */
const tasks: { opened: number; closed: number[] }[] = [
  {
    opened: types.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED,
    closed: [
      types.EVENT_TYPE_WORKFLOW_TASK_COMPLETED,
      types.EVENT_TYPE_WORKFLOW_TASK_FAILED,
      types.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT,
    ],
  },
  {
    opened: types.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED,
    closed: [
      types.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
      types.EVENT_TYPE_ACTIVITY_TASK_FAILED,
      types.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
      types.EVENT_TYPE_ACTIVITY_TASK_CANCELED,
    ],
  },
  {
    opened: types.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED,
    closed: [types.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_STARTED, types.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_FAILED],
  },
  {
    opened: types.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED,
    closed: [
      types.EVENT_TYPE_EXTERNAL_WORKFLOW_EXECUTION_SIGNALED,
      types.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_FAILED,
    ],
  },
];

/** The tasks a workflow's history shows opened and not yet closed: each holds the server's clock. */
function outstandingTasks(history: HistoryEvent[]): number {
  const count = (type: number) => history.filter((event) => event.eventType === type).length;
  return tasks.reduce(
    (sum, { opened, closed }) => sum + count(opened) - closed.reduce((done, type) => done + count(type), 0),
    0,
  );
}

const closings = new Set<number>([
  types.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED,
  types.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED,
  types.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT,
  types.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED,
  types.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED,
  types.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW,
]);

/** Whether the history ends with the workflow's close. */
function hasClosed(history: HistoryEvent[]): boolean {
  const last = history.at(-1)?.eventType;
  return last !== undefined && last !== null && closings.has(last);
}

/** Closed, or running with nothing outstanding: terminating it now leaves the clock running. */
export function atRest(history: HistoryEvent[]): boolean {
  return hasClosed(history) || outstandingTasks(history) === 0;
}

/**
 * Terminates the workflow once it is at rest (waiting up to `withinMs`), then reads what the
 * terminate cut short: a task that came between the last look and the terminate counts too. A
 * workflow terminated with a task outstanding fails the test, saying that the file's clock may have
 * stopped. A workflow that closed on its own meanwhile is left as it is; one that does not exist
 * fails to terminate as the client says, at once.
 */
export async function terminateAtRest(handle: WorkflowHandle, reason: string, withinMs = 10_000): Promise<void> {
  await pollUntil(
    async () => {
      const history = await handle.fetchHistory().catch((err: unknown) => {
        if (err instanceof WorkflowNotFoundError) return undefined;
        throw err;
      });
      return !history || atRest(history.events ?? []) ? true : undefined;
    },
    withinMs,
    `${handle.workflowId} to have no task outstanding`,
    20,
  ).catch(() => undefined); // still busy: terminated all the same, and told below
  const terminated = await handle.terminate(reason).then(
    () => true,
    async (err: unknown) => {
      // Closed on its own since the last look (a loaded machine's slow close): nothing to cut short.
      // One that does not exist fails with the terminate's own error.
      const history =
        err instanceof WorkflowNotFoundError ? await handle.fetchHistory().catch(() => undefined) : undefined;
      if (history && hasClosed(history.events ?? [])) return false;
      throw err;
    },
  );
  if (!terminated) return;
  const events = (await handle.fetchHistory()).events ?? [];
  const end = events.findIndex((event) => event.eventType === types.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED);
  const cut = outstandingTasks(end >= 0 ? events.slice(0, end) : events);
  if (cut > 0) {
    throw new Error(
      `${handle.workflowId} was terminated with ${cut} task(s) outstanding: the test server's clock may wait in real time from here`,
    );
  }
}

/** For a cleanup that may find the workflow gone already: that is no failure, anything else is. */
export function notFound(err: unknown): void {
  if (!(err instanceof WorkflowNotFoundError)) throw err;
}
