/**
 * The statuses a controller wrote that its caches may not hold yet. Another write's watch event
 * often brings the next pass before the event of a status write it made a moment earlier: that
 * pass would find the old status in its cache and write the same status again. So each status
 * write is noted with the resourceVersion of the object it was written over; while the cache
 * still holds the object at that resourceVersion, the pass sees it with the status it was given.
 * Any other resourceVersion (the write's own, or a later one) is the cache caught up, and the
 * note goes.
 */
interface Written {
  /** The resourceVersion of the object the status was written over. */
  over: string;
  /** The merge patch written: top-level status fields, null for a removed one. */
  patch: Record<string, unknown>;
}

interface Cached {
  metadata: { name?: string; namespace?: string; resourceVersion?: string };
  status?: Record<string, unknown>;
}

const keyOf = (kind: string, cached: Cached) => `${kind}/${cached.metadata.namespace}/${cached.metadata.name}`;

export class WrittenStatuses {
  private readonly written = new Map<string, Written>();

  /** Notes a status written (after the write went through) over `o` as it was observed. */
  note(kind: string, cached: Cached, patch: Record<string, unknown>): void {
    const over = cached.metadata.resourceVersion;
    if (!over) return;
    const key = keyOf(kind, cached);
    // A second write over the same cached object: the view it was decided on held the first.
    const before = this.written.get(key);
    this.written.set(key, { over, patch: before?.over === over ? { ...before.patch, ...patch } : patch });
  }

  /** `o` as the controller last wrote it, while the cache holds it as it was before that write. */
  view<T extends Cached>(kind: string, item: T): T {
    const key = keyOf(kind, item);
    const entry = this.written.get(key);
    if (!entry) return item;
    if (entry.over !== item.metadata.resourceVersion) {
      this.written.delete(key);
      return item;
    }
    const status: Record<string, unknown> = { ...item.status };
    for (const [field, value] of Object.entries(entry.patch)) {
      if (value === null) delete status[field];
      else status[field] = value;
    }
    return { ...item, status };
  }

  /** Forgets every note of a namespace (no longer served). */
  forget(namespace: string): void {
    for (const key of this.written.keys()) if (key.split('/')[1] === namespace) this.written.delete(key);
  }

  /** Forgets the notes of a namespace's objects of `kind` that are not among `seen` (deleted since). */
  prune(kind: string, namespace: string, seen: readonly Cached[]): void {
    const live = new Set(seen.map((cached) => keyOf(kind, cached)));
    for (const key of this.written.keys())
      if (key.startsWith(`${kind}/${namespace}/`) && !live.has(key)) this.written.delete(key);
  }
}
