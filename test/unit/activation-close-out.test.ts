/**
 * The activation workflow closed out and deleted: a close-out run after a terminated workflow, a
 * VectorActivation deleted with or without a watcher to say so, a Stage deleted under a new, a
 * waiting or a running activation, a revert that finds its record gone. The setup, the rules about time and the
 * helpers are those of activation-workflow.test.ts (test/unit/support/activation-harness.ts); a
 * file of its own so that the two run side by side.
 */
import { pollUntil } from '../../scripts/env/process.js';
import { activationWorkflowId, cancelSignal, cancelUpdate, stageDeletedSignal } from '../../shared/activation.js';
import { finishSignal } from './support/lock-workflows.js';
import {
  ns,
  TEST_TIMEOUT,
  env,
  cluster,
  isOpen,
  start,
  activate,
  phaseIs,
  executorRunning,
  waitForLock,
  holdStage,
  waiting,
} from './support/activation-harness.js';

describe.each(['Revert', 'Stop'] as const)(
  'a close-out run after a terminated workflow (onFailure %s)',
  (onFailure) => {
    test(
      'ends the running execution, puts back only under Revert (rules nobody moved), ends Failed saying why, and lets everything go',
      async () => {
        const stage = `closed-${onFailure.toLowerCase()}`;
        cluster.addStage(ns, stage, { [`${stage}-1`]: 1, [`${stage}-2`]: 2 }, `${stage}-1`);
        // The close-out waits a heartbeat timeout for the run before's executors to stop; the test
        // server runs that wait in real time (the terminated run's activity keeps time from skipping).
        for (const task of ['gw', 'mesh']) cluster.addRegistration(`${stage}-${task}`, { heartbeatTimeoutSeconds: 1 });
        cluster.addPlan(`${stage}-plan`, {
          onFailure,
          steps: [
            { name: 'gateway', tasks: [`${stage}-gw`] },
            { name: 'mesh', tasks: [`${stage}-mesh`] },
          ],
        });
        cluster.behave(`${stage}-mesh`, { kind: 'work', seconds: 1 });
        const ref = activate(`${stage}-to-2`, stage, `${stage}-2`, `${stage}-plan`);
        const handle = await start(ref);
        await executorRunning(`${stage}-mesh`);
        await handle.terminate('an operator terminated it');
        // What the watcher does when it finds the run closed and the object unfinished.
        const why = {
          reason: 'WorkflowTerminated',
          message: `the activation's workflow ${handle.workflowId} was terminated`,
        };
        const result = await (await start(ref, { resume: 'close-out', closeOut: why })).result();

        expect(result.phase).toBe('Failed');
        const status = cluster.activation(ref).status;
        expect(status.reason).toBe('WorkflowTerminated');
        const mesh = `${stage}-to-2-1-${stage}-mesh`;
        expect(cluster.executions.get(`${ns}/${mesh}`)?.status).toMatchObject({ phase: 'Error', reason: 'Cancelled' });
        const calls = cluster
          .callsOf(ref)
          .map((c) => `${c.action} ${c.registration}${c.unmovedOnly ? ' unmoved' : ''}`);
        if (onFailure === 'Revert') {
          expect(status.message).toBe(
            `${why.message}; every task that ran was reverted: its routes are back as it found them`,
          );
          expect(calls).toEqual([
            `Apply ${stage}-gw`,
            `Apply ${stage}-mesh`,
            `Revert ${stage}-mesh unmoved`,
            `Revert ${stage}-gw unmoved`,
          ]);
        } else {
          expect(status.message).toBe(`${why.message}; steps left applied: gateway; maybe partly applied: mesh`);
          expect(calls).toEqual([`Apply ${stage}-gw`, `Apply ${stage}-mesh`]);
        }
        expect(cluster.lease(ns, stage)?.holder).toBeUndefined();
        expect(cluster.stageVersion(ns, `${stage}-2`).activatedBy).toBeUndefined();
        expect(cluster.activation(ref).closeOutFinalizer).toBe(false);
        expect(cluster.activeUsage(ns, stage)).toBe(`${stage}-1`);
      },
      TEST_TIMEOUT,
    );
  },
);

