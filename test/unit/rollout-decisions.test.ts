/** The rules of a core worker rollout (decisions/rollout.ts, api/core-rollout.ts), a row per rule. No servers. */
import { coreRolloutConfigMapData, parseCoreRollout } from '../../api/core-rollout.js';
import {
  coreDeploymentName,
  parseGroups,
  parsePercents,
  pinnedVersion,
  rolloutSteps,
  stopReason,
} from '../../decisions/rollout.js';

const rollout = { deploymentName: 'konfidence-core', canary: { buildId: 'v2', namespaces: ['team-a', 'team-b'] } };

describe('pinnedVersion: which build a new activation starts on', () => {
  it.each([
    [
      'a canary namespace starts on the canary build',
      rollout,
      'team-a',
      { deploymentName: 'konfidence-core', buildId: 'v2' },
    ],
    ['another namespace follows the server (current or ramping)', rollout, 'team-c', undefined],
    ['no canary: the server decides for all', { deploymentName: 'konfidence-core' }, 'team-a', undefined],
    ['no rollout config at all: today behaviour', undefined, 'team-a', undefined],
  ])('%s', (_n, r, ns, expected) => expect(pinnedVersion(r, ns)).toEqual(expected));

  it('names the deployment after the core task queue, suffix included', () => {
    expect(coreDeploymentName()).toBe('konfidence-core');
    expect(coreDeploymentName('-t1')).toBe('konfidence-core-t1');
  });
});

describe('the ConfigMap', () => {
  it.each([
    [
      'canary keys',
      { deploymentName: 'd', canaryBuildId: 'v2', canaryNamespaces: 'a, b' },
      { deploymentName: 'd', canary: { buildId: 'v2', namespaces: ['a', 'b'] } },
    ],
    [
      'no namespaces: no canary',
      { deploymentName: 'd', canaryBuildId: 'v2', canaryNamespaces: '' },
      { deploymentName: 'd' },
    ],
    ['no build: no canary', { deploymentName: 'd', canaryNamespaces: 'a' }, { deploymentName: 'd' }],
  ])('%s', (_n, data, expected) => expect(parseCoreRollout(data)).toEqual(expected));

  it('round-trips', () => expect(parseCoreRollout(coreRolloutConfigMapData(rollout))).toEqual(rollout));

  it.each([
    ['no deployment', {}, 'deploymentName'],
    ['a build id with a space', { deploymentName: 'd', canaryBuildId: 'v 2' }, 'canaryBuildId'],
  ])('refuses %s, naming the ConfigMap and the key', (_n, data, key) => {
    expect(() => parseCoreRollout(data)).toThrow(new RegExp(`konfidence-core-rollout is invalid: ${key}`));
  });
});

describe('rollout run: steps and parsing', () => {
  it('canaries group by group (cumulative), then ramps, then promotes', () => {
    expect(rolloutSteps([['a', 'b'], ['c']], [10, 50])).toEqual([
      { kind: 'canary', namespaces: ['a', 'b'], group: 1 },
      { kind: 'canary', namespaces: ['a', 'b', 'c'], group: 2 },
      { kind: 'ramp', percent: 10 },
      { kind: 'ramp', percent: 50 },
      { kind: 'promote' },
    ]);
  });

  it.each([
    ['a,b;c', [['a', 'b'], ['c']]],
    [' a ; b ', [['a'], ['b']]],
    ['a;;b', { error: expect.stringContaining('every group needs a namespace') }],
    ['a;a', { error: expect.stringContaining('namespace a is in more than one group') }],
  ])('groups %j', (text, expected) => expect(parseGroups(text)).toEqual(expected));

  it.each([
    ['10,50', [10, 50]],
    ['', []],
    ['50,10', { error: expect.stringContaining('must rise') }],
    ['0', { error: expect.stringContaining('between 0 and 100') }],
    ['100', { error: expect.stringContaining('between 0 and 100') }],
    ['x', { error: expect.stringContaining('between 0 and 100') }],
  ])('ramp %j', (text, expected) => expect(parsePercents(text)).toEqual(expected));
});

describe('stopReason: when rollout run stops', () => {
  it.each([
    ['nothing wrong: go on', { breakers: [], canaryActivations: [{ name: 'a/x', phase: 'Succeeded' }] }, undefined],
    ['a Closed breaker: go on', { breakers: [{ name: 'core', phase: 'Closed' }], canaryActivations: [] }, undefined],
    [
      'an Open breaker stops',
      { breakers: [{ name: 'core', phase: 'Open' }], canaryActivations: [] },
      'CircuitBreaker core is Open',
    ],
    [
      'a failed activation on the new build stops',
      { breakers: [], canaryActivations: [{ name: 'a/x', phase: 'Failed' }] },
      '1 activation(s) on the new build failed: a/x',
    ],
    [
      'a breaker is named before failures',
      { breakers: [{ name: 'b', phase: 'Open' }], canaryActivations: [{ name: 'a/x', phase: 'Failed' }] },
      'CircuitBreaker b is Open',
    ],
  ])('%s', (_n, o, expected) => expect(stopReason(o)).toBe(expected));
});
