/**
 * The Stage's active usage as a switch moves it (activities/usages.ts pointActiveUsage), on the
 * real apiserver: found where the switch read it under the Lease, it moves in one tested patch;
 * found elsewhere, it moves from there onto a newer StageVersion, never onto an older one (a late
 * repeat of an earlier switch, after a later activation moved it, leaves it as it is).
 */
import { coreDeps } from '../activities/deps.js';
import { usageActivities } from '../activities/usages.js';
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
  usageActivities(coreDeps(s.kc, s.systemNs, () => undefined)).pointActiveUsage(s.ns, 'late', stageUid, target, { active, uids: {}, revisions: known });
const activeNow = async () => (await s.objects.get('StageVersionUsage', s.ns, 'late-active'))?.spec.stageVersionRef?.name;

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
