/**
 * Churn: 200 random vector changes, StageVersion deletions, Ready signals and activations over three
 * Stages. After every single event: the StageVersion named by each Stage's active usage exists and
 * is not being deleted, and every Stage keeps an available StageVersion. Replay with
 * KONFIDENCE_CHURN_SEED.
 */
import { apiStatus } from '../k8s/client.js';
import { pollUntil } from '../scripts/env/process.js';
import { seededRandom } from './support/random.js';
import { markReady, quickDefaultPlan } from './support/stages.js';
import { create, object, phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';

const EVENTS = 200;
const STAGES = ['alpha', 'beta', 'gamma'];
const seed = Number(process.env.KONFIDENCE_CHURN_SEED ?? 7);

let s: TestSystem;
beforeAll(async () => {
  s = await startTestSystem('churn');
  await quickDefaultPlan(s);
});
afterAll(async () => {
  await s?.stop();
});

async function checkInvariants(event: string): Promise<void> {
  const [svs, usages] = await Promise.all([s.objects.list('StageVersion', s.ns), s.objects.list('StageVersionUsage', s.ns)]);
  for (const stage of STAGES) {
    const active = usages.find((u) => u.metadata.name === `${stage}-active`)?.spec.stageVersionRef?.name;
    const sv = svs.find((x) => x.metadata.name === active);
    if (!active || !sv || sv.metadata.deletionTimestamp) {
      throw new Error(`after ${event}: Stage ${stage}'s active usage names ${active ?? 'nothing'}, which ${!sv ? 'does not exist' : 'is being deleted'}`);
    }
    const available = svs.filter((x) => x.spec.stage === stage && !x.metadata.deletionTimestamp);
    if (available.length === 0) throw new Error(`after ${event}: Stage ${stage} has no available StageVersion`);
  }
}

it(`keeps every Stage served through ${EVENTS} random events (seed ${seed})`, async () => {
  for (const stage of STAGES) {
    await create(s, object('Stage', s.ns, stage, { vector: `${stage}:0`, stageVersionHistoryLimit: 2 }));
    await waitFor(s, 'StageVersion', `${stage}-1`, () => true);
    await markReady(s, `${stage}-1`);
  }
  for (const stage of STAGES) await waitFor(s, 'VectorActivation', `activate-${stage}-1`, phaseIs('Succeeded'));
  await checkInvariants('setup');

  const rnd = seededRandom(seed);
  const counts = { vector: 0, ready: 0, deleted: 0, refused: 0, activation: 0 };
  let version = 0;
  for (let i = 0; i < EVENTS; i++) {
    const stage = rnd.pick(STAGES);
    const own = (await s.objects.list('StageVersion', s.ns)).filter((x) => x.spec.stage === stage);
    const sv = own.length ? rnd.pick(own) : undefined;
    const kind = rnd.pick(['vector', 'vector', 'ready', 'ready', 'delete', 'delete', 'activation'] as const);
    let event = `${i}: ${kind} on ${stage}`;
    if (kind === 'vector') {
      await s.objects.mergeSpec('Stage', s.ns, stage, { vector: `${stage}:${++version}` });
      counts.vector++;
    } else if (kind === 'ready' && sv) {
      await markReady(s, sv.metadata.name);
      counts.ready++;
      event += ` (${sv.metadata.name})`;
    } else if (kind === 'delete' && sv) {
      try {
        await s.objects.delete('StageVersion', s.ns, sv.metadata.name);
        counts.deleted++;
      } catch (err) {
        if (apiStatus(err) !== 403 && apiStatus(err) !== 422) throw err;
        counts.refused++; // serving or under activation: the admission policy said no
      }
      event += ` (${sv.metadata.name})`;
    } else if (kind === 'activation' && sv) {
      await create(s, object('VectorActivation', s.ns, `churn-${i}`, { stage, stageVersion: sv.metadata.name }));
      counts.activation++;
      event += ` (${sv.metadata.name})`;
    }
    await checkInvariants(event);
  }

  // Everything settles: no activation is left running, and the invariants still hold.
  await pollUntil(
    async () => (await s.objects.list('VectorActivation', s.ns)).every((va) => ['Succeeded', 'Failed', 'Skipped', 'Cancelled'].includes(va.status?.phase)),
    120_000,
    'every activation to finish',
    250,
  );
  await checkInvariants('the end');
  expect(counts.vector + counts.ready + counts.deleted + counts.refused + counts.activation).toBeGreaterThan(EVENTS * 0.8);
  expect(counts.refused).toBeGreaterThan(0);
  expect(counts.deleted).toBeGreaterThan(0);
});
