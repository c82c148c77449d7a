/**
 * The Stage's active usage and the target's serving mark as a switch sets them (activities/usages.ts
 * pointActiveUsage, activities/stage-versions.ts serveInstead), on the real apiserver: found where
 * the switch read it under the Lease, the usage moves in one tested patch; found elsewhere, it moves
 * from there onto a newer StageVersion, never onto an older one, and a late repeat of an earlier
 * switch, after a later activation moved it, leaves the usage as it is and its target unmarked.
 */
import { coreDeps } from '../activities/deps.js';
import { stageVersionActivities } from '../activities/stage-versions.js';
import { usageActivities } from '../activities/usages.js';
import { ANNOTATION_ACTIVATED_BY, ANNOTATION_SERVING } from '../api/group.js';
import { seedActive, seedStage } from './support/scenario.js';
import { startTestSystem, type TestSystem } from './support/system.js';

let s: TestSystem;
let stageUid: string;
const revisions = { 'late-1': 1, 'late-2': 2, 'late-3': 3 };
beforeAll(async () => {
  // Objects only: the switch's activity is called directly, nothing else writes the usage.
  s = await startTestSystem('active-usage', { core: false, watcher: false, stageController: false, executors: [] });
  await seedStage(s, 'late', [1, 2, 3]);
  stageUid = (await s.objects.get('Stage', s.ns, 'late'))!.metadata.uid!;
  await seedActive(s, 'late', 1);
});
afterAll(async () => {
  await s?.stop();
});

const point = (target: string, active: string, known: Record<string, number> = revisions) =>
  usageActivities(coreDeps(s.kc, s.systemNs, () => undefined)).pointActiveUsage(s.ns, 'late', stageUid, target, {
    active,
    uids: {},
    revisions: known,
  });
const activeNow = async () =>
  (await s.objects.get('StageVersionUsage', s.ns, 'late-active'))?.spec.stageVersionRef?.name;

it('moves from what the switch read; found elsewhere, moves on only onto a newer StageVersion', async () => {
  await point('late-3', 'late-1');
  expect(await activeNow()).toBe('late-3');
  // A late repeat of a switch to late-2 that read late-1: late-3 is active now and stays.
  await point('late-2', 'late-1');
  expect(await activeNow()).toBe('late-3');
  // Without the revisions at hand (a StageVersion created after the read), they are read.
  await point('late-2', 'late-1', {});
  expect(await activeNow()).toBe('late-3');
  // Found on an older StageVersion than read (moved back by hand): the switch moves it to its target.
  await s.objects.mergeSpec('StageVersionUsage', s.ns, 'late-active', { stageVersionRef: { name: 'late-1' } });
  await point('late-3', 'late-2');
  expect(await activeNow()).toBe('late-3');
});

it('a late repeat of a switch leaves its target unmarked once a newer StageVersion serves; a repeat of the last switch keeps it serving', async () => {
  const serveInstead = (name: string, holder: string) =>
    stageVersionActivities(coreDeps(s.kc, s.systemNs, () => undefined)).serveInstead(s.ns, name, 'late', holder);
  const marks = async (name: string) => (await s.objects.get('StageVersion', s.ns, name))?.metadata.annotations ?? {};
  await s.objects.mergeSpec('StageVersionUsage', s.ns, 'late-active', { stageVersionRef: { name: 'late-3' } });
  // The switch to late-2 traded its in-activation mark long ago; late-3 serves now.
  await serveInstead('late-2', `${s.ns}/late-to-2`);
  expect(await marks('late-2')).not.toHaveProperty([ANNOTATION_SERVING]);
  // The switch to late-3 itself, its mark still there, then once more after it traded it.
  await s.objects.mergeMetadata('StageVersion', s.ns, 'late-3', {
    annotations: { [ANNOTATION_ACTIVATED_BY]: `${s.ns}/late-to-3` },
  });
  await serveInstead('late-3', `${s.ns}/late-to-3`);
  await serveInstead('late-3', `${s.ns}/late-to-3`);
  expect(await marks('late-3')).toMatchObject({ [ANNOTATION_SERVING]: 'late' });
  expect(await marks('late-3')).not.toHaveProperty([ANNOTATION_ACTIVATED_BY]);
});
