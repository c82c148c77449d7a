/**
 * Which namespaces' Stages manage a route, by the route's whole reference, as their passes read it.
 * A route may live in another namespace than its Stage (a shared gateway namespace): its change
 * arrives as an event of the route's namespace, and the Stage's namespace needs the pass.
 */

export class RouteReaders {
  /** By route key, the namespaces whose Stages manage it. */
  private readonly readers = new Map<string, Set<string>>();
  /** By namespace, the route keys its last pass read. */
  private readonly routesOf = new Map<string, Set<string>>();

  /** A pass of `namespace` reads the route: from now on its change wakes the namespace (before the read ends, so no change is missed). */
  add(namespace: string, key: string): void {
    const set = this.readers.get(key) ?? new Set<string>();
    set.add(namespace);
    this.readers.set(key, set);
    const own = this.routesOf.get(namespace) ?? new Set<string>();
    own.add(key);
    this.routesOf.set(namespace, own);
  }

  /**
   * A pass of `namespace` ended having read (or tried to read) the routes of `read`, whether they
   * send its Stages traffic or not: an edit may make them. The routes it no longer reads stop waking it.
   */
  note(namespace: string, read: Iterable<string>): void {
    const now = new Set(read);
    for (const key of this.routesOf.get(namespace) ?? []) if (!now.has(key)) this.drop(key, namespace);
    for (const key of now) this.add(namespace, key);
    if (now.size === 0) this.routesOf.delete(namespace);
  }

  /** The namespaces whose Stages manage the route of that key. */
  of(key: string): readonly string[] {
    return [...(this.readers.get(key) ?? [])];
  }

  /** A namespace no longer served: its Stages read nothing. */
  forget(namespace: string): void {
    this.note(namespace, []);
  }

  private drop(key: string, namespace: string): void {
    const set = this.readers.get(key);
    set?.delete(namespace);
    if (set?.size === 0) this.readers.delete(key);
    this.routesOf.get(namespace)?.delete(key);
  }
}
