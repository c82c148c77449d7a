/**
 * Asking a Stage's lock on the real Temporal dev server when its worker does not answer: the ask
 * must not fail (an activation would end without a status). Not a unit test: an Update left
 * unanswered holds the time-skipping test server's clock for the tests after it.
 */
import { randomUUID } from 'node:crypto';
import proto from '@temporalio/proto';
import { createLockActivities } from '../stage-lock/activities.js';
import { stageLockWorkflowId } from '../stage-lock/contract.js';
import { Worker } from '@temporalio/worker';
import { pollUntil } from '../scripts/env/process.js';
import { workflowBundle } from './support/system.js';
import { temporalClient, workerConnection } from './support/temporal.js';

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
    const signals = ((await lock.fetchHistory()).events ?? []).filter(
      (e) => e.eventType === events.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
    );
    expect(signals.map((e) => e.workflowExecutionSignaledEventAttributes?.signalName)).toEqual(['requestLock']);
  } finally {
    await lock.terminate('test done').catch(() => undefined);
    await close();
  }
});

it('a grant given in the answer to an Update its asker gave up on goes by signal too: the asker hears it', async () => {
  const { client, close } = await temporalClient();
  const stage = `late-${randomUUID().slice(0, 8)}`;
  const taskQueue = `late-lock-${stage}`;
  const lock = client.workflow.getHandle(stageLockWorkflowId('unanswered', stage));
  const requester = `unanswered/${stage}/r1`;
  try {
    // No worker yet (a busy one): the Update is not answered in time, and the ask goes by signal.
    const { askStageLock } = createLockActivities(client, taskQueue);
    expect(
      await askStageLock('unanswered', stage, { requester, revision: 1, activation: 'unanswered/a1' }, 1_000),
    ).toEqual({ outcome: 'queued' });
    // The worker comes: the lock takes the signal and the late Update in one task and grants in
    // the Update's answer, which nobody hears any more; it must tell the requester by signal.
    const worker = await Worker.create({
      connection: await workerConnection(),
      namespace: process.env.TEMPORAL_NAMESPACE!,
      taskQueue,
      workflowBundle: await workflowBundle(),
      activities: createLockActivities(client, taskQueue),
    });
    await worker.runUntil(async () => {
      await pollUntil(
        async () => {
          const history = (await lock.fetchHistory()).events ?? [];
          return history.some(
            (e) =>
              e.eventType === events.EVENT_TYPE_SIGNAL_EXTERNAL_WORKFLOW_EXECUTION_INITIATED &&
              e.signalExternalWorkflowExecutionInitiatedEventAttributes?.signalName === 'lockGranted' &&
              e.signalExternalWorkflowExecutionInitiatedEventAttributes.workflowExecution?.workflowId === requester,
          );
        },
        30_000,
        'the lock to signal the grant',
        200,
      );
    });
  } finally {
    await lock.terminate('test done').catch(() => undefined);
    await close();
  }
});
