/**
 * One kind of custom resources (the project's, or another group's such as the routes), listed then
 * watched by an informer (client-node's ListWatch: re-lists after a 410, reports deletions a
 * re-list finds), in one namespace or all. A controller reads it instead of listing on every pass:
 * a pass then costs the apiserver nothing.
 */
import { GROUP, VERSION } from '../api/group.js';
import { apiMessage, apiStatus, k8s } from './client.js';
import type { CustomObject } from './custom-objects.js';

/** A broken watch is listed and watched again after this long. */
const RESTART_DELAY_MS = 1_000;
/** Objects per list request. */
const LIST_PAGE = 500;

export interface KindCacheOptions {
  kubeConfig: k8s.KubeConfig;
  /** Default: the project's API group and version. */
  group?: string;
  version?: string;
  plural: string;
  /** Undefined: every namespace. */
  namespace?: string;
  /** Every add, update and delete (a re-list's too), after the cache holds it. */
  onChange: (type: 'ADDED' | 'MODIFIED' | 'DELETED', o: CustomObject) => void;
  /**
   * Drops more of a cached object than managedFields (which no cache keeps: often half an object),
   * in place: a listed one as its page arrives, a watched one once onChange saw it whole.
   * onChange must not need what it drops of a listed object.
   */
  slim?: (o: CustomObject) => void;
  /** After each list that succeeded (the first, and each re-list after a break). */
  onListed?: () => void;
  /**
   * Present: the kind may not be served (its CRD not installed) or not granted. A list refused with
   * 404 or 403 is told here (every time; the caller says it once) instead of logged, and is not
   * tried again until resume(), where other kinds re-list every second.
   */
  onRefused?: (refusal: string, status: number) => void;
  log: (message: string, fields?: Record<string, unknown>) => void;
}

/**
 * What a list-and-watch does when its watch breaks: a refusal (403: not granted, 404: the kind not
 * served) goes to `refused`, where there is one, and is not tried again; anything else is said to
 * `broke` and listed and watched again after RESTART_DELAY_MS, until `stopped`.
 */
export function keepWatching(
  informer: { on(event: 'error', cb: (err: unknown) => void): void; start(): Promise<void> },
  o: { stopped: () => boolean; refused?: (refusal: string, status: number) => void; broke: (message: string) => void },
): void {
  informer.on('error', (err) => {
    if (o.stopped()) return;
    const status = apiStatus(err);
    if (o.refused && (status === 404 || status === 403)) {
      o.refused(apiMessage(err), status);
      return;
    }
    o.broke(apiMessage(err));
    setTimeout(() => !o.stopped() && void informer.start().catch(() => undefined), RESTART_DELAY_MS);
  });
}

export class KindCache {
  private readonly informer: k8s.Informer<k8s.KubernetesObject> & k8s.ObjectCache<k8s.KubernetesObject>;
  private listedOk = false;
  private everListed = false;
  private stopped = false;
  /** With onRefused: a list was refused, and the re-lists wait for resume(). */
  private refusedNow = false;
  readonly path: string;

