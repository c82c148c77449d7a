/**
 * The namespaced informers of a controller (the Stage controller, the activation controller): one
 * KindCache per kind it reads, per namespace it watches ('' for all namespaces), slimmed as they
 * cache; and, sharded (KONFIDENCE_SHARD, worker/shards.ts), which of the watched namespaces the
 * shard serves now. The leader gate is here too: sharded, every write in a namespace is fenced on
 * the shard serving it (the system namespace is every shard's), so a write decided while it served
 * a namespace never lands once its new owner acts there (k8s/leader-election.ts fenceWrites).
 */
import { k8s } from '../k8s/client.js';
import { pluralOf, type CustomObject } from '../k8s/custom-objects.js';
import { KindCache } from '../k8s/kind-cache.js';
import { LeaderGate, type Leadership } from '../k8s/leader-election.js';
import { forEachLimited } from '../shared/pool.js';
import type { LogFn } from '../telemetry/log.js';

/** Sharded: how many namespaces' informers list at once when a shard gains namespaces. */
const LIST_PARALLEL = 16;

export interface NamespacedInformersOptions {
  kubeConfig: k8s.KubeConfig;
  /** The kinds each namespace's caches hold, in the order list() takes them. */
  kinds: readonly string[];
  /** Namespaces to watch; default all. Sharded: those at first (then setNamespaces). */
  namespaces?: string[];
  /** Present: writes are fenced on leading (docs/ha.md). */
  leadership?: Leadership;
  sharded?: boolean;
  /** Sharded: the namespace every shard writes in, whatever it serves. */
  systemNamespace?: string;
  onChange: (type: 'ADDED' | 'MODIFIED' | 'DELETED', o: CustomObject) => void;
  onListed?: () => void;
  /** A namespace no longer watched: what the controller derived from its objects goes too. */
  onForget?: (namespace: string) => void;
  slim?: (o: CustomObject) => void;
  log: LogFn;
}

export class NamespacedInformers {
  readonly gate: LeaderGate;
  /** By namespace ('' for the all-namespace ones), one per kind. */
  private readonly caches = new Map<string, KindCache[]>();
  /** The namespaces watched; undefined: all. */
  private readonly watching?: Set<string>;
  private readonly serving = new Set<string>();
  private synced = false;
  private stopped = false;

  constructor(private readonly o: NamespacedInformersOptions) {
    this.gate = new LeaderGate(o.leadership, o.sharded ? (ns) => ns === o.systemNamespace || this.serving.has(ns) : undefined);
    if (o.namespaces || o.sharded) this.watching = new Set(o.namespaces ?? []);
  }

  async start(): Promise<void> {
    if (this.o.sharded) await this.setNamespaces(new Set(this.o.namespaces ?? []));
    else await Promise.all((this.o.namespaces ?? [undefined]).map((ns) => this.cacheNamespace(ns)));
    this.synced = true;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.caches.values()].flat().map((c) => c.stop()));
  }

  /** True once every cache has listed, and while the last list of each succeeded (readiness). */
  isSynced(): boolean {
    return this.synced && !this.stopped && [...this.caches.values()].flat().every((c) => c.listed);
  }

  /** Sharded: lists and watches exactly these namespaces; a namespace left is forgotten (its caches too). */
  async setNamespaces(namespaces: ReadonlySet<string>): Promise<void> {
    for (const [ns, caches] of [...this.caches]) {
      if (namespaces.has(ns)) continue;
      this.caches.delete(ns);
      this.watching!.delete(ns);
      await Promise.all(caches.map((c) => c.stop()));
      this.o.onForget?.(ns);
    }
    const added = [...namespaces].filter((ns) => !this.caches.has(ns));
    for (const ns of added) this.watching!.add(ns);
    // A few namespaces at a time: one list after the other, 200 namespaces took seconds (bench/shards.ts).
    await forEachLimited(added, LIST_PARALLEL, async (ns) => {
      if (!this.stopped) await this.cacheNamespace(ns);
    });
  }

  /** Lists and watches every kind in one namespace (undefined: all). */
  private async cacheNamespace(namespace: string | undefined): Promise<void> {
    const caches = this.o.kinds.map(
      (kind) =>
        new KindCache({
          kubeConfig: this.o.kubeConfig,
          plural: pluralOf(kind),
          ...(namespace ? { namespace } : {}),
          onChange: this.o.onChange,
          ...(this.o.onListed ? { onListed: this.o.onListed } : {}),
          ...(this.o.slim ? { slim: this.o.slim } : {}),
          log: this.o.log,
        }),
    );
    this.caches.set(namespace ?? '', caches);
    await Promise.all(caches.map((c) => c.start()));
    if (this.caches.get(namespace ?? '') !== caches) await Promise.all(caches.map((c) => c.stop())); // dropped meanwhile
  }

  /** Sharded: the shard serves these namespaces from now on. */
  serve(namespaces: readonly string[]): void {
    for (const ns of namespaces) this.serving.add(ns);
  }

  /** Sharded: the shard no longer serves these namespaces; a write there is refused from now on. */
  unserve(namespaces: readonly string[]): void {
    for (const ns of namespaces) this.serving.delete(ns);
  }

  /** Standalone, or the shard serves the namespace now. */
  serves(namespace: string): boolean {
    return !this.o.sharded || this.serving.has(namespace);
  }

  /** Leading (or standalone), and serving the namespace. */
  acting(namespace: string): boolean {
    return this.gate.acting() && this.serves(namespace);
  }

  /** Whether a namespace's objects are watched. */
  watches(namespace: string): boolean {
    return !this.watching || this.watching.has(namespace);
  }

  /** Every namespace watched, or (watching all) every namespace with a cached object. */
  namespaces(): string[] {
    return this.watching ? [...this.watching] : (this.caches.get('')?.[0]?.namespaces() ?? []);
  }

  /** Whether every cache a pass in the namespace reads has listed once. */
  listed(namespace: string): boolean {
    return (this.caches.get(namespace) ?? this.caches.get(''))?.every((c) => c.synced) ?? false;
  }

  /** The cached objects of the kind at `index` (of `kinds`) in the namespace. */
  list(namespace: string, index: number): CustomObject[] {
    return (this.caches.get(namespace) ?? this.caches.get(''))?.[index]?.list(namespace) ?? [];
  }

  /** A KubeConfig whose writes the gate fences. */
  kubeConfig(): k8s.KubeConfig {
    return this.gate.kubeConfig(this.o.kubeConfig);
  }
}
