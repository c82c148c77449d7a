/**
 * CircuitBreakers read typed and their status changed by read-modify-write: the write carries the
 * resourceVersion it read, so two writers (two activations, the CLI) never overwrite each other; a
 * conflict reads again and decides again, a bounded number of times.
 */
import {
  circuitBreakerResource,
  type CircuitBreakerResource,
  type CircuitBreakerStatus,
} from '../api/circuit-breaker.js';
import { GROUP, VERSION } from '../api/group.js';
import { apiStatus, k8s } from './client.js';
import { describeIssues } from '../api/issues.js';

const PLURAL = 'circuitbreakers';
const CONFLICT_ATTEMPTS = 10;

export class BreakerStore {
  private readonly api: k8s.CustomObjectsApi;

  constructor(kc: k8s.KubeConfig) {
    this.api = kc.makeApiClient(k8s.CustomObjectsApi);
  }

  /** The breakers in `namespace`; none when the kind is not installed (no breaker = no breaker). */
  async list(namespace: string): Promise<CircuitBreakerResource[]> {
    try {
      const res = (await this.api.listNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        namespace,
        plural: PLURAL,
      })) as { items: unknown[] };
      return res.items.map((o) => parseBreaker(o));
    } catch (err) {
      if (apiStatus(err) === 404) return [];
      throw err;
    }
  }

  async get(namespace: string, name: string): Promise<CircuitBreakerResource | undefined> {
    try {
      return parseBreaker(
        await this.api.getNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: PLURAL, name }),
      );
    } catch (err) {
      if (apiStatus(err) === 404) return undefined;
      throw err;
    }
  }

  /**
   * Reads the breaker, asks `decide` for its next status and writes it if it changed (the same
   * object back means no write). Returns the breaker as written, undefined when it is gone.
   */
  async update(
    namespace: string,
    name: string,
    decide: (b: CircuitBreakerResource) => CircuitBreakerStatus,
  ): Promise<CircuitBreakerResource | undefined> {
    for (let attempt = 1; ; attempt++) {
      const b = await this.get(namespace, name);
      if (!b) return undefined;
      const status = decide(b);
      if (status === b.status) return b;
      try {
        const body = { metadata: { resourceVersion: b.metadata.resourceVersion }, status };
        const options = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
        return parseBreaker(
          await this.api.patchNamespacedCustomObjectStatus(
            { group: GROUP, version: VERSION, namespace, plural: PLURAL, name, body },
            options,
          ),
        );
      } catch (err) {
        if (apiStatus(err) === 404) return undefined;
        if (apiStatus(err) !== 409 || attempt >= CONFLICT_ATTEMPTS) throw err;
      }
    }
  }

  /** Merge-patches the breaker's annotations; false when it is gone. */
  async annotate(namespace: string, name: string, annotations: Record<string, string>): Promise<boolean> {
    try {
      const options = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);
      await this.api.patchNamespacedCustomObject(
        { group: GROUP, version: VERSION, namespace, plural: PLURAL, name, body: { metadata: { annotations } } },
        options,
      );
      return true;
    } catch (err) {
      if (apiStatus(err) === 404) return false;
      throw err;
    }
  }
}

/** A CircuitBreaker as read, typed; one that does not match its schema is an error that names it. */
export function parseBreaker(o: unknown): CircuitBreakerResource {
  const parsed = circuitBreakerResource.safeParse(o);
  if (parsed.success) return { ...parsed.data, status: parsed.data.status ?? {} };
  const meta = (o as { metadata?: { namespace?: string; name?: string } }).metadata;
  throw new Error(
    `CircuitBreaker ${meta?.namespace}/${meta?.name} does not match its schema: ${describeIssues(parsed.error)}`,
  );
}
