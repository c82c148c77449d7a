/**
 * Kubernetes Events tell the story without the Temporal UI: `kubectl describe` (the real binary) of
 * a VectorActivation, its Stage and its StageVersions shows what happened, in order; saying the same
 * thing again (an activity retried after a crash, a restarted controller) counts, it adds nothing.
 */
import { createActivationActivities } from '../activities/core.js';
import type { ActivationReport } from '../decisions/activation.js';
import { knownStatus, statusWrite } from '../decisions/status-write.js';
import { StageController } from '../controllers/stage/controller.js';
import { k8s } from '../k8s/client.js';
import { eventRecorder, SeriesCache } from '../k8s/events.js';
import { pollUntil } from '../scripts/env/process.js';
import { kubectl } from './support/cluster.js';
import { eventsWritten } from './support/events.js';
import { activationWorkflowId } from '../shared/activation.js';
import { activate, holdStageWorking, seedActive, seedStage } from './support/scenario.js';
import { markReady } from './support/stages.js';
import { create, object, phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';

let s: TestSystem;
beforeAll(async () => {
  s = await startTestSystem('events', { watcherCheckIntervalMs: 1_000 });
  // Two quick steps by default; `broken-plan` fails its second step and reverts the first.
  for (const name of ['first', 'second'])
    await create(
      s,
      object('ActivationTaskRegistration', s.systemNs, name, {
        type: 'sleepy',
        timeoutSeconds: 60,
        spec: { seconds: 0, records: true },
      }),
    );
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, 'broken', {
      type: 'failing',
      timeoutSeconds: 60,
      spec: { message: 'the mesh refused the route' },
    }),
  );
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, 'default', {
      steps: [
        { name: 'one', tasks: ['first'] },
        { name: 'two', tasks: ['second'] },
      ],
    }),
  );
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, 'broken-plan', {
      onFailure: 'Revert',
      steps: [
        { name: 'one', tasks: ['first'] },
        { name: 'two', tasks: ['broken'] },
      ],
    }),
  );
});
afterAll(async () => {
  await s?.stop();
});

interface Row {
  type: string;
  reason: string;
  age: string;
  message: string;
}

/** The Events table of `kubectl describe KIND NAME`, top to bottom. */
async function describe_(kind: string, name: string): Promise<Row[]> {
  const out = await kubectl('describe', kind, name, '-n', s.ns);
  const lines = out.slice(out.lastIndexOf('\nEvents:')).split('\n').slice(4);
  return lines
    .filter((l) => l.trim())
    .map((l) => {
      const [type = '', reason = '', age = '', , ...message] = l.trim().split(/\s{2,}/);
      return { type, reason, age, message: message.join('  ') };
    });
}
const reasons = (rows: Row[]) => rows.map((r) => r.reason);

/** Waits until describe shows at least these reasons (Events of the last transition may trail the status by a moment). */
async function story(kind: string, name: string, expected: string[]): Promise<Row[]> {
  let rows: Row[] = [];
  try {
    return await pollUntil(
      async () => {
        rows = await describe_(kind, name);
        return rows.length >= expected.length ? rows : undefined;
      },
      15_000,
      `${expected.length} Events on ${kind} ${name}`,
    );
  } catch (err) {
    throw new Error(`${(err as Error).message}; kubectl describe shows ${JSON.stringify(reasons(rows))}`);
  }
}

/** Events of an object that is gone (kubectl describe needs the object): by name, oldest first. */
async function eventsOf(kind: string, name: string): Promise<string[]> {
  const list = await s.kc
    .makeApiClient(k8s.EventsV1Api)
    .listNamespacedEvent({ namespace: s.ns, fieldSelector: `regarding.kind=${kind},regarding.name=${name}` });
  return list.items.sort((a, b) => a.metadata!.name!.localeCompare(b.metadata!.name!)).map((e) => e.reason!);
}

