/**
 * Which namespaces' Stages manage a route, by the route's whole reference, as their last passes
 * read it. A route may live in another namespace than its Stage (a shared gateway namespace): its
 * change arrives as an event of the route's namespace, and the Stage's namespace needs the pass.
 */
import type { RouteRef } from '../api/meta.js';
import type { Observed } from '../decisions/stage.js';

/** A route's whole reference as one key. */
export const routeKey = (r: RouteRef) => `${r.group}/${r.kind}/${r.namespace}/${r.name}`;

/** The key of a watched route object (apiVersion's group, kind, namespace, name). */
export const routeKeyOf = (o: { apiVersion?: string; kind?: string; metadata: { namespace?: string; name?: string } }) =>
  routeKey({ group: o.apiVersion?.includes('/') ? o.apiVersion.split('/')[0]! : '', kind: o.kind ?? '', namespace: o.metadata.namespace ?? '', name: o.metadata.name ?? '' });

export class RouteReaders {
  /** By route key, the namespaces whose Stages manage it. */
  private readonly readers = new Map<string, Set<string>>();
  /** By namespace, the route keys its last pass read. */
  private readonly routesOf = new Map<string, Set<string>>();

  /**
   * What a pass of `namespace` read: the routes of its Stages' managed rules (undefined: nothing is
   * managed). A Stage whose routes could not be read now keeps the routes read before.
   */
  note(namespace: string, traffic: Observed['traffic']): void {
    const now = new Set<string>();
    for (const t of traffic?.values() ?? []) for (const rule of t?.rules ?? []) now.add(routeKey(rule.route));
    if ([...(traffic?.values() ?? [])].some((t) => t === undefined)) for (const key of this.routesOf.get(namespace) ?? []) now.add(key);
    for (const key of this.routesOf.get(namespace) ?? []) if (!now.has(key)) this.drop(key, namespace);
    for (const key of now) {
      const set = this.readers.get(key) ?? new Set<string>();
      set.add(namespace);
      this.readers.set(key, set);
    }
    if (now.size) this.routesOf.set(namespace, now);
    else this.routesOf.delete(namespace);
  }

  /** The namespaces whose Stages manage the route of that key. */
  of(key: string): readonly string[] {
    return [...(this.readers.get(key) ?? [])];
  }

  /** A namespace no longer served: its Stages read nothing. */
  forget(namespace: string): void {
    this.note(namespace, undefined);
  }

  private drop(key: string, namespace: string): void {
    const set = this.readers.get(key);
    set?.delete(namespace);
    if (set?.size === 0) this.readers.delete(key);
  }
}
