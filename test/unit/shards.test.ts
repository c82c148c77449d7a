/** Which shard serves a namespace, and the handover rule between shards (decisions/shards.ts). No servers. */
import { shardingConfigSpec, type ShardingConfigSpec } from '../../api/sharding-config.js';
import { decideServing, fnv1a, matches, shardOf, type Peer, type ServingInput } from '../../decisions/shards.js';

const spec = (o: Partial<ShardingConfigSpec>): ShardingConfigSpec => shardingConfigSpec.parse(o);

describe('fnv1a', () => {
  it.each([
    ['', 0x811c9dc5],
    ['a', 0xe40c292c],
    ['foobar', 0xbf9cf968],
  ])('%j hashes to the published FNV-1a test vector', (text, hash) => expect(fnv1a(text)).toBe(hash));
});

describe('matches (metav1.LabelSelector)', () => {
  const labels = { team: 'shop', tier: 'gold' };
  it.each([
    [{}, true],
    [{ matchLabels: { team: 'shop' } }, true],
    [{ matchLabels: { team: 'shop', tier: 'silver' } }, false],
    [{ matchExpressions: [{ key: 'tier', operator: 'In' as const, values: ['gold', 'silver'] }] }, true],
    [{ matchExpressions: [{ key: 'tier', operator: 'NotIn' as const, values: ['gold'] }] }, false],
    [{ matchExpressions: [{ key: 'region', operator: 'NotIn' as const, values: ['eu'] }] }, true],
    [{ matchExpressions: [{ key: 'team', operator: 'Exists' as const }] }, true],
    [{ matchExpressions: [{ key: 'team', operator: 'DoesNotExist' as const }] }, false],
    [{ matchLabels: { team: 'shop' }, matchExpressions: [{ key: 'region', operator: 'Exists' as const }] }, false],
  ])('%j → %s', (selector, expected) => expect(matches(labels, selector)).toBe(expected));
});

describe('shardOf', () => {
  const config = spec({
    namespaceSelector: { matchExpressions: [{ key: 'konfidence.cloud/ignore', operator: 'DoesNotExist' }] },
    canary: { shard: 'canary', namespaces: ['shop-canary'] },
    shards: [
      { name: 'gold', namespaceSelector: { matchLabels: { tier: 'gold' } } },
      { name: 'shop', namespaceSelector: { matchLabels: { team: 'shop' } } },
    ],
    hashShards: 3,
  });
  it.each([
    ['no config: every namespace in the fallback shard', 'any', {}, undefined, 'default'],
    ['outside the installation', 'x', { 'konfidence.cloud/ignore': 'yes', tier: 'gold' }, config, undefined],
    ['canary before any selector', 'shop-canary', { tier: 'gold' }, config, 'canary'],
    ['first matching selector wins', 'a', { tier: 'gold', team: 'shop' }, config, 'gold'],
    ['second selector', 'b', { team: 'shop' }, config, 'shop'],
    ['no selector: the hash', 'foobar', {}, config, `hash-${0xbf9cf968 % 3}`],
    ['no selector, no hash: the fallback shard', 'c', {}, spec({ shards: [] }), 'default'],
    ['a named fallback shard', 'c', {}, spec({ fallbackShard: 'rest' }), 'rest'],
  ] as const)('%s', (_why, ns, labels, c, expected) => expect(shardOf(ns, labels, c)).toBe(expected));

  it('puts every namespace in exactly one shard, spread over the hash shards', () => {
    const names = Array.from({ length: 300 }, (_, i) => `team-${i}`);
    const counts = new Map<string, number>();
    for (const n of names)
      counts.set(
        shardOf(n, {}, spec({ hashShards: 3 }))!,
        (counts.get(shardOf(n, {}, spec({ hashShards: 3 }))!) ?? 0) + 1,
      );
    expect([...counts.keys()].sort()).toEqual(['hash-0', 'hash-1', 'hash-2']);
    for (const c of counts.values()) expect(c).toBeGreaterThan(60);
  });
});

