/** Whether a pass publishes status.activeController, and the next wait (decisions/publish.ts). No servers. */
import type { ActiveController } from '../../api/controller-status.js';
import { activeController as activeControllerSchema, controllerStatusName } from '../../api/controller-status.js';
import {
  PLACEHOLDER_ENDPOINT,
  decidePublish,
  nextWaitMs,
  refusal,
  type PublishDecision,
  type PublishInput,
} from '../../decisions/publish.js';

const NOW = new Date('2026-03-01T12:00:30.000Z');
const SINCE = new Date('2026-03-01T12:00:00.000Z');
const ENDPOINT = 'http://127.0.0.5:8081';

const input = (o: Partial<PublishInput> = {}): PublishInput => ({
  leading: true,
  identity: 'pod-a',
  endpoint: ENDPOINT,
  version: '0.1.0',
  leaderSince: SINCE,
  now: NOW,
  ...o,
});

const published = (o: Partial<ActiveController> = {}, phase = 'Active') => ({
  phase,
  activeController: {
    identity: 'pod-a',
    endpoint: ENDPOINT,
    version: '0.1.0',
    leaderSince: SINCE.toISOString(),
    lastUpdated: '2026-03-01T12:00:01.000Z',
    ...o,
  },
});

const wanted: ActiveController = {
  identity: 'pod-a',
  endpoint: ENDPOINT,
  version: '0.1.0',
  leaderSince: SINCE.toISOString(),
  lastUpdated: NOW.toISOString(),
};

describe('decidePublish', () => {
  it.each<[string, Partial<PublishInput>, PublishDecision]>([
    [
      'a replica that does not lead writes nothing',
      { leading: false, published: undefined },
      { write: false, reason: 'not-leader' },
    ],
    [
      '… even when another replica is published',
      { leading: false, published: published({ identity: 'pod-b' }) },
      { write: false, reason: 'not-leader' },
    ],
    [
      '… even when its own endpoint is refused',
      { leading: false, endpoint: '' },
      { write: false, reason: 'not-leader' },
    ],
    ['an empty endpoint is refused', { endpoint: '' }, { write: false, reason: 'empty-endpoint' }],
    ['a blank endpoint is refused', { endpoint: '   ' }, { write: false, reason: 'empty-endpoint' }],
    [
      'the shipped placeholder is refused',
      { endpoint: PLACEHOLDER_ENDPOINT },
      { write: false, reason: 'placeholder-endpoint' },
    ],
    [
      'the placeholder with a trailing slash is refused',
      { endpoint: `${PLACEHOLDER_ENDPOINT}/` },
      { write: false, reason: 'placeholder-endpoint' },
    ],
    [
      'a refused endpoint leaves a published value alone',
      { endpoint: '', published: published({ identity: 'pod-b' }) },
      { write: false, reason: 'empty-endpoint' },
    ],
    [
      'nothing published yet: the first publish',
      { published: undefined },
      { write: true, reason: 'first-publish', activeController: wanted },
    ],
    [
      'a status without activeController: the first publish',
      { published: { phase: 'Active' } },
      { write: true, reason: 'first-publish', activeController: wanted },
    ],
    [
      'converged: writes nothing although lastUpdated is older',
      { published: published() },
      { write: false, reason: 'converged' },
    ],
    [
      'converged whatever precision leaderSince was stored with',
      { published: published({ leaderSince: '2026-03-01T12:00:00Z' }) },
      { write: false, reason: 'converged' },
    ],
    [
      'another identity is overwritten',
      { published: published({ identity: 'pod-b', leaderSince: '2026-03-01T11:00:00Z' }) },
      { write: true, reason: 'changed', activeController: wanted },
    ],
    [
      'a changed endpoint is written',
      { published: published({ endpoint: 'http://127.0.0.9:8081' }) },
      { write: true, reason: 'changed', activeController: wanted },
    ],
    [
      'a changed version is written',
      { published: published({ version: '0.0.9' }) },
      { write: true, reason: 'changed', activeController: wanted },
    ],
    [
      'a new leaderSince (leadership re-acquired) is written',
      { published: published({ leaderSince: '2026-03-01T11:59:00Z' }) },
      { write: true, reason: 'changed', activeController: wanted },
    ],
    [
      'a missing phase is written',
      { published: { activeController: published().activeController } },
      { write: true, reason: 'changed', activeController: wanted },
    ],
    [
      'the endpoint is written trimmed',
      { endpoint: ` ${ENDPOINT} `, published: undefined },
      { write: true, reason: 'first-publish', activeController: wanted },
    ],
  ])('%s', (_title, o, expected) => expect(decidePublish(input(o))).toEqual(expected));

  it('keeps its own published leaderSince when the elector does not know it (so it converges)', () => {
    expect(decidePublish(input({ leaderSince: undefined, published: published() }))).toEqual({
      write: false,
      reason: 'converged',
    });
  });

  it('uses now when the elector does not know since when and another identity is published', () => {
    const d = decidePublish(input({ leaderSince: undefined, published: published({ identity: 'pod-b' }) }));
    expect(d).toEqual({
      write: true,
      reason: 'changed',
      activeController: { ...wanted, leaderSince: NOW.toISOString() },
    });
  });

  it('writes values the schema (and so the CRD) accepts', () => {
    const d = decidePublish(input());
    expect(d.write).toBe(true);
    if (d.write) expect(activeControllerSchema.parse(d.activeController)).toEqual(d.activeController);
  });

  it('refusal() answers before anything is read', () => {
    expect(refusal({ leading: true, endpoint: ENDPOINT })).toBeUndefined();
    expect(refusal({ leading: false, endpoint: ENDPOINT })).toBe('not-leader');
    expect(refusal({ leading: true, endpoint: PLACEHOLDER_ENDPOINT })).toBe('placeholder-endpoint');
  });
});

describe('nextWaitMs: chosen from what the pass did', () => {
  const timing = { publishIntervalMs: 30_000, leadershipCheckMs: 2_000 };
  it.each<[string, PublishDecision | 'error', number]>([
    [
      'not leading: the leadership check, so a new leader publishes within ~2 s',
      { write: false, reason: 'not-leader' },
      2_000,
    ],
    ['published: the publish interval', { write: true, reason: 'first-publish', activeController: wanted }, 30_000],
    [
      'overwrote another identity: the publish interval',
      { write: true, reason: 'changed', activeController: wanted },
      30_000,
    ],
    ['converged: the publish interval', { write: false, reason: 'converged' }, 30_000],
    ['refused endpoint while leading: the publish interval', { write: false, reason: 'empty-endpoint' }, 30_000],
    [
      'refused placeholder while leading: the publish interval',
      { write: false, reason: 'placeholder-endpoint' },
      30_000,
    ],
    ['a failed pass: the leadership check, to try again soon', 'error', 2_000],
  ])('%s', (_title, outcome, ms) => expect(nextWaitMs(outcome, timing)).toBe(ms));

  it('never waits longer than the publish interval', () => {
    expect(
      nextWaitMs({ write: false, reason: 'not-leader' }, { publishIntervalMs: 1_000, leadershipCheckMs: 2_000 }),
    ).toBe(1_000);
  });
});

describe('controllerStatusName', () => {
  it.each([
    ['watcher', undefined, 'watcher'],
    ['watcher', 'default', 'watcher'],
    ['stage-controller', 'eu-1', 'stage-controller-eu-1'],
  ] as const)('%s / %s → %s', (role, shard, name) => expect(controllerStatusName(role, shard)).toBe(name));
});