/**
 * The workflow closes while its cancelled executor is still running (the executor is not waited
 * for; see the cancel test), and the test server keeps that activity's time-skipping lock for good
 * (sdk-java#1138): the tests after it in this file, like those after the terminated runs above,
 * run with time held, so none of them waits on workflow time.
 */
test.each([
  ['Stop', ['Apply one']],
  ['Revert', ['Apply one', 'Revert one']],
] as const)(
  'deletion while no watcher runs, onFailure %s: the finalizer holds the object, the next status write stops the run, the next step never starts, and then the object goes',
  async (onFailure, calls) => {
    const stage = `unwatched-${onFailure.toLowerCase()}`;
    cluster.addStage(ns, stage, { [`${stage}-1`]: 1, [`${stage}-2`]: 2 }, `${stage}-1`);
    cluster.addPlan(`${stage}-plan`, {
      onFailure,
      steps: [
        { name: 'one', tasks: [`${stage}-one`] },
        { name: 'two', tasks: [`${stage}-two`] },
      ],
    });
    cluster.behave(`${stage}-one`, { kind: 'work', seconds: 1 });
    const ref = activate(`${stage}-to-2`, stage, `${stage}-2`, `${stage}-plan`);
    const handle = await start(ref);
    await executorRunning(`${stage}-one`);
    // Deleted, and nobody tells the workflow: no signal, no Update.
    cluster.deleteActivation(ref);
    expect(cluster.hasActivation(ref)).toBe(true);

    await pollUntil(async () => !(await isOpen(handle)), 20_000, 'the workflow to close', 50);
    expect((await handle.describe()).status.name).toBe('COMPLETED');
    // Step two's InProgress found the object being deleted: its tasks never ran, what ran is put back
    // under Revert, and nothing waits for a retry.
    expect(cluster.callsOf(ref).map((c) => `${c.action} ${c.registration.slice(stage.length + 1)}`)).toEqual(calls);
    expect(cluster.hasActivation(ref)).toBe(false);
    expect(cluster.lease(ns, stage)?.holder).toBeUndefined();
    expect(cluster.activeUsage(ns, stage)).toBe(`${stage}-1`);
  },
  TEST_TIMEOUT,
);

