/**
 * A watcher that is a standby (docs/ha.md) sees deletions it may not act on; once it leads, it
 * hands them to their workflows. Here the watcher of this file's system has a leadership the test
 * flips (the election itself is test/ha-election.test.ts): a VectorActivation waiting for its
 * Stage, which has no close-out finalizer yet and so is gone at once, is deleted while the watcher
 * is a standby; when the watcher leads again its workflow is told and closes, while the Stage's
 * holder still runs (so it is not the grant that ends it).
 */
import type { Leadership } from '../k8s/leader-election.js';
import { pollUntil } from '../scripts/env/process.js';
import { activationWorkflowId } from '../shared/activation.js';
import { activate, holdStageWorking } from './support/scenario.js';
import { phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';

class Flipped implements Leadership {
  readonly identity = 'watcher-under-test';
  leading = true;
  private readonly since = new Date();
  isLeader(): boolean {
    return this.leading;
  }
  leaderSince(): Date | undefined {
    return this.leading ? this.since : undefined;
  }
}

const leadership = new Flipped();
let s: TestSystem;
beforeAll(async () => {
  s = await startTestSystem('standby', { watcherLeadership: leadership });
});
afterAll(async () => {
  await s?.stop();
});

const status = async (workflowId: string) => (await s.client.workflow.getHandle(workflowId).describe()).status.name;

it('a deletion seen as a standby is handed to its workflow once the watcher leads', async () => {
  // The holder's one task takes 120 s: the Stage stays held for the whole test.
  await holdStageWorking(s, 'shop', 120);
  await activate(s, 'shop-to-3', 'shop', 3, { executionPlan: 'shop-plan' });
  const waiting = await waitFor(s, 'VectorActivation', 'shop-to-3', phaseIs('Waiting'));
  expect(waiting.metadata.finalizers ?? []).toEqual([]); // deleted, it is gone at once
  const workflowId = activationWorkflowId({ namespace: s.ns, name: 'shop-to-3', uid: waiting.metadata.uid! });
  expect(await status(workflowId)).toBe('RUNNING');

  // The watcher looks at its leadership every 200 ms; once it has seen itself a standby, a later
  // lead is a takeover.
  leadership.leading = false;
  await pollUntil(() => !s.watcher.standing().seenActing, 30_000, 'the watcher to see itself a standby');
  await s.objects.delete('VectorActivation', s.ns, 'shop-to-3');
  await pollUntil(
    async () => !(await s.objects.get('VectorActivation', s.ns, 'shop-to-3')),
    30_000,
    'shop-to-3 to be gone',
  );
  // The standby's watch delivers the deletion (it keeps its caches warm): it is seen and kept for
  // later, in the same step that drops the object from its cache.
  await pollUntil(() => !s.watcher.standing().holds(waiting.metadata.uid!), 30_000, 'the standby to see the deletion');
  expect(s.watcher.standing().keepsDeletion(workflowId)).toBe(true);

  const ledAt = Date.now();
  leadership.leading = true;
  // Told at the takeover (polled every 200 ms), the workflow stops waiting and closes in seconds;
  // the holder's task has most of its 120 s to go, so the grant cannot be what closes it.
  await pollUntil(
    async () => (await status(workflowId)) !== 'RUNNING',
    60_000,
    "the deleted activation's workflow to close",
  );
  expect((await s.objects.get('VectorActivation', s.ns, 'shop-to-2'))?.status?.phase).toBe('InProgress');
  // It was told once the watcher led, not while it was a standby.
  const history = await s.client.workflow.getHandle(workflowId).fetchHistory();
  const told = (history.events ?? []).filter(
    (e) => e.workflowExecutionSignaledEventAttributes?.signalName === 'cancel',
  );
  expect(told.length).toBeGreaterThan(0);
  for (const e of told)
    expect(Number(e.eventTime!.seconds) * 1000 + Math.floor((e.eventTime!.nanos ?? 0) / 1e6)).toBeGreaterThanOrEqual(
      ledAt,
    );
}, 180_000);
