/** The activation controller's work in flight, per namespace: a shard's drop and a stop wait for it. */

/** Writes in flight per namespace: a drop, and a stop, wait for them. */
export class InFlightWork {
  private readonly pending = new Map<string, Set<Promise<unknown>>>();

  run<T>(namespace: string, work: () => Promise<T>): Promise<T> {
    const set = this.pending.get(namespace) ?? new Set();
    this.pending.set(namespace, set);
    const running = work();
    set.add(running);
    void running.finally(() => set.delete(running)).catch(() => undefined);
    return running;
  }

  async settled(namespaces?: readonly string[]): Promise<void> {
    const sets = namespaces ? namespaces.map((ns) => this.pending.get(ns) ?? new Set()) : [...this.pending.values()];
    await Promise.allSettled(sets.flatMap((set) => [...set]));
  }
}
