/**
 * Rollback: setting Stage.spec.vector back to an earlier vector moves the traffic
 * back. v1 (revision 1) → v2 (revision 2) → v1 creates revision 3 of v1, which is newer than the
 * active revision 2, so its activation runs instead of being skipped.
 */
import { pollUntil } from '../scripts/env/process.js';
import { routes, seedPlan, seedRoutes, seedStage } from './support/scenario.js';
import { markReady, rollOut } from './support/stages.js';
import { phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';

let s: TestSystem;
beforeAll(async () => {
  s = await startTestSystem('rollback');
});
afterAll(async () => {
  await s?.stop();
});

const V1 = 'example/vector:0.0.1';
const V2 = 'example/vector:0.0.2';
/** Where the deployment of each vector receives traffic (seedStage's backend of revision r). */
const backendOf = (r: number) => ({ service: `shop-shop-v${r}`, port: 8080, subset: `v${r}` });
const traffic = (r: number) => ({
  api: ['mirror-sink:0', `shop-shop-v${r}:100`],
  static: ['static-files'],
  primary: [`shop/v${r}:100`],
  legacy: ['legacy-shop'],
});
const usageRef = async (name: string) =>
  (await s.objects.get('StageVersionUsage', s.ns, name))?.spec.stageVersionRef?.name;

async function expectServing(stageVersion: string, r: number, latestRevision: number): Promise<void> {
  await waitFor(s, 'VectorActivation', `activate-${stageVersion}`, phaseIs('Succeeded', 'Failed', 'Skipped')).then(
    (va) => expect(va.status.phase).toBe('Succeeded'),
  );
  const stage = await waitFor(
    s,
    'Stage',
    'shop',
    (st) => st.status?.activeStageVersion === stageVersion && st.status?.phase === 'Ready',
  );
  expect(stage.status).toMatchObject({
    targetStageVersion: stageVersion,
    activeStageVersion: stageVersion,
    latestRevision,
  });
  expect(stage.status.conditions).toEqual([
    expect.objectContaining({ type: 'Ready', status: 'True', reason: 'TargetActive' }),
  ]);
  expect(await usageRef('shop-target')).toBe(stageVersion);
  expect(await usageRef('shop-active')).toBe(stageVersion);
  expect(await routes(s, 'shop')).toEqual(traffic(r));
}

it('moves the traffic back when spec.vector returns to an earlier vector (v1 → v2 → v1)', async () => {
  await seedStage(s, 'shop', [1]); // shop-1 of V1 at revision 1; the Stage wants V1
  await seedRoutes(s, 'shop', 1);
  await seedPlan(s, 'shop');
  await markReady(s, 'shop-1');
  await expectServing('shop-1', 1, 1);

  await s.objects.mergeSpec('Stage', s.ns, 'shop', { vector: V2 });
  const v2 = await waitFor(s, 'StageVersion', 'shop-2', () => true);
  expect(v2.spec).toMatchObject({ vector: V2, revision: 2 });
  await rollOut(s, 'shop-2', backendOf(2));
  await expectServing('shop-2', 2, 2);

  // Back to V1: a new StageVersion (revision 3), not the old shop-1, which is older than the active one.
  await s.objects.mergeSpec('Stage', s.ns, 'shop', { vector: V1 });
  const v3 = await waitFor(s, 'StageVersion', 'shop-3', () => true, 20_000);
  expect(v3.spec).toMatchObject({ stage: 'shop', vector: V1, revision: 3 });
  await waitFor(
    s,
    'Stage',
    'shop',
    (st) => st.status?.targetStageVersion === 'shop-3' && st.status?.phase === 'Progressing',
  );
  expect(await usageRef('shop-active')).toBe('shop-2'); // traffic stays until the new revision is Ready
  expect(await routes(s, 'shop')).toEqual(traffic(2));

  await rollOut(s, 'shop-3', backendOf(1));
  await expectServing('shop-3', 1, 3);

  // Nothing newer appears afterwards, and the revision never went back.
  await pollUntil(
    async () => (await s.objects.get('StageVersionUsage', s.ns, 'shop-target'))?.status?.phase === 'Ready',
    15_000,
    'the target usage to be Ready',
  );
  const own = (await s.objects.list('StageVersion', s.ns)).filter((sv) => sv.spec.stage === 'shop');
  expect(Math.max(...own.map((sv) => sv.spec.revision))).toBe(3);
});
