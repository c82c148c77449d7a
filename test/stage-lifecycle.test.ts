/** ADR-0013 on the real apiserver: the Stage controller, target and active usages, protection. */
import {
  ANNOTATION_SERVING,
  FINALIZER_IN_USE,
  LABEL_STAGE_NAME,
  LABEL_VECTOR,
  vectorLabelValue,
} from '../api/index.js';
import { apiMessage, apiStatus, k8s } from '../k8s/client.js';
import { pollUntil } from '../scripts/env/process.js';
import { joinName, labelValue } from '../shared/names.js';
import { markReady, quickDefaultPlan } from './support/stages.js';
import { create, object, phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';

let s: TestSystem;
beforeAll(async () => {
  s = await startTestSystem('stages');
  await quickDefaultPlan(s);
});
afterAll(async () => {
  await s?.stop();
});

const usageOf = (name: string) => s.objects.get('StageVersionUsage', s.ns, name);
const refusal = (p: Promise<unknown>) =>
  p.then(
    () => 'accepted',
    (err) => apiMessage(err),
  );

it('turns a vector change into a StageVersion, moves the target usage and ends with the active usage on it; the old version drains, then is let go', async () => {
  await create(s, object('Stage', s.ns, 'app', { vector: 'example/app:1.0.0', drainSeconds: 5 }));
  const v1 = await waitFor(s, 'StageVersion', 'app-1', () => true);
  expect(v1.metadata.labels).toEqual({
    [LABEL_STAGE_NAME]: 'app',
    [LABEL_VECTOR]: vectorLabelValue('example/app:1.0.0'),
  });
  expect(v1.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Stage', name: 'app', controller: true });
  expect(v1.metadata.finalizers).toContain(FINALIZER_IN_USE);
  expect(v1.spec).toMatchObject({ stage: 'app', vector: 'example/app:1.0.0', revision: 1 });
  await waitFor(
    s,
    'StageVersionUsage',
    'app-target',
    (u) => u.spec.stageVersionRef?.name === 'app-1' && u.status?.phase === 'NotReady',
  );

  // Not Ready yet: no activation. The deployment reports Ready: the controller creates one.
  expect(await s.objects.list('VectorActivation', s.ns)).toEqual([]);
  await markReady(s, 'app-1');
  const va1 = await waitFor(s, 'VectorActivation', 'activate-app-1', phaseIs('Succeeded'));
  expect(va1.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Stage', name: 'app' });
  await waitFor(s, 'Stage', 'app', (st) => st.status?.phase === 'Ready' && st.status?.activeStageVersion === 'app-1');

  await s.objects.mergeSpec('Stage', s.ns, 'app', { vector: 'example/app:1.1.0', drainSeconds: 5 });
  await waitFor(s, 'StageVersionUsage', 'app-target', (u) => u.spec.stageVersionRef?.name === 'app-2');
  await markReady(s, 'app-2');
  await waitFor(s, 'VectorActivation', 'activate-app-2', phaseIs('Succeeded'));
  const stage = await waitFor(
    s,
    'Stage',
    'app',
    (st) => st.status?.activeStageVersion === 'app-2' && st.status?.phase === 'Ready',
  );
  expect(stage.status).toMatchObject({ targetStageVersion: 'app-2', latestRevision: 2 });
  const active = await usageOf('app-active');
  expect(active?.spec.stageVersionRef).toEqual({ name: 'app-2' });
  expect(active?.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Stage', name: 'app' });
  const target = await waitFor(s, 'StageVersionUsage', 'app-target', (u) => u.status?.phase === 'Ready');
  expect(target.metadata.ownerReferences?.[0]).toMatchObject({ kind: 'Stage', name: 'app' });
  expect(target.status.conditions).toEqual([
    expect.objectContaining({
      type: 'StageVersionReady',
      status: 'True',
      observedGeneration: target.metadata.generation,
    }),
  ]);
  // The new version is marked serving with the active usage; the old one keeps its mark while it
  // drains (a gateway may still send it requests), then the Stage controller lets it go.
  expect((await s.objects.get('StageVersion', s.ns, 'app-2'))?.metadata.annotations?.[ANNOTATION_SERVING]).toBe('app');
  expect((await s.objects.get('StageVersion', s.ns, 'app-1'))?.metadata.annotations?.[ANNOTATION_SERVING]).toBe('app');
  await waitFor(s, 'Stage', 'app', (st) => st.status?.draining?.[0]?.stageVersion === 'app-1', 10_000);
  await waitFor(
    s,
    'StageVersion',
    'app-1',
    (sv) => sv.metadata.annotations?.[ANNOTATION_SERVING] === undefined,
    20_000,
  );
  // The mark goes first, the Stage's status in the same pass right after it.
  await waitFor(s, 'Stage', 'app', (st) => st.status?.draining === undefined, 10_000);
});

it('a Stage with a 253-character name gets valid names and label values, and its activation runs', async () => {
  const name = `${'l'.repeat(120)}.${'n'.repeat(132)}`;
  const sv = joinName(name, 1);
  await create(s, object('Stage', s.ns, name, { vector: 'example/long:1' }));
  const v1 = await waitFor(s, 'StageVersion', sv, (x) => (x.metadata.finalizers ?? []).includes(FINALIZER_IN_USE));
  expect(v1.metadata.labels?.[LABEL_STAGE_NAME]).toBe(labelValue(name));
  const target = await waitFor(s, 'StageVersionUsage', joinName(name, 'target'), (u) => u.status?.phase === 'NotReady');
  expect(target.metadata.labels?.[LABEL_STAGE_NAME]).toBe(labelValue(name));
  // Selecting by the label finds exactly this Stage's StageVersion.
  expect(
    (await s.objects.list('StageVersion', s.ns, `${LABEL_STAGE_NAME}=${labelValue(name)}`)).map((x) => x.metadata.name),
  ).toEqual([sv]);
  await markReady(s, sv);
  await waitFor(s, 'VectorActivation', joinName('activate', sv), phaseIs('Succeeded'));
  await waitFor(s, 'Stage', name, (st) => st.status?.phase === 'Ready' && st.status?.activeStageVersion === sv);
});

it('keeps a deleted StageVersion Terminating while a usage references it (by selector), then lets it go', async () => {
  await create(s, object('Stage', s.ns, 'keep', { vector: 'example/keep:1', stageVersionHistoryLimit: 5 }));
  await waitFor(s, 'StageVersion', 'keep-1', (sv) => (sv.metadata.finalizers ?? []).includes(FINALIZER_IN_USE));
  await s.objects.mergeSpec('Stage', s.ns, 'keep', { vector: 'example/keep:2' });
  await waitFor(s, 'StageVersionUsage', 'keep-target', (u) => u.spec.stageVersionRef?.name === 'keep-2');
  await create(
    s,
    object('StageVersionUsage', s.ns, 'migration', {
      reason: 'executing vector migrations',
      stageVersionSelector: {
        matchLabels: { [LABEL_STAGE_NAME]: 'keep', [LABEL_VECTOR]: vectorLabelValue('example/keep:1') },
      },
    }),
  );
  await waitFor(s, 'StageVersionUsage', 'migration', (u) => u.status?.stageVersions?.[0] === 'keep-1');

  await s.objects.delete('StageVersion', s.ns, 'keep-1');
  const terminating = await waitFor(s, 'StageVersion', 'keep-1', (sv) => Boolean(sv.status?.message));
  expect(terminating.metadata.deletionTimestamp).toBeDefined();
  expect(terminating.status.message).toBe('deletion waits: in use by StageVersionUsage migration');
  // An activation of it fails before any route is touched, saying why (the mark's answer shows the deletion).
  await create(s, object('VectorActivation', s.ns, 'keep-to-1', { stage: 'keep', stageVersion: 'keep-1' }));
  const refused = await waitFor(s, 'VectorActivation', 'keep-to-1', phaseIs('Failed', 'Succeeded'));
  expect(refused.status).toMatchObject({
    phase: 'Failed',
    reason: 'StageVersionTerminating',
    message: 'StageVersion keep-1 is being deleted',
  });
  expect(refused.status.steps.map((x: { phase: string }) => x.phase)).not.toContain('InProgress');

  await s.objects.delete('StageVersionUsage', s.ns, 'migration');
  await pollUntil(
    async () => (await s.objects.get('StageVersion', s.ns, 'keep-1')) === undefined,
    15_000,
    'keep-1 to be gone',
  );
});

it('refuses spec changes and deletion of a StageVersion under activation, and deletion of the serving one, saying why', async () => {
  await s.objects.mergeSpec('ActivationTaskRegistration', s.systemNs, 'quick', { spec: { seconds: 4 } });
  try {
    await create(s, object('Stage', s.ns, 'guard', { vector: 'example/guard:1' }));
    await waitFor(s, 'StageVersion', 'guard-1', (sv) => (sv.metadata.finalizers ?? []).includes(FINALIZER_IN_USE));
    await markReady(s, 'guard-1');
    const va = await waitFor(s, 'VectorActivation', 'activate-guard-1', phaseIs('InProgress'));
    const sv = (await s.objects.get('StageVersion', s.ns, 'guard-1'))!;
    const holder = `${s.ns}/${va.metadata.name}`;
    expect(
      await refusal(
        s.objects.mergeSpec('StageVersion', s.ns, 'guard-1', {
          ...sv.spec,
          artifacts: [{ name: 'app', image: 'evil:1' }],
        }),
      ),
    ).toContain(
      `StageVersion guard-1 is in use by the activation ${holder}: its spec cannot change until that activation ends`,
    );
    expect(await refusal(s.objects.delete('StageVersion', s.ns, 'guard-1'))).toContain(
      `is in use by the activation ${holder}: it cannot be deleted`,
    );
    await waitFor(s, 'VectorActivation', 'activate-guard-1', phaseIs('Succeeded'));
    // After the activation: the spec may change again, but the serving StageVersion cannot go.
    expect(
      await refusal(
        s.objects.mergeSpec('StageVersion', s.ns, 'guard-1', {
          ...sv.spec,
          artifacts: [{ name: 'app', image: 'app:1.0.1' }],
        }),
      ),
    ).toBe('accepted');
    expect(await refusal(s.objects.delete('StageVersion', s.ns, 'guard-1'))).toContain(
      'StageVersion guard-1 serves the traffic of Stage guard: activate another StageVersion before deleting it',
    );
  } finally {
    await s.objects.mergeSpec('ActivationTaskRegistration', s.systemNs, 'quick', { spec: { seconds: 0 } });
  }
});

it('cleans up unused StageVersions beyond the history limit, never the target or the active one', async () => {
  await create(s, object('Stage', s.ns, 'trim', { vector: 'example/trim:1', stageVersionHistoryLimit: 1 }));
  for (let v = 1; v <= 4; v++) {
    if (v > 1) await s.objects.mergeSpec('Stage', s.ns, 'trim', { vector: `example/trim:${v}` });
    await waitFor(s, 'StageVersion', `trim-${v}`, () => true);
    if (v === 1) {
      await markReady(s, 'trim-1');
      await waitFor(s, 'VectorActivation', 'activate-trim-1', phaseIs('Succeeded'));
    }
  }
  // trim-1 serves (active), trim-4 is the target, trim-3 is the one unused version kept; trim-2 goes.
  await waitFor(s, 'StageVersionUsage', 'trim-target', (u) => u.spec.stageVersionRef?.name === 'trim-4');
  const names = async () =>
    (await s.objects.list('StageVersion', s.ns))
      .filter((x) => x.spec.stage === 'trim')
      .map((x) => x.metadata.name)
      .sort();
  await pollUntil(async () => (await names()).join() === 'trim-1,trim-3,trim-4', 15_000, 'trim-2 to be cleaned up');
});

it('takes everything of a Stage with it when the Stage is deleted (garbage collection by kube-controller-manager)', async () => {
  await create(s, object('Stage', s.ns, 'gone', { vector: 'example/gone:1' }));
  await waitFor(s, 'StageVersion', 'gone-1', (sv) => (sv.metadata.finalizers ?? []).includes(FINALIZER_IN_USE));
  await markReady(s, 'gone-1');
  await waitFor(s, 'VectorActivation', 'activate-gone-1', phaseIs('Succeeded'));
  await s.objects.mergeSpec('Stage', s.ns, 'gone', { vector: 'example/gone:2' });
  await waitFor(s, 'StageVersionUsage', 'gone-target', (u) => u.spec.stageVersionRef?.name === 'gone-2');

  await s.objects.delete('Stage', s.ns, 'gone');
  const leftovers = async () => {
    const [svs, usages, vas, aes] = await Promise.all(
      ['StageVersion', 'StageVersionUsage', 'VectorActivation', 'ActivationExecution'].map((k) =>
        s.objects.list(k, s.ns),
      ),
    );
    return [
      ...svs!.filter((x) => x.spec.stage === 'gone'),
      ...usages!.filter((x) => x.metadata.name.startsWith('gone-') || x.metadata.name.startsWith('activate-gone')),
      ...vas!.filter((x) => x.spec.stage === 'gone'),
      ...aes!.filter((x) => x.spec.stage === 'gone'),
    ].map((x) => `${x.kind}/${x.metadata.name}`);
  };
  await pollUntil(async () => (await leftovers()).length === 0, 60_000, "the Stage's objects to be collected").catch(
    async (err: Error) => {
      throw new Error(`${err.message}; left: ${(await leftovers()).join(', ')}`);
    },
  );
});

// Last in this file: it deletes the test's namespace.
it('lets the namespace of a serving Stage be deleted: the StageVersion guard steps aside and the namespace goes', async () => {
  await create(s, object('Stage', s.ns, 'ns-gone', { vector: 'example/ns-gone:1' }));
  await waitFor(s, 'StageVersion', 'ns-gone-1', (sv) => (sv.metadata.finalizers ?? []).includes(FINALIZER_IN_USE));
  await markReady(s, 'ns-gone-1');
  await waitFor(s, 'VectorActivation', 'activate-ns-gone-1', phaseIs('Succeeded'));
  await waitFor(s, 'StageVersion', 'ns-gone-1', (sv) => sv.metadata.annotations?.[ANNOTATION_SERVING] === 'ns-gone');
  // Outside a namespace deletion the serving StageVersion stays protected (the test above).
  const core = s.kc.makeApiClient(k8s.CoreV1Api);
  await core.deleteNamespace({ name: s.ns });
  const phase = async () =>
    core.readNamespace({ name: s.ns }).then(
      (n) => n.status?.phase ?? 'Active',
      (err) => (apiStatus(err) === 404 ? 'gone' : Promise.reject(err)),
    );
  await pollUntil(async () => (await phase()) === 'gone', 60_000, `namespace ${s.ns} to be deleted`).catch(
    async (err: Error) => {
      const ns = await core.readNamespace({ name: s.ns }).catch(() => undefined);
      throw new Error(
        `${err.message}; conditions: ${JSON.stringify(ns?.status?.conditions?.filter((c) => c.status === 'True'))}`,
      );
    },
  );
});