it('a Stage that gets a new vector: the activation, the Stage and its StageVersions each tell their story', async () => {
  // No drain: app-1 goes as soon as app-2 serves (the drain is test/stage-lifecycle's and test/data-plane's).
  await create(
    s,
    object('Stage', s.ns, 'app', { vector: 'example/app:1', stageVersionHistoryLimit: 0, drainSeconds: 0 }),
  );
  await waitFor(s, 'StageVersion', 'app-1', () => true);
  await markReady(s, 'app-1');
  await waitFor(s, 'VectorActivation', 'activate-app-1', phaseIs('Succeeded'));
  await s.objects.mergeSpec('Stage', s.ns, 'app', {
    vector: 'example/app:2',
    stageVersionHistoryLimit: 0,
    drainSeconds: 0,
  });
  await waitFor(s, 'StageVersion', 'app-2', () => true);
  await markReady(s, 'app-2');
  await waitFor(s, 'VectorActivation', 'activate-app-2', phaseIs('Succeeded'));

  // Its Stage was free: the lock granted it in its answer, so it never waited and says no Waiting.
  // The last step's success is told by the activation's own.
  const va = await story('vectoractivation', 'activate-app-2', ['Started', 'StepSucceeded', 'Succeeded']);
  expect(reasons(va)).toEqual(['Started', 'StepSucceeded', 'Succeeded']);
  expect(va.every((r) => r.type === 'Normal')).toBe(true);
  expect(va[0]!.message).toBe('activating StageVersion app-2 on Stage app');
  expect(va[1]!.message).toBe('step 1/2 one succeeded: execution activate-app-2-0-first');
  expect(va[2]!.message).toBe(
    'Activated: Stage app now serves app-2 (was app-1); step 2/2 two succeeded: execution activate-app-2-1-second',
  );

  // The history limit 0 removes app-1 once app-2 serves.
  await pollUntil(async () => !(await s.objects.get('StageVersion', s.ns, 'app-1')), 30_000, 'app-1 cleaned up');
  const stage = await story('stage', 'app', Array(9).fill(''));
  expect(reasons(stage)).toEqual([
    'StageVersionCreated',
    'ActivationCreated',
    'ActivationStarted',
    'ActiveStageVersionChanged',
    'StageVersionCreated',
    'ActivationCreated',
    'ActivationStarted',
    'ActiveStageVersionChanged',
    'StageVersionCleanedUp',
  ]);
  expect(stage[7]!.message).toBe('StageVersion app-2 serves the traffic (was app-1)');
  expect(reasons(await story('stageversion', 'app-2', ['Created', 'Ready', 'Activated']))).toEqual([
    'Created',
    'Ready',
    'Activated',
  ]);
  expect(await eventsOf('StageVersion', 'app-1')).toEqual(['Created', 'Ready', 'Activated', 'Superseded', 'CleanedUp']);

  // A restarted Stage controller decides again and finds everything done: it says nothing new.
  const restarted = new StageController({
    kubeConfig: s.kc,
    namespaces: [s.ns],
    systemNamespace: s.systemNs,
    log: () => undefined,
  });
  await restarted.reconcile(s.ns);
  await restarted.reconcile(s.ns);
  // Its Events would be sent in the background: look once they are written.
  await eventsWritten();
  expect(reasons(await describe_('stage', 'app'))).toEqual(reasons(stage));
});

it('an activation that fails and reverts says which step failed, why, and what it reverted', async () => {
  await seedStage(s, 'rev', [1, 2]);
  await seedActive(s, 'rev', 1);
  await activate(s, 'rev-to-2', 'rev', 2, { executionPlan: 'broken-plan' });
  await waitFor(s, 'VectorActivation', 'rev-to-2', phaseIs('Failed'));

  const expected = ['Started', 'StepSucceeded', 'StepFailed', 'Reverting', 'Reverted', 'Failed'];
  const va = await story('va', 'rev-to-2', expected);
  expect(reasons(va)).toEqual(expected);
  const byReason = Object.fromEntries(va.map((r) => [r.reason, r]));
  expect(byReason.StepFailed).toMatchObject({
    type: 'Warning',
    message: 'step 2/2 two failed: rev-to-2-1-broken: the mesh refused the route',
  });
  expect(byReason.Reverted!.message).toBe(
    'step 1/2 one reverted: traffic back on rev-1 (execution rev-to-2-0-first-revert)',
  );
  expect(byReason.Failed!.type).toBe('Warning');
  expect(byReason.Failed!.message).toMatch(
    /^TaskFailed: step two, task broken: the mesh refused the route; every task that ran was reverted/,
  );
  expect(reasons(await story('stage', 'rev', ['ActivationStarted', 'ActivationFailed']))).toEqual([
    'ActivationStarted',
    'ActivationFailed',
  ]);
});