describe('decideServing (the handover)', () => {
  const peer = (shard: string, namespaces: string[] | undefined, o: Partial<Peer> = {}): Peer => ({
    shard,
    live: true,
    ...(namespaces ? { serving: { generation: 2, namespaces } } : {}),
    ...o,
  });
  const input = (o: Partial<ServingInput>): ServingInput => ({
    generation: 2,
    assigned: new Set(),
    serving: new Set(),
    peers: [],
    ...o,
  });
  it.each<[string, Partial<ServingInput>, { drop: string[]; claim: string[]; publish: string[]; waiting: string[] }]>([
    [
      'first start, alone: claims everything assigned',
      { assigned: new Set(['a', 'b']) },
      { drop: [], claim: ['a', 'b'], publish: ['a', 'b'], waiting: [] },
    ],
    [
      'keeps what it serves',
      { assigned: new Set(['a']), serving: new Set(['a']), peers: [peer('p', ['b'])] },
      { drop: [], claim: [], publish: ['a'], waiting: [] },
    ],
    [
      'drops what is no longer assigned, at once, whatever peers say',
      { assigned: new Set(['a']), serving: new Set(['a', 'b']), peers: [peer('p', undefined)] },
      { drop: ['b'], claim: [], publish: ['a'], waiting: [] },
    ],
    [
      'waits while the old owner still lists it',
      { assigned: new Set(['a', 'b']), serving: new Set(['a']), peers: [peer('p', ['b'])] },
      { drop: [], claim: [], publish: ['a'], waiting: ['b'] },
    ],
    [
      'claims once the old owner published it without',
      { assigned: new Set(['a', 'b']), serving: new Set(['a']), peers: [peer('p', [])] },
      { drop: [], claim: ['b'], publish: ['a', 'b'], waiting: [] },
    ],
    [
      'claims from a dead owner (Lease expired) even though it lists it',
      { assigned: new Set(['b']), peers: [peer('p', ['b'], { live: false })] },
      { drop: [], claim: ['b'], publish: ['b'], waiting: [] },
    ],
    [
      'waits for a peer on an older config generation',
      { assigned: new Set(['b']), peers: [peer('p', [], { serving: { generation: 1, namespaces: [] } })] },
      { drop: [], claim: [], publish: [], waiting: ['b'] },
    ],
    [
      'waits when itself is behind a peer',
      { assigned: new Set(['b']), peers: [peer('p', [], { serving: { generation: 3, namespaces: [] } })] },
      { drop: [], claim: [], publish: [], waiting: ['b'] },
    ],
    [
      'waits for a live peer that published nothing yet (or under an older leader)',
      { assigned: new Set(['b']), peers: [peer('p', undefined)] },
      { drop: [], claim: [], publish: [], waiting: ['b'] },
    ],
    [
      'a dead peer that published nothing does not block',
      { assigned: new Set(['b']), peers: [peer('p', undefined, { live: false })] },
      { drop: [], claim: ['b'], publish: ['b'], waiting: [] },
    ],
  ])('%s', (_why, o, expected) => {
    const d = decideServing(input(o));
    expect({ drop: d.drop, claim: d.claim, publish: d.publish, waiting: d.waiting.map((w) => w.namespace) }).toEqual(
      expected,
    );
  });

  it('never lets two shards serve a namespace through a reshard (generation by generation)', () => {
    // N 2 → 3: each shard applies the new generation at its own time; the published lists are what peers see.
    const names = Array.from({ length: 60 }, (_, i) => `ns-${i}`);
    const shards = ['hash-0', 'hash-1', 'hash-2'];
    const state = new Map(
      shards.map((s) => [s, { generation: 1, serving: new Set<string>(), published: [] as string[] }]),
    );
    const assign = (s: string, gen: number) =>
      new Set(names.filter((n) => shardOf(n, {}, spec({ hashShards: gen === 1 ? 2 : 3 })) === s));
    const step = (s: string, gen: number) => {
      const me = state.get(s)!;
      me.generation = gen;
      const d = decideServing({
        generation: gen,
        assigned: assign(s, gen),
        serving: me.serving,
        peers: shards
          .filter((p) => p !== s)
          .map((p) => ({
            shard: p,
            live: true,
            serving: { generation: state.get(p)!.generation, namespaces: state.get(p)!.published },
          })),
      });
      for (const n of d.drop) me.serving.delete(n);
      me.published = d.publish;
      for (const n of d.claim) me.serving.add(n);
      const served = shards.flatMap((p) => [...state.get(p)!.serving]);
      expect(served.length).toBe(new Set(served).size);
    };
    for (const s of shards) step(s, 1);
    for (const s of shards) step(s, 1);
    expect(shards.reduce((n, s) => n + state.get(s)!.serving.size, 0)).toBe(names.length);
    // The new config reaches hash-2 first, then hash-0, then hash-1; each steps a few times.
    for (const order of [['hash-2'], ['hash-2', 'hash-0'], ['hash-2', 'hash-0', 'hash-1'], shards, shards])
      for (const s of order) step(s, 2);
    expect(shards.reduce((n, s) => n + state.get(s)!.serving.size, 0)).toBe(names.length);
  });
});
