/**
 * A burst of activations on one Stage: at no instant are two InProgress (checked on every status
 * change by a watch), the newest ends active, and the older ones are Skipped rather than run. A
 * burst the watcher sees whole costs one workflow: the older ones end before they start; so does
 * one that arrives in two pieces while the newest of the first waits for the rest of its burst.
 */
import { GROUP, VERSION } from '../api/group.js';
import { resumingWatch } from './support/watch.js';
import { pollUntil } from '../scripts/env/process.js';
import { WorkflowNotFoundError } from '@temporalio/client';
import { activationWorkflowId } from '../shared/activation.js';
import { activate, routes, seedActive, seedPlan, seedRoutes, seedStage } from './support/scenario.js';
import { phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';

let s: TestSystem;
beforeAll(async () => {
  s = await startTestSystem('burst');
});
afterAll(async () => {
  await s?.stop();
});

const N = 10;
const FINAL = ['Succeeded', 'Failed', 'Skipped', 'Cancelled'];

it(`runs a burst of ${N} activations on one Stage one at a time and ends with the newest active`, async () => {
  const revisions = Array.from({ length: N }, (_, i) => i + 1);
  // History enough for all: the Stage controller's cleanup of unused StageVersions is not under test here.
  await seedStage(s, 'hot', revisions, { stageVersionHistoryLimit: N });
  await seedRoutes(s, 'hot', 1);
  // Revision 1 serves: held by the active usage, it is not cleaned up while the burst runs.
  await seedActive(s, 'hot', 1);
  await seedPlan(s, 'hot');

  // One watch stream sees every status change of the namespace in order.
  const phases = new Map<string, string>();
  const ran = new Set<string>();
  let maxInProgress = 0;
  const watch = await resumingWatch(
    s.kc,
    `/apis/${GROUP}/${VERSION}/namespaces/${s.ns}/vectoractivations`,
    (_type, o) => {
      phases.set(o.metadata.name, o.status?.phase ?? 'none');
      const inProgress = [...phases.values()].filter((p) => p === 'InProgress').length;
      if (o.status?.phase === 'InProgress') ran.add(o.metadata.name);
      maxInProgress = Math.max(maxInProgress, inProgress);
    },
  );

  try {
    // Created at once, in shuffled order, as a CI pipeline and a person racing each other might.
    const order = [...revisions].sort((a, b) => ((a * 7919) % 13) - ((b * 7919) % 13));
    await Promise.all(order.map((r) => activate(s, `hot-to-${r}`, 'hot', r)));
    // Fresh reads decide when all are done (the watch above only checks the InProgress rule).
    await pollUntil(
      async () =>
        (await s.objects.list('VectorActivation', s.ns)).filter((va) => FINAL.includes(va.status?.phase)).length === N,
      120_000,
      'every activation to finish',
      200,
    ).catch(async (err: Error) => {
      const left = (await s.objects.list('VectorActivation', s.ns)).filter((va) => !FINAL.includes(va.status?.phase));
      throw new Error(
        `${err.message}; unfinished: ${JSON.stringify(left.map((va) => ({ name: va.metadata.name, status: va.status })))}`,
      );
    });
  } finally {
    watch.stop();
  }

  expect({ maxInProgress, watchEnded: watch.ended }).toEqual({ maxInProgress: 1, watchEnded: undefined });
  const newest = await s.objects.get('VectorActivation', s.ns, `hot-to-${N}`);
  expect({ phase: newest?.status.phase, reason: newest?.status.reason, error: newest?.status.firstError }).toEqual({
    phase: 'Succeeded',
    reason: 'Activated',
    error: undefined,
  });
  expect((await s.objects.get('StageVersionUsage', s.ns, 'hot-active'))?.spec.stageVersionRef.name).toBe(`hot-${N}`);
  expect((await routes(s, 'hot')).api).toEqual(['mirror-sink:0', `hot-shop-v${N}:100`]);
  // O(1) runs: besides the newest, at most the one that held the Stage before the burst was complete.
  expect(ran.size).toBeLessThanOrEqual(2);
  for (const r of revisions.slice(0, -1)) {
    const name = `hot-to-${r}`;
    if (ran.has(name)) continue;
    const va = await s.objects.get('VectorActivation', s.ns, name);
    // Revision 1 already serves: if its activation gets the Stage before a newer one finished, it
    // is AlreadyActive; every other older one is Superseded while waiting or OlderThanActive after.
    const reasons = r === 1 ? /^(Superseded|OlderThanActive|AlreadyActive)$/ : /^(Superseded|OlderThanActive)$/;
    expect({ name, phase: va?.status.phase, reason: va?.status.reason }).toEqual({
      name,
      phase: 'Skipped',
      reason: expect.stringMatching(reasons),
    });
  }
});

it('a burst the watcher sees at once gets one workflow: the older activations end Skipped before they start', async () => {
  // A system of its own whose watcher starts only once the whole burst exists (as after a restart,
  // or when the creates arrive together).
  const b = await startTestSystem('burst-whole', { watcher: false });
  try {
    const n = 6;
    const revisions = Array.from({ length: n }, (_, i) => i + 1);
    await seedStage(b, 'cold', revisions, { stageVersionHistoryLimit: n });
    await seedRoutes(b, 'cold', 1);
    await seedActive(b, 'cold', 1);
    await seedPlan(b, 'cold');
    for (const r of [3, 6, 2, 5, 4]) await activate(b, `cold-to-${r}`, 'cold', r);
    await b.watcher.start();

    await waitFor(b, 'VectorActivation', 'cold-to-6', phaseIs('Succeeded'));
    expect((await routes(b, 'cold')).api).toEqual(['mirror-sink:0', 'cold-shop-v6:100']);
    for (const r of [2, 3, 4, 5]) {
      const va = await b.objects.get('VectorActivation', b.ns, `cold-to-${r}`);
      expect({
        r,
        phase: va?.status.phase,
        reason: va?.status.reason,
        message: va?.status.message,
        workflowId: va?.status.workflowId,
      }).toEqual({
        r,
        phase: 'Skipped',
        reason: 'Superseded',
        message: `superseded before it started by the newer activation ${b.ns}/cold-to-6 (revision 6)`,
        workflowId: undefined,
      });
      // No workflow ran for it: nothing in Temporal, nothing on the Stage's path.
      const describe = b.client.workflow
        .getHandle(activationWorkflowId({ namespace: b.ns, name: `cold-to-${r}`, uid: va!.metadata.uid! }))
        .describe();
      await expect(describe).rejects.toBeInstanceOf(WorkflowNotFoundError);
    }
  } finally {
    await b.stop();
  }
});

it('a burst that arrives in two pieces runs once: the newest of the first piece waits for the rest, and the later newest supersedes it before it starts', async () => {
  // The wait for the rest of a burst ends after 75 ms without an arrival, at most 250 ms by
  // default; long here, so that the second piece surely arrives within it on a busy machine.
  const b = await startTestSystem('burst-pieces', { burstSettleMs: 5_000, burstQuietMs: 5_000, watcher: false });
  try {
    await seedStage(b, 'warm', [1, 2, 3, 4], { stageVersionHistoryLimit: 4 });
    await seedRoutes(b, 'warm', 1);
    await seedActive(b, 'warm', 1);
    await seedPlan(b, 'warm');
    const ran = new Set<string>();
    const watch = await resumingWatch(
      b.kc,
      `/apis/${GROUP}/${VERSION}/namespaces/${b.ns}/vectoractivations`,
      (_type, o) => {
        if (o.status?.phase === 'InProgress') ran.add(o.metadata.name);
      },
    );
    try {
      // The first piece, seen whole (the watcher starts after it): the older of the two ends
      // Skipped at once, the newer waits for the rest of its burst.
      await activate(b, 'warm-to-2', 'warm', 2);
      await activate(b, 'warm-to-3', 'warm', 3);
      await b.watcher.start();
      await waitFor(b, 'VectorActivation', 'warm-to-2', phaseIs('Skipped'));
      // The second piece, while warm-to-3 waits for the rest of its burst.
      await activate(b, 'warm-to-4', 'warm', 4);
      await waitFor(b, 'VectorActivation', 'warm-to-4', phaseIs('Succeeded'));
    } finally {
      watch.stop();
    }
    const third = await b.objects.get('VectorActivation', b.ns, 'warm-to-3');
    expect({
      phase: third?.status.phase,
      message: third?.status.message,
      workflowId: third?.status.workflowId,
    }).toEqual({
      phase: 'Skipped',
      message: `superseded before it started by the newer activation ${b.ns}/warm-to-4 (revision 4)`,
      workflowId: undefined,
    });
    expect([...ran]).toEqual(['warm-to-4']);
    expect((await routes(b, 'warm')).api).toEqual(['mirror-sink:0', 'warm-shop-v4:100']);
  } finally {
    await b.stop();
  }
});
