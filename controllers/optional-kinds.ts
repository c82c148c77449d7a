/**
 * The optional kinds of a controller's informers (the routes of another API group, informers.ts):
 * a kind whose list is refused (its CRD not installed, its list forbidden) is said once per kind and
 * refusal, whatever the number of namespaces, and listed again at each resync: per kind one cache
 * first, whose answer tells whether the kind is served now, then (if so) the others, so that a kind
 * not installed costs one request per retry.
 */
import { forEachLimited } from '../shared/pool.js';
import type { LogFn } from '../telemetry/log.js';
import type { KindCache } from '../k8s/kind-cache.js';

/** A kind of another API group, by the names its requests use. */
export interface ApiKind {
  group: string;
  version: string;
  plural: string;
  kind: string;
}

/** A kind's whole name: two groups may each have a kind of the same name (an HTTPRoute of another API). */
export const kindKey = (apiKind: Pick<ApiKind, 'group' | 'kind'>) => `${apiKind.kind}.${apiKind.group}`;

/** The caches of one namespace ('' for all namespaces). */
export interface NamespaceCaches {
  /** One per kind of `kinds`, in that order. */
  kinds: KindCache[];
  /** By kind and group (kindKey), one per optional kind. */
  optional: Map<string, KindCache>;
}

/** How many caches of a kind served again are resumed at once. */
const RESUME_PARALLEL = 16;

export class OptionalKindRetries {
  /** By kind, the refusal said last: said again only when it changes. */
  private readonly refusals = new Map<string, string>();
  /**
   * By optional kind, the retries so far: each asks a namespace after the last one asked, so that
   * a namespace that refuses the list on its own (a 403 of its RBAC) holds the others back for one
   * retry, not for as long as it refuses.
   */
  private readonly retries = new Map<string, number>();
  private retrying: Promise<void> | undefined;

  constructor(
    private readonly kinds: readonly ApiKind[],
    private readonly caches: () => Iterable<NamespaceCaches>,
    private readonly log: LogFn,
  ) {}

  /** Lists the refused kinds again; one retry at a time (a slow one is not overlapped by the next resync's). */
  retry(): Promise<void> {
    this.retrying ??= this.retryRefused().finally(() => (this.retrying = undefined));
    return this.retrying;
  }

  /** A kind listed: its next refusal is said again. */
  listed(kind: ApiKind): void {
    this.refusals.delete(kindKey(kind));
  }

  /** A kind's list was refused: said once per kind and refusal, whatever the number of namespaces. */
  refused(kind: ApiKind, refusal: string, status: number): void {
    if (this.refusals.get(kindKey(kind)) === refusal) return;
    this.refusals.set(kindKey(kind), refusal);
    this.log(`${kind.plural}.${kind.group} is not cached: ${refusal}; its list is tried again later`, {
      level: status === 404 ? 'info' : 'warn',
    });
  }

  private async retryRefused(): Promise<void> {
    for (const kind of this.kinds) {
      const refused = [...this.caches()]
        .flatMap((caches) => caches.optional.get(kindKey(kind)) ?? [])
        .filter((cache) => cache.refused);
      if (refused.length === 0) continue;
      const asked = this.retries.get(kindKey(kind)) ?? 0;
      this.retries.set(kindKey(kind), asked + 1);
      const first = refused[asked % refused.length]!;
      await first.resume();
      if (!first.listed) continue;
      await forEachLimited(
        refused.filter((cache) => cache !== first),
        RESUME_PARALLEL,
        (cache) => cache.resume(),
      );
    }
  }
}
