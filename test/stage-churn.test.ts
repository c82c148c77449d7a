/**
 * Churn: 200 random vector changes, StageVersion deletions, Ready signals and activations over three
 * Stages. After every single event: the StageVersion named by each Stage's active usage exists and
 * is not being deleted, and every Stage keeps an available StageVersion. Replay with
 * KONFIDENCE_CHURN_SEED.
 */
import { apiStatus, k8s } from '../k8s/client.js';
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

/** A broken invariant's context: what a person needs to tell which writer broke it (the run is random). */
async function stateOf(stage: string, svs: CustomObjectList, usages: CustomObjectList): Promise<string> {
  const vas = (await s.objects.list('VectorActivation', s.ns)).filter((va) => va.spec.stage === stage);
  const events = await s.kc.makeApiClient(k8s.EventsV1Api).listNamespacedEvent({ namespace: s.ns });
  const lines = [
    ...svs
      .filter((sv) => sv.spec.stage === stage)
      .map(
        (sv) =>
          `StageVersion ${sv.metadata.name} r${sv.spec.revision} annotations ${JSON.stringify(sv.metadata.annotations ?? {})}${sv.metadata.deletionTimestamp ? ' deleting' : ''}`,
      ),
    ...usages
      .filter((u) => u.metadata.name.startsWith(`${stage}-`))
      .map(
        (u) =>
          `StageVersionUsage ${u.metadata.name} -> ${u.spec.stageVersionRef?.name ?? JSON.stringify(u.spec.stageVersionSelector)}`,
      ),
    ...vas.map(
      (va) =>
        `VectorActivation ${va.metadata.name} -> ${va.spec.stageVersion}: ${va.status?.phase} ${va.status?.reason ?? ''} ${va.status?.message ?? ''}`,
    ),
    ...events.items
      .filter(
        (e) =>
          e.regarding?.name === stage ||
          e.regarding?.name?.startsWith(`${stage}-`) ||
          vas.some((va) => va.metadata.name === e.regarding?.name),
      )
      .sort((a, b) =>
        String(a.eventTime ?? a.deprecatedFirstTimestamp).localeCompare(
          String(b.eventTime ?? b.deprecatedFirstTimestamp),
        ),
      )
      .map((e) => `Event ${e.regarding?.kind}/${e.regarding?.name} ${e.reason}: ${e.note}`),
  ];
  return lines.join('\n');
}
type CustomObjectList = Awaited<ReturnType<TestSystem['objects']['list']>>;

async function checkInvariants(event: string): Promise<void> {
  const [svs, usages] = await Promise.all([
    s.objects.list('StageVersion', s.ns),
    s.objects.list('StageVersionUsage', s.ns),
  ]);
  for (const stage of STAGES) {
    const active = usages.find((u) => u.metadata.name === `${stage}-active`)?.spec.stageVersionRef?.name;
    const sv = svs.find((x) => x.metadata.name === active);
    let broken: string | undefined;
    if (!active || !sv || sv.metadata.deletionTimestamp)
      broken = `Stage ${stage}'s active usage names ${active ?? 'nothing'}, which ${!sv ? 'does not exist' : 'is being deleted'}`;
    else if (!svs.some((x) => x.spec.stage === stage && !x.metadata.deletionTimestamp))
      broken = `Stage ${stage} has no available StageVersion`;
    if (broken)
      throw new Error(
        `after ${event}: ${broken} (seed ${seed})\n${await stateOf(stage, svs, usages).catch((err: unknown) => `(the state could not be read: ${String(err)})`)}`,
      );
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
    async () =>
      (await s.objects.list('VectorActivation', s.ns)).every((va) =>
        ['Succeeded', 'Failed', 'Skipped', 'Cancelled'].includes(va.status?.phase),
      ),
    120_000,
    'every activation to finish',
    250,
  );
  await checkInvariants('the end');
  expect(counts.vector + counts.ready + counts.deleted + counts.refused + counts.activation).toBeGreaterThan(
    EVENTS * 0.8,
  );
  expect(counts.refused).toBeGreaterThan(0);
  expect(counts.deleted).toBeGreaterThan(0);
});
