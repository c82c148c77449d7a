/**
 * The Stage Leases this worker last wrote, as the apiserver answered (resourceVersion included).
 * A take or renewal of a Lease the worker released or took itself writes on this copy at once:
 * the write is conditional on its resourceVersion, so it goes through only when nothing changed
 * the Lease since, and a conflict reads it as before. A hint, never a source of truth: a copy
 * that is missing or stale costs the read it saves, nothing more.
 */
import type { k8s } from '../k8s/client.js';

/** Enough for every Stage of a large installation; past it the least recently written is dropped. */
const MAX_KNOWN = 5_000;

export class KnownLeases {
  private readonly byKey = new Map<string, k8s.V1Lease>();

  constructor(private readonly max = MAX_KNOWN) {}

  /** The copy of namespace/name, handed out once: a write that fails on it must read. */
  take(namespace: string, name: string): k8s.V1Lease | undefined {
    const key = `${namespace}/${name}`;
    const lease = this.byKey.get(key);
    this.byKey.delete(key);
    return lease;
  }

  /** Keeps what a write returned; an answer without a resourceVersion is no precondition and is not kept. */
  remember(lease: k8s.V1Lease | undefined): void {
    const { namespace, name, resourceVersion } = lease?.metadata ?? {};
    if (!lease || !namespace || !name || !resourceVersion) return;
    const key = `${namespace}/${name}`;
    this.byKey.delete(key);
    this.byKey.set(key, lease);
    if (this.byKey.size > this.max) this.byKey.delete(this.byKey.keys().next().value!);
  }

  get size(): number {
    return this.byKey.size;
  }
}
