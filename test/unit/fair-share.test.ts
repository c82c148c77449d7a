/** fairShare (decisions/fair-share.ts): which activations of a namespace may run under the Stage limit. */
import { fairShare, type UnfinishedActivation } from '../../decisions/fair-share.js';

/** `name` on `stage`, created at second `at`; `started` when its workflow runs. */
const va = (name: string, stage: string, at: number, started = false): UnfinishedActivation => ({
  uid: `uid-${name}`,
  name,
  stage,
  created: `2026-11-30T10:00:${String(at).padStart(2, '0')}Z`,
  started,
});
const names = (uids: Set<string>) => [...uids].map((u) => u.replace('uid-', '')).sort();

describe('fairShare', () => {
  it.each<[string, UnfinishedActivation[], number | undefined, string[]]>([
    ['no limit: everything runs', [va('a', 's1', 1), va('b', 's2', 2), va('c', 's3', 3)], undefined, ['a', 'b', 'c']],
    ['limit 0 means no limit', [va('a', 's1', 1), va('b', 's2', 2)], 0, ['a', 'b']],
    ['the oldest Stages first', [va('c', 's3', 3), va('a', 's1', 1), va('b', 's2', 2)], 2, ['a', 'b']],
    [
      'a running Stage keeps its place though newer',
      [va('a', 's1', 1), va('b', 's2', 2), va('c', 's3', 3, true)],
      2,
      ['a', 'c'],
    ],
    [
      'running Stages beyond a lowered limit go on; nothing new starts',
      [va('a', 's1', 1, true), va('b', 's2', 2, true), va('c', 's3', 3)],
      1,
      ['a', 'b'],
    ],
    [
      'every activation of an admitted Stage runs, so the newest can supersede',
      [va('a1', 's1', 1), va('a2', 's1', 2), va('a3', 's1', 3), va('b', 's2', 4)],
      1,
      ['a1', 'a2', 'a3'],
    ],
    [
      'a new activation on a running Stage joins it at once',
      [va('a1', 's1', 1, true), va('b', 's2', 2), va('a2', 's1', 3)],
      1,
      ['a1', 'a2'],
    ],
    [
      'a Stage ranks by its oldest activation',
      [va('b1', 's2', 5), va('a1', 's1', 3), va('b0', 's2', 1)],
      1,
      ['b0', 'b1'],
    ],
    ['the same second: the name decides', [va('y', 's2', 1), va('x', 's1', 1)], 1, ['x']],
  ])('%s', (_n, activations, limit, admitted) => {
    expect(names(fairShare(activations, limit))).toEqual(admitted);
  });

  it('the decision does not depend on the order the watcher saw the objects in', () => {
    const as = [va('a', 's1', 1), va('b', 's2', 2), va('c', 's3', 3), va('d', 's1', 4)];
    expect(names(fairShare([...as].reverse(), 2))).toEqual(names(fairShare(as, 2)));
  });
});
