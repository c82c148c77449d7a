/**
 * Names derived from user names are valid for every valid name: a Stage and a
 * VectorActivation with 253-character names, and the no-plan path (every registration runs) with
 * 20 registrations whose names have dots and up to 253 characters. Its own system namespace: with
 * no plan, every registration in it runs.
 */
import { LABEL_VECTOR_ACTIVATION } from '../api/group.js';
import { k8s } from '../k8s/client.js';
import { activeUsageName, labelValue, stageLeaseName } from '../shared/names.js';
import { create, object, phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';

let s: TestSystem;
beforeAll(async () => {
  s = await startTestSystem('names');
});
afterAll(async () => {
  await s?.stop();
});

const longName = (head: string) => `${head}.${'x'.repeat(252 - head.length)}`;

it('activates a 253-character Stage with a 253-character VectorActivation through 20 dotted registrations', async () => {
  const stage = longName('stage');
  const activation = longName('activation');
  expect([stage.length, activation.length]).toEqual([253, 253]);
  for (const r of [1, 2]) {
    await create(
      s,
      object('StageVersion', s.ns, `long-${r}`, { stage, vector: `example/vector:0.0.${r}`, revision: r }),
    );
  }
  await create(s, object('Stage', s.ns, stage, { vector: 'example/vector:0.0.2' }));
  const registrations = Array.from({ length: 20 }, (_, i) =>
    i % 2 ? `reg.${String(i).padStart(2, '0')}.example.com` : longName(`reg-${String(i).padStart(2, '0')}`),
  );
  for (const name of registrations)
    await create(s, object('ActivationTaskRegistration', s.systemNs, name, { type: 'sleepy', spec: { seconds: 0 } }));

  await create(s, object('VectorActivation', s.ns, activation, { stage, stageVersion: 'long-2' }));
  const va = await waitFor(s, 'VectorActivation', activation, phaseIs('Succeeded', 'Failed'), 90_000);
  expect(va.status.phase).toBe('Succeeded');
  expect(va.status.steps).toHaveLength(20);
  expect(va.status.steps.map((step: { tasks: { registration: string }[] }) => step.tasks[0]!.registration)).toEqual(
    [...registrations].sort(),
  );

  const executions = await s.objects.list(
    'ActivationExecution',
    s.ns,
    `${LABEL_VECTOR_ACTIVATION}=${labelValue(activation)}`,
  );
  expect(executions).toHaveLength(20);
  for (const e of executions) {
    expect(e.metadata.name.length).toBeLessThanOrEqual(253);
    expect(Object.values(e.metadata.labels ?? {}).every((v) => v.length <= 63)).toBe(true);
  }
  expect((await s.objects.get('StageVersionUsage', s.ns, activeUsageName(stage)))?.spec.stageVersionRef).toEqual({
    name: 'long-2',
  });
  const lease = await s.kc
    .makeApiClient(k8s.CoordinationV1Api)
    .readNamespacedLease({ name: stageLeaseName(stage), namespace: s.ns });
  expect(lease.spec?.holderIdentity).toBeUndefined();
});
