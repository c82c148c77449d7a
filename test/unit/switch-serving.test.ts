/**
 * ADR-0012 step 9 (activities/switch-serving.ts): whatever order its parallel requests land in, a
 * StageVersion that served before the switch is held at every moment, by the active usage or its
 * serving mark. No servers: each part is a fake whose write lands after a delay of the test's choice.
 */
import { switchServingActivities, type SwitchServingInput } from '../../activities/switch-serving.js';

interface World {
  active: string;
  marks: Set<string>;
  /** The versions a switch started to drain. */
  draining?: Set<string>;
  /** The Stage is gone (or going): the switch must write nothing. */
  stageGone?: boolean;
  /** Every moment a StageVersion that must stay held was neither active nor marked. */
  unheld: string[];
}

/** Parts whose writes land `delays[part]` ms after the call, checking the hold after each write. */
function parts(world: World, mustHold: string[], delays: Record<string, number>) {
  const land = (part: string, write: () => void) =>
    new Promise<void>((resolve) =>
      setTimeout(() => {
        write();
        for (const sv of mustHold)
          if (world.active !== sv && !world.marks.has(sv)) world.unheld.push(`${sv} after ${part}`);
        resolve();
      }, delays[part] ?? 0),
    );
  return {
    checkStage: async () =>
      world.stageGone ? { reason: 'StageDeleted' as const, message: 'Stage dev/shop was deleted' } : undefined,
    markDraining: (_ns: string, name: string) =>
      land(`markDraining ${name}`, () => world.marks.add(name) && (world.draining ??= new Set()).add(name)),
    markServing: (_ns: string, name: string, stage: string | null) =>
      land(`markServing ${name}`, () => (stage === null ? world.marks.delete(name) : world.marks.add(name))),
    pointActiveUsage: (_ns: string, _stage: string, _uid: string, sv: string) =>
      land('pointActiveUsage', () => (world.active = sv)),
    serveInstead: (_ns: string, name: string, stage: string) =>
      land(`serveInstead ${name}`, () => world.marks.add(name) && void stage),
    releaseActivationUsage: () => land('releaseActivationUsage', () => undefined),
  };
}

const input = (extra: Partial<SwitchServingInput>): SwitchServingInput => ({
  ref: { namespace: 'dev', name: 'to-2', uid: 'u' },
  stage: 'shop',
  stageUid: 's',
  target: 'shop-2',
  holder: 'dev/to-2',
  ...extra,
});

describe('switchServing: a version that serves on is never unheld', () => {
  it.each([
    ['the mark lands after the usage moved', { 'markServing shop-1': 30, pointActiveUsage: 1 }],
    ['the mark lands first', { 'markServing shop-1': 1, pointActiveUsage: 30 }],
    ['all at once', {}],
  ])('a weight leaves shop-1 a share, %s: shop-1 is held throughout and ends marked', async (_n, delays) => {
    const world: World = { active: 'shop-1', marks: new Set(), unheld: [] };
    await switchServingActivities(parts(world, ['shop-1'], delays)).switchServing(input({ stillServing: 'shop-1' }));
    expect(world.unheld).toEqual([]);
    expect(world.active).toBe('shop-2');
    expect([...world.marks].sort()).toEqual(['shop-1', 'shop-2']);
  });

  it('all traffic moves: both are held throughout, and the previous version keeps its mark and starts to drain (the data plane may still send it requests)', async () => {
    const world: World = { active: 'shop-1', marks: new Set(['shop-1']), unheld: [] };
    await switchServingActivities(parts(world, ['shop-1', 'shop-2'], { 'serveInstead shop-2': 30 })).switchServing(
      input({ previous: 'shop-1' }),
    );
    expect(world.unheld).toEqual([]);
    expect(world.active).toBe('shop-2');
    expect([...world.marks].sort()).toEqual(['shop-1', 'shop-2']);
    expect([...(world.draining ?? [])]).toEqual(['shop-1']);
  });

  it('the Stage is gone: nothing is written for it, and the switch says why', async () => {
    const world: World = { active: 'shop-1', marks: new Set(['shop-1']), unheld: [], stageGone: true };
    const switched = await switchServingActivities(parts(world, ['shop-1'], {})).switchServing(
      input({ previous: 'shop-1' }),
    );
    expect(switched).toEqual({ stageLost: 'Stage dev/shop was deleted' });
    expect(world.active).toBe('shop-1');
    expect([...world.marks]).toEqual(['shop-1']);
  });
});