  constructor(o: KindCacheOptions) {
    const slim = (obj: CustomObject) => {
      // A copy without the field, not `delete`: deleting turns each object's metadata into a
      // dictionary, some 400 bytes more per cached object (bench/scale).
      if (obj.metadata && 'managedFields' in obj.metadata) {
        const { managedFields: _dropped, ...metadata } = obj.metadata as typeof obj.metadata & {
          managedFields?: unknown;
        };
        obj.metadata = metadata;
      }
      o.slim?.(obj);
    };
    const api = o.kubeConfig.makeApiClient(k8s.CustomObjectsApi);
    const { plural, namespace } = o;
    const group = o.group ?? GROUP;
    const version = o.version ?? VERSION;
    this.path = namespace
      ? `/apis/${group}/${version}/namespaces/${namespace}/${plural}`
      : `/apis/${group}/${version}/${plural}`;
    // In pages, each slimmed as it comes: one response of 10,000 objects, and all of them whole
    // at once, set the process's memory high for good (bench/scale.ts). A continued list is one
    // consistent snapshot, whose resourceVersion the watch starts from.
    const list = async (): Promise<k8s.KubernetesListObject<k8s.KubernetesObject>> => {
      try {
        const items: k8s.KubernetesObject[] = [];
        let page: k8s.KubernetesListObject<k8s.KubernetesObject>;
        let next: string | undefined;
        do {
          const params = { group, version, plural, limit: LIST_PAGE, ...(next ? { _continue: next } : {}) };
          page = (await (namespace
            ? api.listNamespacedCustomObject({ ...params, namespace })
            : api.listCustomObjectForAllNamespaces(params))) as k8s.KubernetesListObject<k8s.KubernetesObject>;
          for (const item of page.items) slim(item as unknown as CustomObject);
          items.push(...page.items);
          // CustomObjectsApi answers plain JSON: the token is `continue` (the typed model's `_continue`).
          next =
            (page.metadata as { continue?: string } | undefined)?.continue || page.metadata?._continue || undefined;
        } while (next);
        this.listedOk = this.everListed = true;
        this.refusedNow = false;
        // After the informer took the items in (it does so right after this returns).
        if (o.onListed) setImmediate(o.onListed);
        return { ...page, items };
      } catch (err) {
        this.listedOk = false;
        throw err;
      }
    };
    this.informer = k8s.makeInformer<k8s.KubernetesObject>(o.kubeConfig, this.path, list);
    const changed = (type: 'ADDED' | 'MODIFIED' | 'DELETED') => (kobj: k8s.KubernetesObject) => {
      const obj = kobj as unknown as CustomObject;
      o.onChange(type, obj);
      slim(obj);
    };
    this.informer.on('add', changed('ADDED'));
    this.informer.on('update', changed('MODIFIED'));
    this.informer.on('delete', changed('DELETED'));
    keepWatching(this.informer, {
      stopped: () => this.stopped,
      ...(o.onRefused
        ? {
            refused: (refusal: string, status: number) => {
              this.refusedNow = true;
              this.listedOk = false;
              o.onRefused!(refusal, status);
            },
          }
        : {}),
      broke: (message) =>
        o.log(`watch of ${this.path} broke (${message}); re-listing`, {
          level: 'warn',
          ...(namespace ? { namespace } : {}),
        }),
    });
  }

  /** Resolves after the first list (also when it was refused: `listed` says so, and it is tried again). */
  async start(): Promise<void> {
    await this.informer.start().catch(() => undefined);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.informer.stop();
  }

  /** With onRefused: whether the last list was refused, and the re-lists wait for resume(). */
  get refused(): boolean {
    return this.refusedNow;
  }

  /** A list refused (onRefused): lists (and watches) again; resolves after the list, as start() does. */
  async resume(): Promise<void> {
    if (this.stopped || !this.refusedNow) return;
    await this.start();
  }

  /** Whether the last list succeeded (readiness). */
  get listed(): boolean {
    return this.listedOk;
  }

  /** Whether a list ever succeeded: before that the cache is empty, not a namespace without objects. */
  get synced(): boolean {
    return this.everListed;
  }

  /** The cached objects of a namespace, by name (the order a list gives). */
  list<T extends CustomObject = CustomObject>(namespace: string): T[] {
    return (this.informer.list(namespace) as unknown as T[]).sort((a, b) =>
      a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0,
    );
  }

  /** The cached object of that name, if any. */
  get<T extends CustomObject = CustomObject>(namespace: string, name: string): T | undefined {
    return this.informer.get(name, namespace) as unknown as T | undefined;
  }

  /** The namespaces that hold at least one cached object. */
  namespaces(): string[] {
    const seen = new Set<string>();
    for (const o of this.informer.list()) if (o.metadata?.namespace) seen.add(o.metadata.namespace);
    return [...seen];
  }
}
