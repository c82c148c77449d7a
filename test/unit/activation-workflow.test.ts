/**
 * The activation workflow (workflows/activation/) on the time-skipping test server, with no server
 * of the project's: the core activities are the in-memory fake of test/unit/support/fake-cluster.ts,
 * the executor is its fake `executeTask`, and the Stage lock is the real lock workflow with the real
 * `requestStageLock`. Days of retry window pass in milliseconds. The setup, the rules about time and
 * the helpers are in test/unit/support/activation-harness.ts; close-outs and deletions are in
 * activation-close-out.test.ts.
 */
import { ApplicationFailure } from '@temporalio/common';
import { pollUntil } from '../../scripts/env/process.js';
import { cancelUpdate, retryUpdate, type ActivationRef } from '../../shared/activation.js';
import { RELEASE_UNANSWERED, stageLockWorkflowId } from '../../stage-lock/contract.js';
import { type FakeActivationStatus } from './support/fake-cluster.js';
import { finishSignal } from './support/lock-workflows.js';
import { terminateAtRest } from './support/at-rest.js';
import {
  ns,
  DAY,
  TEST_TIMEOUT,
  env,
  cluster,
  isOpen,
  start,
  activate,
  phaseIs,
  executorRunning,
  lockState,
  waitForLock,
  holdStage,
  waiting,
  refusal,
  journalIndex,
  LANDSCAPE,
} from './support/activation-harness.js';

// --- the tests ---------------------------------------------------------------------------------

test(
  'happy path on a free Stage: InProgress → Succeeded (its first write is its first step: no Pending, nothing waited for, no Waiting), steps in order with the tasks of a step together; usages, Lease and marks end right',
  async () => {
    cluster.addStage(ns, 'shop', { 'shop-1': 1, 'shop-2': 2 }, 'shop-1');
    cluster.stageVersion(ns, 'shop-1').serving = 'shop';
    cluster.addPlan('shop-plan', {
      onFailure: 'Stop',
      steps: [
        { name: 'gateway', tasks: ['shop-gw-a', 'shop-gw-b'] },
        { name: 'mesh', tasks: ['shop-mesh'] },
      ],
    });
    // Long enough that two tasks run one after the other could not overlap by accident.
    cluster.behave('shop-gw-a', { kind: 'work', seconds: 0.4 });
    cluster.behave('shop-gw-b', { kind: 'work', seconds: 0.4 });
    const ref = activate('shop-to-2', 'shop', 'shop-2', 'shop-plan');

    const result = await (await start(ref)).result();

    expect(result.phase).toBe('Succeeded');
    expect(cluster.phases(ref)).toEqual(['InProgress', 'Succeeded']);
    const status = cluster.activation(ref).status;
    expect(status).toMatchObject({
      reason: 'Activated',
      message: 'Stage shop now serves shop-2 (was shop-1)',
      attempt: 1,
      previousStageVersion: 'shop-1',
    });
    expect(status.steps?.map((s) => [s.name, s.phase])).toEqual([
      ['gateway', 'Succeeded'],
      ['mesh', 'Succeeded'],
    ]);

    // Steps in order, the tasks of a step together.
    const calls = cluster.callsOf(ref);
    expect(calls.map((c) => c.registration).sort()).toEqual(['shop-gw-a', 'shop-gw-b', 'shop-mesh']);
    expect(
      calls.every(
        (c) =>
          c.action === 'Apply' &&
          c.outcome === 'succeeded' &&
          c.stageVersion === 'shop-2' &&
          c.previousStageVersion === 'shop-1',
      ),
    ).toBe(true);
    const [a, b, mesh] = ['shop-gw-a', 'shop-gw-b', 'shop-mesh'].map((r) => calls.find((c) => c.registration === r)!);
    expect(a!.startedAt).toBeLessThan(b!.endedAt!);
    expect(b!.startedAt).toBeLessThan(a!.endedAt!);
    expect(mesh!.startedAt).toBeGreaterThanOrEqual(Math.max(a!.endedAt!, b!.endedAt!));
    expect([...cluster.executions.values()].map((e) => [e.spec.name, e.status.phase])).toEqual(
      expect.arrayContaining([
        ['shop-to-2-0-shop-gw-a', 'Succeeded'],
        ['shop-to-2-0-shop-gw-b', 'Succeeded'],
        ['shop-to-2-1-shop-mesh', 'Succeeded'],
      ]),
    );
    // Each executor wrote its execution's final status itself: the core wrote none of them.
    for (const execution of ['shop-to-2-0-shop-gw-a', 'shop-to-2-0-shop-gw-b', 'shop-to-2-1-shop-mesh']) {
      expect(journalIndex(`execution ${execution} Succeeded by its executor`)).toBeGreaterThanOrEqual(0);
      expect(journalIndex(`execution ${execution} Succeeded`)).toBe(-1);
    }

    // The active usage moved, then the activation usage (held during the switch) was released.
    expect(cluster.activeUsage(ns, 'shop')).toBe('shop-2');
    expect(journalIndex('hold shop-to-2 shop-2')).toBeGreaterThanOrEqual(0);
    expect(cluster.activationUsage(ref)).toBeUndefined();
    expect(journalIndex('active shop shop-2')).toBeLessThan(journalIndex('release shop-to-2'));
    // The Lease was ours during the activation and is free now; the in-activation mark was set and cleared.
    expect(cluster.lease(ns, 'shop')).toMatchObject({ holders: ['unit/shop-to-2'] });
    expect(cluster.lease(ns, 'shop')?.holder).toBeUndefined();
    // Whoever reads Succeeded finds the Lease free: it was let go before the final status.
    expect(journalIndex('lease shop released by unit/shop-to-2')).toBeGreaterThanOrEqual(0);
    expect(journalIndex('lease shop released by unit/shop-to-2')).toBeLessThan(
      journalIndex('status shop-to-2 Succeeded'),
    );
    // The close-out finalizer goes only once Succeeded is written: a deletion mid-run needs it until then.
    expect(journalIndex('finalizer shop-to-2 removed')).toBeGreaterThan(journalIndex('status shop-to-2 Succeeded'));
    expect(journalIndex('mark shop-2 unit/shop-to-2')).toBeGreaterThanOrEqual(0);
    expect(cluster.stageVersion(ns, 'shop-2').activatedBy).toBeUndefined();
    expect(cluster.stageVersion(ns, 'shop-2').serving).toBe('shop');
    // The previous version keeps its mark and starts to drain: the gateway may still send it requests
    // for a moment, and the Stage controller lets it go once the Stage's drain has passed.
    expect(cluster.stageVersion(ns, 'shop-1')).toMatchObject({ serving: 'shop', drainSince: expect.any(String) });
    // No CircuitBreaker guards the namespace: its admission is no step on the path.
    expect(cluster.calls.map((c) => c.activity)).toContain('breakersApply');
    expect(cluster.calls.map((c) => c.activity)).not.toContain('admitActivation');
    // Every status went over what the workflow knew the object held (no read first), and was so;
    // the conditions say the ending, each since the write that moved it.
    const va = cluster.activation(ref);
    expect(va.overs).toEqual(va.writes.map(() => ({ status: true, generation: true })));
    expect(va.held.status?.conditions?.map((c) => [c.type, c.status, c.reason])).toEqual([
      ['Progressing', 'False', 'Activated'],
      ['Succeeded', 'True', 'Activated'],
    ]);
  },
  TEST_TIMEOUT,
);