it('an activation that is skipped says why; a refused cancel says so too', async () => {
  await seedStage(s, 'old', [1, 2]);
  await seedActive(s, 'old', 2);
  await activate(s, 'old-to-1', 'old', 1);
  await waitFor(s, 'VectorActivation', 'old-to-1', phaseIs('Skipped'));
  await kubectl('annotate', 'va', 'old-to-1', '-n', s.ns, 'konfidence.cloud/cancel=now');

  // Its first status write is its end: no start is told.
  const va = await story('va', 'old-to-1', ['Skipped', 'CancelRefused']);
  expect(reasons(va)).toEqual(['Skipped', 'CancelRefused']);
  expect(va[0]!.message).toBe(
    'OlderThanActive: StageVersion old-1 (revision 1) is older than the active old-2 (revision 2)',
  );
  expect(va[1]).toMatchObject({
    type: 'Warning',
    message: 'konfidence.cloud/cancel=now: refused: the activation is Skipped; nothing to cancel',
  });
});

it('a waiting activation names the holder; a cancel is answered; a terminated workflow is closed out with an Event', async () => {
  const holder = await holdStageWorking(s, 'term', 60);
  await activate(s, 'term-to-3', 'term', 3, { executionPlan: 'term-plan' });
  await waitFor(s, 'VectorActivation', 'term-to-3', phaseIs('Waiting'));
  await kubectl('annotate', 'va', 'term-to-3', '-n', s.ns, 'konfidence.cloud/cancel=stop');
  await waitFor(s, 'VectorActivation', 'term-to-3', phaseIs('Cancelled'));

  const waiting = await story('va', 'term-to-3', ['Started', 'Waiting', 'CancelAccepted', 'Cancelled']);
  expect(reasons(waiting).slice(0, 2)).toEqual(['Started', 'Waiting']);
  expect(waiting[1]!.message).toBe(`queued for Stage term (held by ${s.ns}/term-to-2)`);
  // The watcher's answer and the workflow's status write race; both are told.
  expect(reasons(waiting).slice(2).sort()).toEqual(['CancelAccepted', 'Cancelled']);
  expect(waiting.find((r) => r.reason === 'Cancelled')!.message).toBe(
    'Cancelled: cancelled while waiting for Stage term (annotation konfidence.cloud/cancel)',
  );

  await s.client.workflow
    .getHandle(activationWorkflowId({ namespace: s.ns, name: 'term-to-2', uid: holder.metadata.uid! }))
    .terminate('test: an operator terminated it');
  await waitFor(s, 'VectorActivation', 'term-to-2', phaseIs('Failed'), 30_000);
  const closed = await story('va', 'term-to-2', ['Started', 'Failed']);
  expect(reasons(closed)).toEqual(['Started', 'Failed']);
  expect(closed[1]).toMatchObject({
    type: 'Warning',
    message: expect.stringMatching(/^WorkflowTerminated: the activation's workflow .* was terminated/),
  });
  expect(reasons(await story('stage', 'term', ['ActivationStarted', 'ActivationFailed']))).toEqual([
    'ActivationStarted',
    'ActivationFailed',
  ]);
});

/** The test's KubeConfig, counting its GET requests (reads and lists) whose path `counts` picks. */
function countingKubeConfig(counts: (path: string) => boolean) {
  let n = 0;
  const counted = Object.create(s.kc) as typeof s.kc;
  counted.applySecurityAuthentication = async (context) => {
    if (String(context.getHttpMethod()) === 'GET' && counts(new URL(context.getUrl()).pathname)) n++;
    return s.kc.applySecurityAuthentication(context);
  };
  return { counted, count: () => n };
}

/**
 * An activation of an older version, Skipped by its workflow, with what a test writes its status
 * again with: its ref, its status as written and the report it was written from, and the activities,
 * whose reads of VectorActivations are counted (`reads`).
 */
async function skippedActivation(stage: string) {
  await seedStage(s, stage, [1, 2]);
  await seedActive(s, stage, 2);
  await activate(s, `${stage}-to-1`, stage, 1);
  const done = await waitFor(s, 'VectorActivation', `${stage}-to-1`, phaseIs('Skipped'));
  const before = await story('va', `${stage}-to-1`, ['Skipped']);
  const ref = { namespace: s.ns, name: `${stage}-to-1`, uid: done.metadata.uid! };
  const st = done.status;
  const report: ActivationReport = {
    phase: st.phase,
    reason: st.reason,
    message: st.message,
    workflowId: st.workflowId,
    attempt: st.attempt,
    steps: st.steps ?? [],
    ...(st.completionTime ? { completionTime: st.completionTime } : {}),
  };
  const { counted, count: reads } = countingKubeConfig((path) => path.includes('/vectoractivations/'));
  const activities = createActivationActivities({
    kubeConfig: counted,
    systemNamespace: s.systemNs,
    log: () => undefined,
  });
  return { done, before, ref, st, report, activities, reads };
}

it('a transition says its Events once written, without a look-up: the same write again says nothing, a transition made again within the window counts on its Event', async () => {
  const { before, ref, report, activities } = await skippedActivation('rep');

  // The status activity retried after its write went through (a crash before it returned): it
  // finds the transition made, and says nothing.
  await activities.writeActivationStatus(ref, report);
  await eventsWritten(); // the transition's Events would follow the write in the background
  expect(reasons(await describe_('va', 'rep-to-1'))).toEqual(reasons(before));

  // Another writer moved the status away (here to another final phase, which the watcher leaves
  // alone) and the write makes the transition again: said again within the window, by a recorder
  // that remembers the Event it wrote, it counts on that Event, as client-go's recorder does.
  await s.objects.patchStatus('VectorActivation', s.ns, 'rep-to-1', { phase: 'Cancelled', reason: 'Cancelled' });
  await activities.writeActivationStatus(ref, report);
  await eventsWritten();
  expect((await s.objects.get('VectorActivation', s.ns, 'rep-to-1'))?.status.phase).toBe('Skipped');
  const list = await s.kc
    .makeApiClient(k8s.EventsV1Api)
    .listNamespacedEvent({ namespace: s.ns, fieldSelector: `regarding.uid=${ref.uid},reason=Skipped` });
  expect(list.items.map((e) => e.series?.count ?? 1)).toEqual([2]);
  const rows = await describe_('va', 'rep-to-1');
  expect(reasons(rows)).toEqual(['Skipped']);
  expect(rows[0]!.age).toMatch(/\(x2 over /);
});

it("a write over the status the workflow knows: the same again says nothing; a repeat whose answer was lost, a status moved by someone else or another object's uid is read first", async () => {
  const { done, before, ref, st, report, activities, reads } = await skippedActivation('ovr');
  const over = (status: Record<string, unknown>) => {
    const known = knownStatus(done.metadata.generation!, status);
    return {
      known,
      conditions: statusWrite(known, report, new Date()).conditions,
      stage: 'ovr',
      stageVersion: 'ovr-1',
    };
  };

  // Over the status as it is: written in one request (no read), nothing said, the conditions as they were.
  expect(await activities.writeActivationStatus(ref, report, over(st))).toBe(true);
  expect(reads()).toBe(0);
  expect((await s.objects.get('VectorActivation', s.ns, 'ovr-to-1'))?.status.conditions).toEqual(st.conditions);
  // The workflow's write made already, its answer lost (the workflow still knows the status
  // before it): the patch's tests fail, the object is read, and the transition found made.
  expect(
    await activities.writeActivationStatus(ref, report, over({ ...st, phase: 'Pending', reason: 'Validating' })),
  ).toBe(true);
  expect(reads()).toBe(1);
  await eventsWritten();
  expect(reasons(await describe_('va', 'ovr-to-1'))).toEqual(reasons(before));

  // Another writer moved the status away: the write over what the workflow knew is read first,
  // and makes the transition again, with its Event (counted on the one this process said before).
  await s.objects.patchStatus('VectorActivation', s.ns, 'ovr-to-1', { phase: 'Cancelled', reason: 'Cancelled' });
  expect(await activities.writeActivationStatus(ref, report, over(st))).toBe(true);
  await eventsWritten();
  const rows = await describe_('va', 'ovr-to-1');
  expect(reasons(rows)).toEqual(['Skipped']);
  expect(rows[0]!.age).toMatch(/\(x2 over /);
  expect((await s.objects.get('VectorActivation', s.ns, 'ovr-to-1'))?.status.phase).toBe('Skipped');

  // Another object of that name (re-created): nothing is written to it.
  const now = await s.objects.get('VectorActivation', s.ns, 'ovr-to-1');
  expect(
    await activities.writeActivationStatus(
      { ...ref, uid: 'a0000000-0000-4000-8000-000000000000' },
      { ...report, message: 'not mine' },
      over(now!.status),
    ),
  ).toBe(false);
  expect((await s.objects.get('VectorActivation', s.ns, 'ovr-to-1'))?.status.message).toBe(st.message);
});

it('a repeat within the window is one patch of the series, with no look-up; kubectl describe shows the count', async () => {
  const { counted, count: lists } = countingKubeConfig((path) => path.endsWith('/events'));
  const record = eventRecorder(counted, () => undefined, new SeriesCache());
  const cm = await s.kc
    .makeApiClient(k8s.CoreV1Api)
    .createNamespacedConfigMap({ namespace: s.ns, body: { metadata: { name: 'said-thrice' } } });
  const regarding = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    namespace: s.ns,
    name: 'said-thrice',
    uid: cm.metadata!.uid!,
  };
  // The first is looked for (another process may have said it), the repeats are remembered.
  for (let i = 0; i < 3; i++) await record(regarding, 'Warning', 'Repeated', 'the same thing', 'Repeated');
  expect(lists()).toBe(1);
  const rows = await describe_('configmap', 'said-thrice');
  expect(rows.map((r) => [r.reason, r.message])).toEqual([['Repeated', 'the same thing']]);
  expect(rows[0]!.age).toMatch(/\(x3 over /);
  // Something else said about it is an Event of its own.
  await record(regarding, 'Warning', 'Repeated', 'another thing', 'Repeated');
  expect(reasons(await describe_('configmap', 'said-thrice'))).toEqual(['Repeated', 'Repeated']);
});

it("said once (after a write that succeeds once, as a burst's skip), an Event is created without looking for a repeat", async () => {
  const record = eventRecorder(s.kc, () => undefined, new SeriesCache());
  const events = s.kc.makeApiClient(k8s.EventsV1Api);
  const regarding = {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    namespace: s.ns,
    name: 'said-once',
    uid: 'b1f1c6a8-0000-4000-8000-000000000001',
  };
  const counts = async () =>
    (await events.listNamespacedEvent({ namespace: s.ns, fieldSelector: `regarding.uid=${regarding.uid}` })).items.map(
      (e) => e.series?.count ?? 1,
    );
  // By default a repeat is looked for and counted on the one Event.
  await record(regarding, 'Normal', 'Repeated', 'the same thing', 'Repeated');
  await record(regarding, 'Normal', 'Repeated', 'the same thing', 'Repeated');
  expect(await counts()).toEqual([2]);
  // Said once by a recorder that does not remember it (another process), nothing is looked for:
  // the same words again (which `once` promises never happens) would be an Event of their own.
  const another = eventRecorder(s.kc, () => undefined, new SeriesCache());
  await another(regarding, 'Normal', 'Repeated', 'the same thing', 'Repeated', { once: true });
  expect(await counts()).toEqual([2, 1]);
});