test(
  'deletion: a cancel signal with deleted: true stops a running activation and closes its workflow promptly, without a retry window',
  async () => {
    cluster.addStage(ns, 'del', { 'del-1': 1, 'del-2': 2 }, 'del-1');
    cluster.addPlan('del-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['del-route'] }] });
    cluster.behave('del-route', { kind: 'hang' });
    const ref = activate('del-to-2', 'del', 'del-2', 'del-plan');
    const handle = await start(ref);
    const call = await executorRunning('del-route');

    // The watcher relays the deletion of the VectorActivation.
    cluster.deleteActivation(ref);
    const signalledAt = await env.currentTimeMs();
    await handle.signal(cancelSignal, { deleted: true, reason: 'VectorActivation deleted' });

    // Time is locked here (no client awaits a result): a workflow waiting for a retry would not
    // close within this real-time deadline.
    await pollUntil(async () => !(await isOpen(handle)), 10_000, 'the workflow to close', 50);
    const description = await handle.describe();
    expect(description.status.name).toBe('COMPLETED');
    expect(description.closeTime!.getTime() - signalledAt).toBeLessThan(60_000);
    await pollUntil(() => call.outcome === 'cancelled', 10_000, 'the running task to be cancelled', 20);
    expect(cluster.lease(ns, 'del')?.holder).toBeUndefined();
    expect(cluster.stageVersion(ns, 'del-2').activatedBy).toBeUndefined();
    expect(cluster.activeUsage(ns, 'del')).toBe('del-1');
  },
  TEST_TIMEOUT,
);

test(
  "the watcher's word: a deletion of another Stage of the same name (another uid) is ignored; of the Stage it validated, it stops the activation where it waits",
  async () => {
    cluster.addStage(ns, 'told', { 'told-1': 1, 'told-2': 2, 'told-3': 3 }, 'told-1');
    cluster.addPlan('told-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['told-route'] }] });
    const holder = await holdStage('told');
    const other = activate('told-to-2', 'told', 'told-2', 'told-plan');
    const mine = activate('told-to-3', 'told', 'told-3', 'told-plan');
    // One at a time behind a holder (two waiting together would supersede the older one).
    const handle = await start(other);
    await waiting('told', other);
    await handle.signal(stageDeletedSignal, { namespace: ns, stage: 'told', uid: 'an-older-stage' });
    await holder.signal(finishSignal);
    expect((await handle.result()).phase).toBe('Succeeded');

    const holderAgain = await holdStage('told');
    const waitingOne = await start(mine);
    await waiting('told', mine);
    await waitingOne.signal(stageDeletedSignal, {
      namespace: ns,
      stage: 'told',
      uid: cluster.stages.get(`${ns}/told`)!.uid,
    });
    const status = await phaseIs(mine, 'Cancelled');
    expect(status).toMatchObject({
      reason: 'StageDeleted',
      message: 'Stage unit/told was deleted: the activation stopped while waiting for Stage told; no route was changed',
    });
    await pollUntil(async () => !(await isOpen(waitingOne)), 10_000, 'the workflow to close', 50);
    expect(cluster.callsOf(mine)).toEqual([]);
    await waitForLock(
      'told',
      (s) => !s.waiting.some((w) => w.requester === activationWorkflowId(mine)),
      'the lock to forget it',
    );
    // The holder lets the Stage go, and is awaited: one terminated while it does would stop time skipping.
    await holderAgain.signal(finishSignal);
    await holderAgain.result();
  },
  TEST_TIMEOUT,
);

test(
  'a Stage being deleted fails a new activation at once (StageDeleted), before anything is held',
  async () => {
    cluster.addStage(ns, 'going', { 'going-1': 1, 'going-2': 2 }, 'going-1');
    cluster.stages.get(`${ns}/going`)!.deleting = true;
    cluster.addPlan('going-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['going-route'] }] });
    const ref = activate('going-to-2', 'going', 'going-2', 'going-plan');
    await start(ref);
    // Polled in real time (time is locked): the failure comes at once, not after any wait.
    const status = await phaseIs(ref, 'Failed');
    expect(status).toMatchObject({ reason: 'StageDeleted', message: 'Stage unit/going is being deleted' });
    expect(cluster.phases(ref)).toEqual(['Failed']);
    expect(cluster.activationUsage(ref)).toBeUndefined();
    expect(cluster.lease(ns, 'going')).toBeUndefined();
  },
  TEST_TIMEOUT,
);

test(
  'a revert that finds a succeeded execution deleted (its record with it) does not claim the routes are back: it says what could not be put back',
  async () => {
    cluster.addStage(ns, 'lost', { 'lost-1': 1, 'lost-2': 2 }, 'lost-1');
    cluster.addPlan('lost-plan', {
      onFailure: 'Revert',
      steps: [
        { name: 'gateway', tasks: ['lost-gw'] },
        { name: 'mesh', tasks: ['lost-mesh'] },
      ],
    });
    cluster.behave('lost-mesh', { kind: 'hang' });
    const ref = activate('lost-to-2', 'lost', 'lost-2', 'lost-plan');
    const handle = await start(ref);
    await executorRunning('lost-mesh');
    cluster.executions.delete(`${ns}/lost-to-2-0-lost-gw`);
    await handle.executeUpdate(cancelUpdate, { args: [{ reason: 'wrong version' }] });

    const status = await phaseIs(ref, 'Cancelled');
    expect(status.message).toBe(
      'cancelled in step mesh (wrong version); the revert failed for some tasks; steps left applied: gateway; maybe partly applied: mesh',
    );
    // The step says which task could not be put back, and why.
    expect(status.steps?.[0]).toMatchObject({ name: 'gateway', phase: 'Failed' });
    expect(status.steps?.[0]?.tasks[0]).toMatchObject({
      phase: 'Succeeded',
      message:
        'ActivationExecution lost-to-2-0-lost-gw is gone, and with it the record of what it changed: nothing of it was put back',
    });
    expect(cluster.callsOf(ref).map((c) => `${c.action} ${c.registration}`)).toEqual([
      'Apply lost-gw',
      'Apply lost-mesh',
      'Revert lost-mesh',
    ]);
  },
  TEST_TIMEOUT,
);

describe.each([
  ['Stop', 'deleted'],
  ['Revert', 'made anew under its name'],
] as const)(
  'the Stage lost while a step runs, with no watcher to say so (onFailure %s, Stage %s)',
  (onFailure, how) => {
    test(
      'the run reads the Stage before the next step, stops there and ends Cancelled (StageDeleted), writing nothing for it afterwards',
      async () => {
        cluster.addStage(ns, 'gone', { 'gone-1': 1, 'gone-2': 2 }, 'gone-1');
        cluster.stageVersion(ns, 'gone-1').serving = 'gone';
        cluster.addPlan('gone-plan', {
          onFailure,
          steps: [
            { name: 'gateway', tasks: ['gone-gw'] },
            { name: 'mesh', tasks: ['gone-mesh'] },
          ],
        });
        cluster.behave('gone-gw', { kind: 'work', seconds: 1 });
        const ref = activate('gone-to-2', 'gone', 'gone-2', 'gone-plan');
        const handle = await start(ref);
        await executorRunning('gone-gw');
        const validated = cluster.stages.get(`${ns}/gone`)!.uid;
        if (how === 'deleted') cluster.stages.delete(`${ns}/gone`);
        else cluster.stages.set(`${ns}/gone`, { uid: 'another-stage' });
        const stoppedAt = await env.currentTimeMs();

        // Time is locked here: a workflow waiting for a retry would not close within this deadline.
        await pollUntil(async () => !(await isOpen(handle)), 10_000, 'the workflow to close', 50);
        expect((await handle.describe()).closeTime!.getTime() - stoppedAt).toBeLessThan(60_000);
        const status = cluster.activation(ref).status;
        const lost =
          how === 'deleted'
            ? 'Stage unit/gone was deleted'
            : 'Stage unit/gone was deleted (the Stage of that name now is another one, uid another-stage)';
        const state =
          onFailure === 'Stop'
            ? 'steps left applied: gateway'
            : 'every task that ran was reverted: its routes are back as it found them';
        expect(status).toMatchObject({
          phase: 'Cancelled',
          reason: 'StageDeleted',
          message: `${lost}: the activation stopped before step mesh; ${state}`,
        });
        expect(cluster.callsOf(ref).map((c) => `${c.action} ${c.registration}`)).toEqual(
          onFailure === 'Stop' ? ['Apply gone-gw'] : ['Apply gone-gw', 'Revert gone-gw'],
        );
        // It validated the Stage by uid, and read it again (by that uid) before the second step.
        expect(cluster.calls.filter((c) => c.activity === 'checkStage').map((c) => c.args)).toEqual([
          [ns, 'gone', validated],
        ]);
        // Nothing moved to the new version; the Lease, the mark and the lock are let go.
        expect(cluster.activeUsage(ns, 'gone')).toBe('gone-1');
        expect(cluster.stageVersion(ns, 'gone-2').serving).toBeUndefined();
        expect(cluster.stageVersion(ns, 'gone-2').activatedBy).toBeUndefined();
        expect(cluster.lease(ns, 'gone')?.holder).toBeUndefined();
        await waitForLock('gone', (s) => !s.holder, 'the Stage lock to be free');
      },
      TEST_TIMEOUT,
    );
  },
);

describe.each(['Stop', 'Revert'] as const)('the Stage lost while the last step runs (onFailure %s)', (onFailure) => {
  test(
    'the switch reads it before it writes: nothing moves to the new version, and the step stays applied or is put back',
    async () => {
      const stage = `late-${onFailure.toLowerCase()}`;
      cluster.addStage(ns, stage, { [`${stage}-1`]: 1, [`${stage}-2`]: 2 }, `${stage}-1`);
      cluster.stageVersion(ns, `${stage}-1`).serving = stage;
      cluster.addPlan(`${stage}-plan`, { onFailure, steps: [{ name: 'route', tasks: [`${stage}-route`] }] });
      cluster.behave(`${stage}-route`, { kind: 'work', seconds: 1 });
      const ref = activate(`${stage}-to-2`, stage, `${stage}-2`, `${stage}-plan`);
      await start(ref);
      await executorRunning(`${stage}-route`);
      cluster.stages.delete(`${ns}/${stage}`);

      const status = await phaseIs(ref, 'Cancelled');
      const state =
        onFailure === 'Stop'
          ? 'steps left applied: route'
          : 'every task that ran was reverted: its routes are back as it found them';
      expect(status).toMatchObject({
        reason: 'StageDeleted',
        message: `Stage unit/${stage} was deleted: the activation stopped before the switch; ${state}`,
      });
      expect(cluster.callsOf(ref).map((c) => `${c.action} ${c.registration}`)).toEqual(
        onFailure === 'Stop' ? [`Apply ${stage}-route`] : [`Apply ${stage}-route`, `Revert ${stage}-route`],
      );
      expect(cluster.activeUsage(ns, stage)).toBe(`${stage}-1`);
      expect(cluster.stageVersion(ns, `${stage}-1`).serving).toBe(stage);
      expect(cluster.stageVersion(ns, `${stage}-2`).serving).toBeUndefined();
      expect(cluster.lease(ns, stage)?.holder).toBeUndefined();
    },
    TEST_TIMEOUT,
  );
});

test(
  "the Stage deleted while the activation waits for another holder's Lease: it stops there, having held and marked nothing",
  async () => {
    cluster.addStage(ns, 'leased', { 'leased-1': 1, 'leased-2': 2 }, 'leased-1');
    cluster.addPlan('leased-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['leased-route'] }] });
    cluster.leases.set(`${ns}/leased`, {
      holder: 'another-installation',
      stageUid: 'x',
      holders: ['another-installation'],
    });
    const ref = activate('leased-to-2', 'leased', 'leased-2', 'leased-plan');
    const handle = await start(ref, { leaseWaitSeconds: 3 });
    await phaseIs(ref, 'Waiting');
    const uid = cluster.stages.get(`${ns}/leased`)!.uid;
    cluster.stages.delete(`${ns}/leased`);
    await handle.signal(stageDeletedSignal, { namespace: ns, stage: 'leased', uid });

    // The Lease's wait ends on its own (its bounded retries: the signal waits behind it); the Stage,
    // read then, is gone, and the activation ends StageDeleted rather than for the Lease.
    const status = await phaseIs(ref, 'Cancelled');
    expect(status).toMatchObject({
      reason: 'StageDeleted',
      message: 'Stage unit/leased was deleted: the activation stopped before its first step; no route was changed',
    });
    expect(cluster.callsOf(ref)).toEqual([]);
    expect(cluster.activationUsage(ref)).toBeUndefined();
    expect(cluster.stageVersion(ns, 'leased-2').activatedBy).toBeUndefined();
  },
  TEST_TIMEOUT,
);
