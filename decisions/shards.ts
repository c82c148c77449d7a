/**
 * Which shard serves a namespace, and when a shard may start or must stop serving one (the handover
 * when the ShardingConfig or a namespace's labels change). Pure; table-tested in
 * test/unit/shards.test.ts; worker/shards.ts does the I/O. docs/scale.md, "Shards", says why.
 */
import { FALLBACK_SHARD, type LabelSelector, type ShardingConfigSpec } from '../api/sharding-config.js';

const utf8 = new TextEncoder();

/** FNV-1a, 32 bits: stable across processes, versions and platforms (unlike a language's own hash). */
export function fnv1a(text: string): number {
  let hash = 0x811c9dc5;
  for (const byte of utf8.encode(text)) {
    hash ^= byte;
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash >>> 0;
}

/** metav1.LabelSelector semantics: every matchLabels pair and every expression must hold; empty matches all. */
export function matches(labels: Record<string, string>, selector: LabelSelector): boolean {
  for (const [key, value] of Object.entries(selector.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key);
    const inValues = has && (e.values ?? []).includes(labels[e.key]!);
    const ok = { In: inValues, NotIn: !inValues, Exists: has, DoesNotExist: !has }[e.operator];
    if (!ok) return false;
  }
  return true;
}

/**
 * The one shard of a namespace: canary first, then the shards' selectors in order (first match
 * wins), then the hash, else the fallback shard. Undefined only for a namespace outside the
 * installation's namespaceSelector (served by nobody, on purpose). No config: the fallback shard.
 */
export function shardOf(
  namespace: string,
  labels: Record<string, string>,
  spec: ShardingConfigSpec | undefined,
): string | undefined {
  if (!spec) return FALLBACK_SHARD;
  if (spec.namespaceSelector && !matches(labels, spec.namespaceSelector)) return undefined;
  if (spec.canary?.namespaces.includes(namespace)) return spec.canary.shard;
  const selected = spec.shards?.find((s) => matches(labels, s.namespaceSelector));
  if (selected) return selected.name;
  if (spec.hashShards) return `hash-${fnv1a(namespace) % spec.hashShards}`;
  return spec.fallbackShard ?? FALLBACK_SHARD;
}

/** What a shard's leader knows of another shard of the same role. */
export interface Peer {
  shard: string;
  /** Its leader Lease is held and was renewed within a lease duration (by this process's clock). */
  live: boolean;
  /**
   * What its current leader published (status.serving of its ControllerStatus); undefined when
   * nothing is published or it was published by another identity than the Lease's holder.
   */
  serving?: { generation: number; namespaces: readonly string[] };
}

export interface ServingInput {
  /** The ShardingConfig generation this shard applies (0: none). */
  generation: number;
  /** The namespaces shardOf gives this shard now. */
  assigned: ReadonlySet<string>;
  /** The namespaces this shard serves now. */
  serving: ReadonlySet<string>;
  peers: readonly Peer[];
}

export interface ServingDecision {
  /** Stop at once (before anything is published): no longer this shard's. */
  drop: string[];
  /** Publish as served, then start serving: nobody else may serve them. */
  claim: string[];
  /** Assigned, not yet claimable, and why (the shard that still lists it, or a peer on another config). */
  waiting: { namespace: string; reason: string }[];
  /** What status.serving should list after the drops and before the claims start. */
  publish: string[];
}

/**
 * The handover rule. A shard drops what is no longer assigned at once. It claims a newly assigned
 * namespace only when every live peer has published that it applies the same config generation
 * (a peer on an older one might still claim under it; on a newer one, this shard is behind) and
 * no live peer lists the namespace. Peers publish drops only after dropping and claims before
 * serving, so the published lists always cover what is served: two shards never serve a namespace
 * at once. A dead peer (Lease not renewed for a lease duration) counts for nothing.
 */
export function decideServing(input: ServingInput): ServingDecision {
  const drop = [...input.serving].filter((ns) => !input.assigned.has(ns)).sort();
  const live = input.peers.filter((p) => p.live);
  const behind = live.find((p) => p.serving?.generation !== input.generation);
  const claim: string[] = [];
  const waiting: ServingDecision['waiting'] = [];
  for (const ns of [...input.assigned].sort()) {
    if (input.serving.has(ns)) continue;
    if (behind) {
      waiting.push({
        namespace: ns,
        reason: behind.serving
          ? `shard ${behind.shard} applies config generation ${behind.serving.generation}, this one ${input.generation}`
          : `shard ${behind.shard} has not published what it serves`,
      });
      continue;
    }
    const holder = live.find((p) => p.serving!.namespaces.includes(ns));
    if (holder) waiting.push({ namespace: ns, reason: `shard ${holder.shard} still serves it` });
    else claim.push(ns);
  }
  const publish = [...[...input.serving].filter((ns) => input.assigned.has(ns)), ...claim].sort();
  return { drop, claim, waiting, publish };
}
