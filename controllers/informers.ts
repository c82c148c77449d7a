/**
 * The namespaced informers of a controller (the Stage controller, the activation controller): one
 * KindCache per kind it reads, and per optional kind of another API group it may read (the
 * routes), per namespace it watches ('' for all namespaces), slimmed as they cache; and, sharded
 * (KONFIDENCE_SHARD, worker/shards.ts), which of the watched namespaces the shard serves now. The
 * leader gate is here too: sharded, every write in a namespace is fenced on the shard serving it
 * (the system namespace is every shard's), so a write decided while it served a namespace never
 * lands once its new owner acts there (k8s/leader-election.ts fenceWrites).
 */
import { k8s } from '../k8s/client.js';
import { pluralOf, type CustomObject } from '../k8s/custom-objects.js';
import { KindCache } from '../k8s/kind-cache.js';
import { LeaderGate, type Leadership } from '../k8s/leader-election.js';
import { forEachLimited } from '../shared/pool.js';
import type { LogFn } from '../telemetry/log.js';
import { kindKey, OptionalKindRetries, type ApiKind, type NamespaceCaches } from './optional-kinds.js';

export type { ApiKind };

/** Sharded: how many namespaces' informers list at once when a shard gains namespaces. */
const LIST_PARALLEL = 16;

export interface NamespacedInformersOptions {
  kubeConfig: k8s.KubeConfig;
  /** The kinds each namespace's caches hold, in the order list() takes them. */
  kinds: readonly string[];
  /**
   * Kinds of other API groups that may not be served (a CRD not installed) or granted: their
   * caches hold no pass and no readiness back, a refused list is tried again only by
   * retryOptional(), and get() finds their objects only while their last list succeeded.
   */
  optionalKinds?: readonly ApiKind[];
  /** Namespaces to watch; default all. Sharded: those at first (then setNamespaces). */
  namespaces?: string[];
  /** Present: writes are fenced on leading (docs/ha.md). */
  leadership?: Leadership;
  sharded?: boolean;
  /** Sharded: the namespace every shard writes in, whatever it serves. */
  systemNamespace?: string;
  onChange: (type: 'ADDED' | 'MODIFIED' | 'DELETED', object: CustomObject) => void;
  onListed?: () => void;
  /** A namespace no longer watched: what the controller derived from its objects goes too. */
  onForget?: (namespace: string) => void;
  slim?: (object: CustomObject) => void;
  log: LogFn;
}

export class NamespacedInformers {
  private readonly optionalKinds: OptionalKindRetries;
  readonly gate: LeaderGate;
  /** By namespace ('' for the all-namespace ones). */
  private readonly caches = new Map<string, NamespaceCaches>();
  /** The namespaces watched; undefined: all. */
  private readonly watching?: Set<string>;
  private readonly serving = new Set<string>();
  private synced = false;
  private stopped = false;

  constructor(private readonly options: NamespacedInformersOptions) {
    this.gate = new LeaderGate(
      options.leadership,
      options.sharded ? (ns) => ns === options.systemNamespace || this.serving.has(ns) : undefined,
    );
    if (options.namespaces || options.sharded) this.watching = new Set(options.namespaces ?? []);
    this.optionalKinds = new OptionalKindRetries(options.optionalKinds ?? [], () => this.caches.values(), options.log);
  }

  async start(): Promise<void> {
    if (this.options.sharded) await this.setNamespaces(new Set(this.options.namespaces ?? []));
    else await Promise.all((this.options.namespaces ?? [undefined]).map((ns) => this.cacheNamespace(ns)));
    this.synced = true;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([...this.caches.values()].map(stopAll));
  }

  /** True once every cache of `kinds` has listed, and while the last list of each succeeded (readiness). */
  isSynced(): boolean {
    return (
      this.synced &&
      !this.stopped &&
      [...this.caches.values()].every((caches) => caches.kinds.every((cache) => cache.listed))
    );
  }

  /**
   * Lists again the optional kinds whose list was refused (optional-kinds.ts): a kind not
   * installed costs one request per call whatever the number of namespaces.
   */
  retryOptional(): Promise<void> {
    return this.optionalKinds.retry();
  }

  /** Sharded: lists and watches exactly these namespaces; a namespace left is forgotten (its caches too). */
  async setNamespaces(namespaces: ReadonlySet<string>): Promise<void> {
    for (const [ns, caches] of [...this.caches]) {
      if (namespaces.has(ns)) continue;
      this.caches.delete(ns);
      this.watching!.delete(ns);
      await stopAll(caches);
      this.options.onForget?.(ns);
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
    const cache = (kind: { plural: string; group?: string; version?: string }, optional?: ApiKind) =>
      new KindCache({
        kubeConfig: this.options.kubeConfig,
        ...kind,
        ...(namespace ? { namespace } : {}),
        onChange: this.options.onChange,
        onListed: () => {
          if (optional) this.optionalKinds.listed(optional);
          this.options.onListed?.();
        },
        ...(this.options.slim ? { slim: this.options.slim } : {}),
        ...(optional
          ? { onRefused: (refusal: string, status: number) => this.optionalKinds.refused(optional, refusal, status) }
          : {}),
        log: this.options.log,
      });
    const caches: NamespaceCaches = {
      kinds: this.options.kinds.map((kind) => cache({ plural: pluralOf(kind) })),
      optional: new Map(
        (this.options.optionalKinds ?? []).map((apiKind) => [
          kindKey(apiKind),
          cache({ group: apiKind.group, version: apiKind.version, plural: apiKind.plural }, apiKind),
        ]),
      ),
    };
    this.caches.set(namespace ?? '', caches);
    await Promise.all([...caches.kinds, ...caches.optional.values()].map((kindCache) => kindCache.start()));
    if (this.caches.get(namespace ?? '') !== caches) await stopAll(caches); // dropped meanwhile
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
    return !this.options.sharded || this.serving.has(namespace);
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
    return this.watching ? [...this.watching] : (this.caches.get('')?.kinds[0]?.namespaces() ?? []);
  }

  /** Whether every cache of `kinds` a pass in the namespace reads has listed once. */
  listed(namespace: string): boolean {
    return this.cachesOf(namespace)?.kinds.every((cache) => cache.synced) ?? false;
  }

  /** The cached objects of the kind at `index` (of `kinds`) in the namespace. */
  list(namespace: string, index: number): CustomObject[] {
    return this.cachesOf(namespace)?.kinds[index]?.list(namespace) ?? [];
  }

  /**
   * An object of an optional kind as its cache holds it, while the cache's last list succeeded;
   * undefined when it cannot tell (a namespace not watched, a kind not listed) or holds none.
   */
  get(kind: Pick<ApiKind, 'group' | 'kind'>, namespace: string, name: string): CustomObject | undefined {
    const cache = this.cachesOf(namespace)?.optional.get(kindKey(kind));
    return cache?.listed ? cache.get(namespace, name) : undefined;
  }

  /** The caches that hold a namespace's objects, if it is watched. */
  private cachesOf(namespace: string): NamespaceCaches | undefined {
    return this.caches.get(namespace) ?? this.caches.get('');
  }

  /** A KubeConfig whose writes the gate fences. */
  kubeConfig(): k8s.KubeConfig {
    return this.gate.kubeConfig(this.options.kubeConfig);
  }
}

const stopAll = (caches: NamespaceCaches) =>
  Promise.all([...caches.kinds, ...caches.optional.values()].map((cache) => cache.stop()));
