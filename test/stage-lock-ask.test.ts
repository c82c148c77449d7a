/**
 * Asking a Stage's lock on the real Temporal dev server when its worker does not answer: the ask
 * must not fail (an activation would end without a status). Not a unit test: an Update left
 * unanswered holds the time-skipping test server's clock for the tests after it.
 */
import { randomUUID } from 'node:crypto';
import proto from '@temporalio/proto';
import { createLockActivities } from '../activities/lock.js';
import { stageLockWorkflowId } from '../shared/activation.js';
import { temporalClient } from './support/temporal.js';

const events = proto.temporal.api.enums.v1.EventType;

it('a lock that does not answer in time (no worker polls its queue) is asked by signal instead', async () => {
  const { client, close } = await temporalClient();
  const stage = `ask-${randomUUID().slice(0, 8)}`;
  const lock = client.workflow.getHandle(stageLockWorkflowId('unanswered', stage));
  try {
    const { askStageLock } = createLockActivities(client, `nobody-polls-${stage}`);
    const request = { requester: `unanswered/${stage}/r1`, revision: 1, activation: 'unanswered/a1' };
    expect(await askStageLock('unanswered', stage, request, 1_000)).toEqual({ outcome: 'queued' });
    // The lock was started by the Update and holds the request as a signal, for its worker to find.
    const signals = ((await lock.fetchHistory()).events ?? []).filter((e) => e.eventType === events.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED);
    expect(signals.map((e) => e.workflowExecutionSignaledEventAttributes?.signalName)).toEqual(['requestLock']);
  } finally {
    await lock.terminate('test done').catch(() => undefined);
    await close();
  }
});