test(
  'the final status lets the Stage and the close-out finalizer go with it; a finalizer that write could not take away goes after it',
  async () => {
    cluster.addStage(ns, 'tidy', { 'tidy-1': 1, 'tidy-2': 2 }, 'tidy-1');
    cluster.addPlan('tidy-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['tidy-route'] }] });
    let refusals = 0;
    cluster.before.removeCloseOutFinalizer = () => {
      if (refusals++ === 0) throw ApplicationFailure.nonRetryable('the apiserver refused the patch (test)');
    };
    const ref = activate('tidy-to-2', 'tidy', 'tidy-2', 'tidy-plan');

    expect((await (await start(ref)).result()).phase).toBe('Succeeded');

    // The lock is free and the object carries no finalizer: a deletion is not held up.
    expect((await lockState('tidy'))?.holder).toBeUndefined();
    expect(cluster.activation(ref).closeOutFinalizer).toBe(false);
    expect(refusals).toBe(2);
  },
  TEST_TIMEOUT,
);

test(
  'a release the lock does not answer in time goes by signal at once: the next activation gets the Stage',
  async () => {
    cluster.addStage(ns, 'mute', { 'mute-1': 1, 'mute-2': 2, 'mute-3': 3 }, 'mute-1');
    cluster.addPlan('mute-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['mute-route'] }] });
    let unanswered = 0;
    // What releaseStageLock says when the lock's Update is not answered within its deadline.
    cluster.before.releaseStageLock = () => {
      unanswered++;
      throw ApplicationFailure.create({ type: RELEASE_UNANSWERED, message: 'no answer (test)', nonRetryable: true });
    };
    const first = activate('mute-to-2', 'mute', 'mute-2', 'mute-plan');
    expect((await (await start(first)).result()).phase).toBe('Succeeded');
    // Released by signal, not by a second Update.
    expect(unanswered).toBe(1);
    await waitForLock('mute', (s) => s.holder === undefined, 'the lock is free');

    delete cluster.before.releaseStageLock;
    const next = activate('mute-to-3', 'mute', 'mute-3', 'mute-plan');
    expect((await (await start(next)).result()).phase).toBe('Succeeded');
  },
  TEST_TIMEOUT,
);

test(
  "an executor of an earlier release, which leaves its execution's final status to the core, gets it written",
  async () => {
    cluster.addStage(ns, 'legacy', { 'legacy-1': 1, 'legacy-2': 2 }, 'legacy-1');
    cluster.addPlan('legacy-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['legacy-route'] }] });
    cluster.behave('legacy-route', { kind: 'succeed', leavesRecord: true });
    const ref = activate('legacy-to-2', 'legacy', 'legacy-2', 'legacy-plan');

    expect((await (await start(ref)).result()).phase).toBe('Succeeded');
    expect(journalIndex('execution legacy-to-2-0-legacy-route Succeeded')).toBeGreaterThanOrEqual(0);
    expect(cluster.executions.get(`${ns}/legacy-to-2-0-legacy-route`)?.status.phase).toBe('Succeeded');
  },
  TEST_TIMEOUT,
);

test(
  'the order check reads the Stage after the grant: a newer StageVersion made active while waiting skips the activation (OlderThanActive)',
  async () => {
    cluster.addStage(ns, 'older', { 'older-1': 1, 'older-2': 2 }, 'older-1');
    cluster.addPlan('older-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['older-route'] }] });
    const holder = await holdStage('older');
    const ref = activate('older-to-2', 'older', 'older-2', 'older-plan');
    const handle = await start(ref);
    await phaseIs(ref, 'Waiting');
    await waiting('older', ref);

    // While A waits, revision 3 (unknown when A started) appears and becomes the active one.
    cluster.addStageVersion(ns, 'older', 'older-3', 3);
    cluster.activeUsages.set(`${ns}/older`, 'older-3');
    await holder.signal(finishSignal);

    const result = await handle.result();
    expect(result.phase).toBe('Skipped');
    expect(cluster.activation(ref).status).toMatchObject({
      phase: 'Skipped',
      reason: 'OlderThanActive',
      message: 'StageVersion older-2 (revision 2) is older than the active older-3 (revision 3)',
    });
    expect(cluster.callsOf(ref)).toEqual([]);
    expect(cluster.activeUsage(ns, 'older')).toBe('older-3');
    expect(cluster.activationUsage(ref)).toBeUndefined();
    expect(cluster.stageVersion(ns, 'older-2').activatedBy).toBeUndefined();
    expect(cluster.lease(ns, 'older')?.holder).toBeUndefined();
  },
  TEST_TIMEOUT,
);

test(
  'fail closed: an active usage naming a StageVersion that does not exist fails the activation (ActiveStageVersionUnknown) and runs nothing',
  async () => {
    cluster.addStage(ns, 'ghost', { 'ghost-1': 1, 'ghost-2': 2 }, 'ghost-0');
    cluster.addPlan('ghost-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['ghost-route'] }] });
    const ref = activate('ghost-to-2', 'ghost', 'ghost-2', 'ghost-plan');
    await start(ref);

    const status = await phaseIs(ref, 'Failed');
    expect(status.reason).toBe('ActiveStageVersionUnknown');
    expect(status.message).toContain('names StageVersion ghost-0, which does not exist');
    expect(cluster.callsOf(ref)).toEqual([]);
    expect(cluster.activeUsage(ns, 'ghost')).toBe('ghost-0');
    await pollUntil(() => cluster.lease(ns, 'ghost')?.holder === undefined, 5_000, 'the Lease to be released');
  },
  TEST_TIMEOUT,
);

test(
  'retry window: a Failed activation stays open, and a retry within it runs attempt 2 from the truth: every step again',
  async () => {
    cluster.addStage(ns, 'retry', { 'retry-1': 1, 'retry-2': 2 }, 'retry-1');
    cluster.addPlan('retry-plan', {
      onFailure: 'Stop',
      steps: [
        { name: 'gateway', tasks: ['retry-gw'] },
        { name: 'mesh', tasks: ['retry-mesh'] },
      ],
    });
    cluster.behave('retry-mesh', { kind: 'fail', message: 'VirtualService unit/shop not found' }, { kind: 'succeed' });
    const ref = activate('retry-to-2', 'retry', 'retry-2', 'retry-plan');
    const handle = await start(ref);

    const failed = await phaseIs(ref, 'Failed');
    expect(failed).toMatchObject({
      reason: 'TaskFailed',
      attempt: 1,
      firstError: 'step mesh, task retry-mesh: VirtualService unit/shop not found',
    });
    expect(failed.message).toContain('steps left applied: gateway');
    // Six days later it is still open for a retry.
    await env.sleep(6 * DAY);
    expect(await isOpen(handle)).toBe(true);

    expect(await handle.executeUpdate(retryUpdate, { args: [{ reason: 'fixed the VirtualService' }] })).toEqual({
      outcome: 'Accepted',
      message: 'retry accepted while Failed',
    });
    const result = await handle.result();

    expect(result.phase).toBe('Succeeded');
    expect(cluster.activation(ref).status).toMatchObject({
      phase: 'Succeeded',
      attempt: 2,
      firstError: 'step mesh, task retry-mesh: VirtualService unit/shop not found',
    });
    // Every step runs again as attempt 2 (one whose routes hold its assignment changes nothing),
    // each told the earlier attempt's execution of it, whose record it keeps while nobody moved its rules.
    expect(cluster.callsOf(ref).map((c) => [c.execution, c.outcome, c.earlier])).toEqual([
      ['retry-to-2-0-retry-gw', 'succeeded', undefined],
      ['retry-to-2-1-retry-mesh', 'failed', undefined],
      ['retry-to-2-0-retry-gw-r2', 'succeeded', 'retry-to-2-0-retry-gw'],
      ['retry-to-2-1-retry-mesh-r2', 'succeeded', 'retry-to-2-1-retry-mesh'],
    ]);
    expect(cluster.activeUsage(ns, 'retry')).toBe('retry-2');
  },
  TEST_TIMEOUT,
);

test(
  'retry window: without a retry, a Failed activation completes after 7 days',
  async () => {
    cluster.addStage(ns, 'window', { 'window-1': 1, 'window-2': 2 }, 'window-1');
    cluster.addPlan('window-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['window-route'] }] });
    cluster.behave('window-route', { kind: 'fail', message: 'HTTPRoute unit/shop not found' });
    const ref = activate('window-to-2', 'window', 'window-2', 'window-plan');
    const handle = await start(ref);
    await phaseIs(ref, 'Failed');
    const failedAt = await env.currentTimeMs();

    await env.sleep(7 * DAY - 60 * 60 * 1000);
    expect(await isOpen(handle)).toBe(true);
    const result = await handle.result();
    const closedAt = (await handle.describe()).closeTime!.getTime();

    expect(result.phase).toBe('Failed');
    expect(closedAt - failedAt).toBeGreaterThanOrEqual(7 * DAY - 5_000);
    expect(closedAt - failedAt).toBeLessThan(7 * DAY + 60_000);
    expect(cluster.callsOf(ref)).toHaveLength(1);
  },
  TEST_TIMEOUT,
);

test(
  'Updates answer honestly: retry while InProgress is refused; cancel while InProgress cancels the running task and says what stayed applied',
  async () => {
    cluster.addStage(ns, 'upd', { 'upd-1': 1, 'upd-2': 2 }, 'upd-1');
    cluster.addPlan('upd-plan', {
      onFailure: 'Stop',
      steps: [
        { name: 'gateway', tasks: ['upd-gw'] },
        { name: 'mesh', tasks: ['upd-mesh'] },
      ],
    });
    cluster.behave('upd-mesh', { kind: 'hang' });
    const ref = activate('upd-to-2', 'upd', 'upd-2', 'upd-plan');
    const handle = await start(ref);
    const mesh = await executorRunning('upd-mesh');

    const refused = await refusal(handle.executeUpdate(retryUpdate, { args: [{}] }));
    expect(refused).toMatch(/^refused: the activation is InProgress/);
    expect(cluster.activation(ref).status.phase).toBe('InProgress');
    expect(mesh.outcome).toBe('running');

    expect(await handle.executeUpdate(cancelUpdate, { args: [{ reason: 'wrong version' }] })).toEqual({
      outcome: 'Accepted',
      message: 'cancel accepted while InProgress',
    });
    const status = await phaseIs(ref, 'Cancelled');
    // The cancelled task may have changed some of its routes before it stopped: the message says so.
    expect(status.message).toBe(
      'cancelled in step mesh (wrong version); steps left applied: gateway; maybe partly applied: mesh',
    );
    await pollUntil(() => mesh.outcome === 'cancelled', 10_000, 'the running task to be cancelled', 20);
    expect(cluster.executions.get(`${ns}/upd-to-2-1-upd-mesh`)?.status).toMatchObject({
      phase: 'Error',
      reason: 'Cancelled',
    });
    // Every running execution reaches a final state before the activation does: the executor had
    // stopped before the status said Cancelled (and before the Stage was given to anyone else).
    expect(journalIndex('execute upd-to-2-1-upd-mesh cancelled')).toBeGreaterThanOrEqual(0);
    expect(journalIndex('execute upd-to-2-1-upd-mesh cancelled')).toBeLessThan(
      journalIndex('status upd-to-2 Cancelled'),
    );
    expect(journalIndex('execute upd-to-2-1-upd-mesh cancelled')).toBeLessThan(
      journalIndex('lease upd released by unit/upd-to-2'),
    );
  },
  TEST_TIMEOUT,
);

test(
  'Updates answer honestly: cancel of a Succeeded activation is refused and changes nothing',
  async () => {
    cluster.addStage(ns, 'done', { 'done-1': 1, 'done-2': 2 }, 'done-1');
    cluster.addPlan('done-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['done-route'] }] });
    const ref = activate('done-to-2', 'done', 'done-2', 'done-plan');
    const handle = await start(ref);
    expect((await handle.result()).phase).toBe('Succeeded');
    const writes = cluster.activation(ref).writes.length;

    // A Succeeded activation's workflow has closed, so Temporal itself refuses the Update (the test
    // server says "update … not found", a real one "workflow execution already completed").
    const refused = await refusal(handle.executeUpdate(cancelUpdate, { args: [{ reason: 'too late' }] }));
    expect(refused).toBeTruthy();
    expect(cluster.activation(ref).status.phase).toBe('Succeeded');
    expect(cluster.activation(ref).writes).toHaveLength(writes);
    expect(cluster.activeUsage(ns, 'done')).toBe('done-2');
  },
  TEST_TIMEOUT,
);

test(
  'a final status is the record: a Succeeded or Failed object is not run again, unless resume: retry on a Failed one runs the next attempt',
  async () => {
    cluster.addStage(ns, 'rec', { 'rec-1': 1, 'rec-2': 2 }, 'rec-1');
    cluster.addPlan('rec-plan', {
      onFailure: 'Stop',
      steps: [
        { name: 'gateway', tasks: ['rec-gw'] },
        { name: 'mesh', tasks: ['rec-mesh'] },
      ],
    });
    const steps = (mesh: 'Succeeded' | 'Failed') => [
      {
        name: 'gateway',
        phase: 'Succeeded' as const,
        tasks: [{ registration: 'rec-gw', phase: 'Succeeded' as const }],
      },
      {
        name: 'mesh',
        phase: mesh,
        tasks: [{ registration: 'rec-mesh', phase: mesh === 'Failed' ? ('Error' as const) : ('Succeeded' as const) }],
      },
    ];
    const succeeded = activate('rec-done', 'rec', 'rec-2', 'rec-plan', {
      phase: 'Succeeded',
      reason: 'Activated',
      attempt: 1,
      steps: steps('Succeeded'),
    });
    const failedStatus: FakeActivationStatus = {
      phase: 'Failed',
      reason: 'TaskFailed',
      attempt: 2,
      firstError: 'step mesh, task rec-mesh: boom',
      steps: steps('Failed'),
    };
    const failed = activate('rec-failed', 'rec', 'rec-2', 'rec-plan', failedStatus);
    const resumed = activate('rec-resumed', 'rec', 'rec-2', 'rec-plan', failedStatus);

    expect((await (await start(succeeded)).result()).phase).toBe('Succeeded');
    expect((await (await start(failed)).result()).phase).toBe('Failed');
    // Nothing written, nothing run, the Stage not even asked for.
    for (const ref of [succeeded, failed]) {
      expect(cluster.activation(ref).writes).toEqual([]);
      expect(cluster.callsOf(ref)).toEqual([]);
    }
    expect(cluster.calls.map((c) => c.activity)).toEqual(['loadActivation', 'loadActivation']);
    expect(await lockState('rec')).toBeUndefined();

    const result = await (await start(resumed, { resume: 'retry' })).result();
    expect(result.phase).toBe('Succeeded');
    expect(cluster.activation(resumed).status).toMatchObject({
      phase: 'Succeeded',
      attempt: 3,
      firstError: 'step mesh, task rec-mesh: boom',
    });
    expect(cluster.activation(resumed).writes.every((w) => w.attempt === 3)).toBe(true);
    expect(cluster.callsOf(resumed).map((c) => [c.execution, c.outcome])).toEqual([
      ['rec-resumed-0-rec-gw-r3', 'succeeded'],
      ['rec-resumed-1-rec-mesh-r3', 'succeeded'],
    ]);
  },
  TEST_TIMEOUT,
);

test(
  'a Stage that does not exist fails the activation (StageNotFound) in its first status write, and the Stage is never asked for',
  async () => {
    cluster.addPlan('nostage-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['nostage-route'] }] });
    const ref = activate('nostage-to-2', 'nostage', 'nostage-2', 'nostage-plan');

    const result = await (await start(ref)).result();

    expect(result.phase).toBe('Failed');
    // A new activation's first write is its first news: here, its end.
    expect(cluster.phases(ref)).toEqual(['Failed']);
    expect(cluster.activation(ref).status).toMatchObject({
      reason: 'StageNotFound',
      message: 'Stage unit/nostage does not exist',
    });
    expect(cluster.callsOf(ref)).toEqual([]);
    expect(await lockState('nostage')).toBeUndefined();
  },
  TEST_TIMEOUT,
);

test(
  'the Stage is read once its Lease is taken: a newer version made active while the Lease was taken skips the older activation',
  async () => {
    cluster.addStage(ns, 'under', { 'under-1': 1, 'under-2': 2, 'under-3': 3 }, 'under-1');
    cluster.addPlan('under-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['under-route'] }] });
    // Another controller's switch lands while the Lease is being taken (after anything read
    // beside the taking, which would then be stale).
    cluster.before.acquireStageLease = async (namespace: string, stage: string) => {
      await new Promise((resolve) => setImmediate(resolve));
      if (stage === 'under') cluster.activeUsages.set(`${namespace}/under`, 'under-3');
    };
    const ref = activate('under-to-2', 'under', 'under-2', 'under-plan');

    const result = await (await start(ref)).result();

    expect(result.phase).toBe('Skipped');
    expect(cluster.activation(ref).status).toMatchObject({ reason: 'OlderThanActive' });
    expect(cluster.callsOf(ref)).toEqual([]);
    expect(cluster.activeUsage(ns, 'under')).toBe('under-3');
    expect(cluster.lease(ns, 'under')?.holder).toBeUndefined();
  },
  TEST_TIMEOUT,
);

test(
  'a Lease held by another holder: granted the lock, the activation says it waits for the Lease (Waiting, WaitingForLease), then runs once it is free',
  async () => {
    cluster.addStage(ns, 'foreign', { 'foreign-1': 1, 'foreign-2': 2 }, 'foreign-1');
    cluster.addPlan('foreign-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['foreign-route'] }] });
    cluster.leases.set(`${ns}/foreign`, {
      holder: 'another-installation',
      stageUid: 'x',
      holders: ['another-installation'],
    });
    const ref = activate('foreign-to-2', 'foreign', 'foreign-2', 'foreign-plan');
    const handle = await start(ref);

    const waitingStatus = await phaseIs(ref, 'Waiting');
    expect(waitingStatus).toMatchObject({
      reason: 'WaitingForLease',
      message: expect.stringContaining('is held by another-installation'),
    });
    expect(cluster.callsOf(ref)).toEqual([]);
    cluster.leases.get(`${ns}/foreign`)!.holder = undefined;

    expect((await handle.result()).phase).toBe('Succeeded');
    expect(cluster.phases(ref)).toEqual(['Waiting', 'InProgress', 'Succeeded']);
    expect(cluster.lease(ns, 'foreign')?.holders).toEqual(['another-installation', 'unit/foreign-to-2']);
  },
  TEST_TIMEOUT,
);

test(
  'a plan found missing once the Lease is taken fails the activation (InvalidPlan) and frees the Lease',
  async () => {
    cluster.addStage(ns, 'noplan', { 'noplan-1': 1, 'noplan-2': 2 }, 'noplan-1');
    const ref = activate('noplan-to-2', 'noplan', 'noplan-2', 'noplan-missing-plan');

    const result = await (await start(ref)).result();

    expect(result.phase).toBe('Failed');
    expect(cluster.activation(ref).status).toMatchObject({
      reason: 'InvalidPlan',
      message: 'ActivationExecutionPlan konfidence-system/noplan-missing-plan does not exist',
    });
    expect(cluster.lease(ns, 'noplan')).toMatchObject({ holders: ['unit/noplan-to-2'] });
    expect(cluster.lease(ns, 'noplan')?.holder).toBeUndefined();
    expect(cluster.activeUsage(ns, 'noplan')).toBe('noplan-1');
  },
  TEST_TIMEOUT,
);

test(
  'a StageVersion found being deleted when it is marked fails the activation (StageVersionTerminating) before any executor runs',
  async () => {
    cluster.addStage(ns, 'gone', { 'gone-1': 1, 'gone-2': 2 }, 'gone-1');
    cluster.addPlan('gone-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['gone-route'] }] });
    cluster.stageVersion(ns, 'gone-2').deleting = true;
    const ref = activate('gone-to-2', 'gone', 'gone-2', 'gone-plan');

    const result = await (await start(ref)).result();

    expect(result.phase).toBe('Failed');
    expect(cluster.activation(ref).status).toMatchObject({
      reason: 'StageVersionTerminating',
      message: 'StageVersion gone-2 is being deleted',
    });
    // The step never ran: never said InProgress on the object, nothing executed, the Stage unchanged.
    expect(cluster.phases(ref)).not.toContain('InProgress');
    expect(cluster.activation(ref).status.steps?.map((x) => x.phase)).not.toContain('InProgress');
    expect(cluster.callsOf(ref)).toEqual([]);
    expect(cluster.activeUsage(ns, 'gone')).toBe('gone-1');
    expect(cluster.lease(ns, 'gone')?.holder).toBeUndefined();
    // Nothing ran, so nothing holds the StageVersion: its deletion can go on.
    expect(journalIndex('hold gone-to-2 gone-2')).toBeGreaterThanOrEqual(0);
    expect(cluster.activationUsage(ref)).toBeUndefined();
  },
  TEST_TIMEOUT,
);

test(
  "a later step's InProgress that cannot be written fails the activation once its executions are final, and what ran is reverted",
  async () => {
    cluster.addStage(ns, 'mute', { 'mute-1': 1, 'mute-2': 2 }, 'mute-1');
    cluster.addPlan('mute-plan', {
      onFailure: 'Revert',
      steps: [
        { name: 'gateway', tasks: ['mute-gw'] },
        { name: 'mesh', tasks: ['mute-mesh'] },
      ],
    });
    cluster.before.writeActivationStatus = (_ref: ActivationRef, report: { phase: string; message: string }) => {
      if (report.phase === 'InProgress' && report.message.startsWith('step 2/2'))
        throw ApplicationFailure.nonRetryable('the apiserver refused with HTTP 422', 'Invalid');
    };
    const ref = activate('mute-to-2', 'mute', 'mute-2', 'mute-plan');

    const result = await (await start(ref)).result();

    expect(result.phase).toBe('Failed');
    const status = cluster.activation(ref).status;
    expect(status.firstError).toBe(
      'step mesh: its InProgress status could not be written: the apiserver refused with HTTP 422',
    );
    expect(status.message).toMatch(/every task that ran was reverted: its routes are back as it found them$/);
    // Both steps' executions ran (the write went beside them) and both were reverted, newest first.
    expect(cluster.callsOf(ref).map((c) => `${c.action} ${c.registration}`)).toEqual([
      'Apply mute-gw',
      'Apply mute-mesh',
      'Revert mute-mesh',
      'Revert mute-gw',
    ]);
    expect(cluster.activeUsage(ns, 'mute')).toBe('mute-1');
  },
  TEST_TIMEOUT,
);

test(
  "an executor of an earlier release: a step's executions are recorded final while the next step runs, and every one before the activation ends",
  async () => {
    cluster.addStage(ns, 'rec', { 'rec-1': 1, 'rec-2': 2 }, 'rec-1');
    cluster.addPlan('rec-plan', {
      onFailure: 'Revert',
      steps: [
        { name: 'gateway', tasks: ['rec-gw'] },
        { name: 'mesh', tasks: ['rec-mesh'] },
      ],
    });
    // Executors of an earlier release, which leave the final record to the core.
    cluster.behave('rec-gw', { kind: 'succeed', leavesRecord: true });
    cluster.behave('rec-mesh', { kind: 'succeed', leavesRecord: true });
    // The first step's record waits for the next step's execution: it can only come while the record is pending.
    let nextSeenFirst = false;
    cluster.before.writeExecutionStatus = async (_ns: string, name: string, w: { phase: string }) => {
      if (name !== 'rec-to-2-0-rec-gw' || w.phase !== 'Succeeded') return;
      nextSeenFirst = await pollUntil(
        () => cluster.executions.has(`${ns}/rec-to-2-1-rec-mesh`) || undefined,
        5_000,
        'the next step',
        10,
      ).catch(() => false);
    };
    const ref = activate('rec-to-2', 'rec', 'rec-2', 'rec-plan');

    const result = await (await start(ref)).result();

    expect(result.phase).toBe('Succeeded');
    expect(nextSeenFirst).toBe(true);
    const end = journalIndex('status rec-to-2 Succeeded');
    expect(journalIndex('execution rec-to-2-0-rec-gw Succeeded')).toBeGreaterThan(
      journalIndex('execution rec-to-2-1-rec-mesh created'),
    );
    expect(journalIndex('execution rec-to-2-0-rec-gw Succeeded')).toBeLessThan(end);
    // The last step's record comes before the switch: the active usage moves only after it.
    expect(journalIndex('execution rec-to-2-1-rec-mesh Succeeded')).toBeLessThan(journalIndex('active rec rec-2'));
  },
  TEST_TIMEOUT,
);

test(
  "an executor of an earlier release: a step's record that cannot be written fails the step that ran beside it, and what ran is reverted",
  async () => {
    cluster.addStage(ns, 'unrec', { 'unrec-1': 1, 'unrec-2': 2 }, 'unrec-1');
    cluster.addPlan('unrec-plan', {
      onFailure: 'Revert',
      steps: [
        { name: 'gateway', tasks: ['unrec-gw'] },
        { name: 'mesh', tasks: ['unrec-mesh'] },
      ],
    });
    // Executors of an earlier release, which leave the final record to the core.
    cluster.behave('unrec-gw', { kind: 'succeed', leavesRecord: true });
    cluster.behave('unrec-mesh', { kind: 'succeed', leavesRecord: true });
    cluster.before.writeExecutionStatus = (_ns: string, name: string, w: { phase: string }) => {
      if (name === 'unrec-to-2-0-unrec-gw' && w.phase === 'Succeeded')
        throw ApplicationFailure.nonRetryable('the apiserver refused with HTTP 422', 'Invalid');
    };
    const ref = activate('unrec-to-2', 'unrec', 'unrec-2', 'unrec-plan');

    const result = await (await start(ref)).result();

    expect(result.phase).toBe('Failed');
    const status = cluster.activation(ref).status;
    expect(status.firstError).toBe(
      'the final status of ActivationExecution unrec-to-2-0-unrec-gw could not be written: the apiserver refused with HTTP 422',
    );
    // It still ends final: recorded Error, as when its record was awaited in place.
    expect(cluster.executions.get(`${ns}/unrec-to-2-0-unrec-gw`)?.status).toMatchObject({
      phase: 'Error',
      message: 'the apiserver refused with HTTP 422',
    });
    expect(status.message).toMatch(/every task that ran was reverted: its routes are back as it found them$/);
    expect(cluster.callsOf(ref).map((c) => `${c.action} ${c.registration}`)).toEqual([
      'Apply unrec-gw',
      'Apply unrec-mesh',
      'Revert unrec-mesh',
      'Revert unrec-gw',
    ]);
    expect(cluster.activeUsage(ns, 'unrec')).toBe('unrec-1');
  },
  TEST_TIMEOUT,
);

test(
  'revert with no previous version: every task that ran, the refused one too, puts back what it found, newest first',
  async () => {
    cluster.addStage(ns, 'fresh', { 'fresh-1': 1 });
    cluster.addPlan('fresh-plan', {
      onFailure: 'Revert',
      steps: [
        { name: 'gateway', tasks: ['fresh-gw'] },
        { name: 'mesh', tasks: ['fresh-mesh'] },
      ],
    });
    cluster.behave('fresh-mesh', { kind: 'fail', message: 'VirtualService unit/fresh not found' });
    const ref = activate('fresh-to-1', 'fresh', 'fresh-1', 'fresh-plan');
    await start(ref);

    const status = await phaseIs(ref, 'Failed');
    expect(status.reason).toBe('TaskFailed');
    expect(status.message).toMatch(/every task that ran was reverted: its routes are back as it found them$/);
    // A revert puts back each Apply execution's record: no previous StageVersion is needed for that.
    expect(
      cluster.callsOf(ref).map((c) => `${c.action} ${c.registration} ${c.revertOf ?? JSON.stringify(c.assignment)}`),
    ).toEqual([
      'Apply fresh-gw {"fresh-1":100}',
      'Apply fresh-mesh {"fresh-1":100}',
      'Revert fresh-mesh fresh-to-1-1-fresh-mesh',
      'Revert fresh-gw fresh-to-1-0-fresh-gw',
    ]);
    expect(cluster.activeUsage(ns, 'fresh')).toBeUndefined();
  },
  TEST_TIMEOUT,
);

test(
  'a waiting activation whose lock workflow was terminated asks again after 120 s and is granted by a new lock workflow',
  async () => {
    cluster.addStage(ns, 'relock', { 'relock-1': 1, 'relock-2': 2 }, 'relock-1');
    cluster.addPlan('relock-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['relock-route'] }] });
    await holdStage('relock');
    const ref = activate('relock-to-2', 'relock', 'relock-2', 'relock-plan');
    const handle = await start(ref);
    await phaseIs(ref, 'Waiting');
    await waiting('relock', ref);

    const lock = env.client.workflow.getHandle(stageLockWorkflowId(ns, 'relock'));
    const firstRun = (await lock.describe()).runId;
    await terminateAtRest(lock, 'someone terminated the lock');
    const terminatedAt = await env.currentTimeMs();

    // Awaiting the result lets time skip to the activation's next ask.
    const result = await handle.result();
    expect(result.phase).toBe('Succeeded');
    const newRun = await lock.describe();
    expect(newRun.runId).not.toBe(firstRun);
    const askedAgainAfter = newRun.startTime.getTime() - terminatedAt;
    expect(askedAgainAfter).toBeGreaterThan(100_000);
    expect(askedAgainAfter).toBeLessThanOrEqual(121_000);
    expect(cluster.callsOf(ref).map((c) => c.outcome)).toEqual(['succeeded']);
  },
  TEST_TIMEOUT,
);

test(
  'supersede: of three activations waiting behind a holder, the newest revision runs and the others end Skipped (Superseded)',
  async () => {
    cluster.addStage(ns, 'burst', { 'burst-1': 1, 'burst-2': 2, 'burst-3': 3, 'burst-4': 4 }, 'burst-1');
    cluster.addPlan('burst-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['burst-route'] }] });
    const holder = await holdStage('burst');
    const refs: ActivationRef[] = [];
    const handles = [];
    for (const revision of [2, 3, 4]) {
      const ref = activate(`burst-to-${revision}`, 'burst', `burst-${revision}`, 'burst-plan');
      handles.push(await start(ref));
      refs.push(ref);
      await waiting('burst', ref);
    }
    await holder.signal(finishSignal);

    // One result() at a time: each unlocks the test server's time skipping and locks it again, and
    // the server counts those with its own locks (a workflow task, an activity in flight). Three
    // unlocks at once took the in-flight ones' locks away: time skipped while workflow tasks ran,
    // they timed out, and under load the newest activation sat until its 120 s ask-again.
    const [a, b, c] = [await handles[0]!.result(), await handles[1]!.result(), await handles[2]!.result()];
    expect([a!.phase, b!.phase, c!.phase]).toEqual(['Skipped', 'Skipped', 'Succeeded']);
    expect(cluster.activation(refs[0]!).status).toMatchObject({
      reason: 'Superseded',
      message: 'superseded while waiting by the newer activation unit/burst-to-3 (revision 3)',
    });
    expect(cluster.activation(refs[1]!).status).toMatchObject({
      reason: 'Superseded',
      message: 'superseded while waiting by the newer activation unit/burst-to-4 (revision 4)',
    });
    expect(cluster.callsOf(refs[0]!)).toEqual([]);
    expect(cluster.callsOf(refs[1]!)).toEqual([]);
    expect(cluster.callsOf(refs[2]!).map((x) => x.outcome)).toEqual(['succeeded']);
    expect(cluster.activeUsage(ns, 'burst')).toBe('burst-4');
    expect(cluster.lease(ns, 'burst')?.holders).toEqual(['unit/burst-to-4']);
  },
  TEST_TIMEOUT,
);

test(
  'the close-out finalizer is set before the first route change and taken away with the final status',
  async () => {
    cluster.addStage(ns, 'fin', { 'fin-1': 1, 'fin-2': 2 }, 'fin-1');
    cluster.addPlan('fin-plan', { onFailure: 'Stop', steps: [{ name: 'route', tasks: ['fin-route'] }] });
    const ref = activate('fin-to-2', 'fin', 'fin-2', 'fin-plan');
    expect((await (await start(ref)).result()).phase).toBe('Succeeded');
    const set = journalIndex('finalizer fin-to-2 set');
    expect(set).toBeGreaterThan(-1);
    expect(set).toBeLessThan(journalIndex('execute fin-to-2-0-fin-route start'));
    expect(journalIndex('finalizer fin-to-2 removed')).toBeGreaterThan(
      journalIndex('execute fin-to-2-0-fin-route succeeded'),
    );
    expect(cluster.activation(ref).closeOutFinalizer).toBe(false);
  },
  TEST_TIMEOUT,
);

// --- landscapes: the routes of a Stage in another cluster, changed by that cluster's workers ---

/** A Stage whose routes live in `landscape`, which allows the namespaces `allowed`. */
function stageInLandscape(stage: string, landscape: string, allowed: string[] = [ns]) {
  cluster.addStage(ns, stage, { [`${stage}-1`]: 1, [`${stage}-2`]: 2 }, `${stage}-1`);
  cluster.stages.get(`${ns}/${stage}`)!.landscape = landscape;
  cluster.landscapes.set(landscape, allowed);
}

test(
  "a Stage in a Landscape: its tasks go to that landscape's worker, which changes the routes only once the core wrote the record it observed; the core writes the final status",
  async () => {
    stageInLandscape('far', LANDSCAPE);
    cluster.addPlan('far-plan', { onFailure: 'Stop', steps: [{ name: 'gateway', tasks: ['far-gw'] }] });
    const ref = activate('far-to-2', 'far', 'far-2', 'far-plan');

    const result = await (await start(ref)).result();

    expect(result.phase).toBe('Succeeded');
    const execution = 'far-to-2-0-far-gw';
    const observed = journalIndex(`observe ${execution} in ${LANDSCAPE}`);
    const recorded = journalIndex(`record ${execution} by the core`);
    const changed = journalIndex(`execute ${execution} in ${LANDSCAPE} start`);
    expect(observed).toBeGreaterThanOrEqual(0);
    expect(recorded).toBeGreaterThan(observed);
    expect(changed).toBeGreaterThan(recorded);
    expect(cluster.executions.get(`${ns}/${execution}`)?.status).toMatchObject({
      phase: 'Succeeded',
      message: `far-gw: Apply in ${LANDSCAPE}`,
    });
    // The landscape's worker wrote nothing of the control plane: the final status is the core's.
    expect(journalIndex(`execution ${execution} Succeeded`)).toBeGreaterThan(changed);
    expect(journalIndex(`execution ${execution} Succeeded by its executor`)).toBe(-1);
    expect(cluster.callsOf(ref).map((c) => c.outcome)).toEqual(['succeeded']);
  },
  TEST_TIMEOUT,
);

test(
  'a Landscape that does not allow the namespace, or does not exist: the activation fails before any route, saying what the platform team does',
  async () => {
    stageInLandscape('fenced', LANDSCAPE, ['another-team']);
    cluster.addStage(ns, 'lost', { 'lost-1': 1, 'lost-2': 2 }, 'lost-1');
    cluster.stages.get(`${ns}/lost`)!.landscape = 'nowhere';
    cluster.addPlan('fenced-plan', { onFailure: 'Stop', steps: [{ name: 'gateway', tasks: ['fenced-gw'] }] });
    const fenced = activate('fenced-to-2', 'fenced', 'fenced-2', 'fenced-plan');
    const lost = activate('lost-to-2', 'lost', 'lost-2', 'fenced-plan');

    const fencedResult = await (await start(fenced)).result();
    const lostResult = await (await start(lost)).result();

    expect(fencedResult.phase).toBe('Failed');
    expect(cluster.activation(fenced).status.message).toContain(
      `Landscape ${LANDSCAPE}, which does not allow namespace ${ns}; the platform team adds "${ns}" to its spec.allowedNamespaces`,
    );
    expect(lostResult.phase).toBe('Failed');
    expect(cluster.activation(lost).status.message).toContain('Landscape nowhere, which does not exist');
    expect(cluster.executorCalls).toEqual([]);
    expect(cluster.executions.size).toBe(0);
  },
  TEST_TIMEOUT,
);

test(
  'a Landscape with no worker polling: the task fails after the schedule-to-start bound with a message naming the landscape and the queue, and the Stage is let go',
  async () => {
    stageInLandscape('orphan', 'west');
    cluster.addRegistration('orphan-gw', { timeoutSeconds: 2 });
    cluster.addPlan('orphan-plan', { onFailure: 'Stop', steps: [{ name: 'gateway', tasks: ['orphan-gw'] }] });
    const ref = activate('orphan-to-2', 'orphan', 'orphan-2', 'orphan-plan');

    const result = await (await start(ref)).result();

    expect(result.phase).toBe('Failed');
    const execution = cluster.executions.get(`${ns}/orphan-to-2-0-orphan-gw`);
    expect(execution?.status).toMatchObject({ phase: 'Error', reason: 'NotTakenUp' });
    expect(execution?.status.message).toMatch(
      /^no fake executor worker of Landscape west took the task from task queue konfidence-executor-fake@west-unit-\d+ within 1s/,
    );
    expect(cluster.activation(ref).status.message).toContain('Landscape west');
    expect(cluster.lease(ns, 'orphan')?.holder).toBeUndefined();
  },
  TEST_TIMEOUT,
);

test(
  "a failed step under Revert in a Landscape: the core reads the record of what the landscape's worker changed and hands it over, and the worker puts it back",
  async () => {
    stageInLandscape('back', LANDSCAPE);
    cluster.addPlan('back-plan', {
      onFailure: 'Revert',
      steps: [
        { name: 'gateway', tasks: ['back-gw'] },
        { name: 'mesh', tasks: ['back-mesh'] },
      ],
    });
    cluster.behave('back-mesh', { kind: 'fail', message: 'the mesh refused' });
    const ref = activate('back-to-2', 'back', 'back-2', 'back-plan');

    const result = await (await start(ref)).result();

    expect(result.phase).toBe('Failed');
    const reverts = cluster.callsOf(ref).filter((c) => c.action === 'Revert');
    // Newest first, the refused task too: the core recorded what it found before it was let change anything.
    expect(reverts.map((c) => [c.registration, c.revertOf, c.outcome])).toEqual([
      ['back-mesh', 'back-to-2-1-back-mesh', 'succeeded'],
      ['back-gw', 'back-to-2-0-back-gw', 'succeeded'],
    ]);
    for (const revert of reverts)
      expect(journalIndex(`execute ${revert.execution} in ${LANDSCAPE} start with its record`)).toBeGreaterThan(0);
  },
  TEST_TIMEOUT,
);
