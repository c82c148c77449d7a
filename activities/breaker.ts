/**
 * The activation's side of the CircuitBreakers in the system namespace (docs/scale.md): may it
 * change routing now (admit), and a failed attempt counted (recordActivationFailure). Both settle
 * the breaker first (close annotation, sleep window): no controller owns breakers, whoever reads
 * one applies what is due. Each status write is a read-modify-write on resourceVersion.
 */
import {
  ANNOTATION_CLOSE,
  API_VERSION,
  breakerScope,
  type CircuitBreakerResource,
  type CircuitBreakerStatus,
} from '../api/index.js';
import {
  breakersFor,
  phaseOf,
  recordFailure,
  secondsUntilClose,
  settle,
  takeToken,
  type Breaker,
} from '../decisions/breaker.js';
import { BreakerStore, parseBreaker } from '../k8s/breaker-store.js';
import { kubeTime } from '../shared/format.js';
import { holderOf, type ActivationRef } from '../shared/activation.js';
import { setCircuitBreakerState } from '../telemetry/metrics.js';
import type { CoreDeps } from './deps.js';

/** How long a waiting activation is told to wait when nothing says sooner (a breaker closed only by hand). */
const DEFAULT_WAIT_SECONDS = 30;

export type Admission =
  /** limited: some breaker rate-limits this namespace, so each later step asks again. */
  | { admitted: true; limited: boolean }
  | { admitted: false; reason: 'CircuitOpen' | 'RateLimited'; message: string; retryAfterSeconds: number };

const asBreaker = (b: CircuitBreakerResource): Breaker => ({
  name: b.metadata.name!,
  spec: b.spec,
  status: b.status ?? {},
});

export function breakerActivities(deps: CoreDeps) {
  const store = new BreakerStore(deps.kubeConfig);
  const ns = deps.systemNamespace;

  /** Read-modify-write of one breaker: settle, then `decide`; its metric and Events follow the result. */
  async function change(
    name: string,
    decide: (b: Breaker, now: Date) => CircuitBreakerStatus,
  ): Promise<CircuitBreakerResource | undefined> {
    let before: CircuitBreakerStatus | undefined;
    const written = await store.update(ns, name, (o) => {
      before = o.status;
      const now = new Date();
      const b = asBreaker(o);
      const settled = settle(b, o.metadata.annotations?.[ANNOTATION_CLOSE], now);
      return decide({ ...b, status: settled }, now);
    });
    if (!written) return undefined;
    const after = written.status ?? {};
    setCircuitBreakerState(name, breakerScope(written.spec), phaseOf(after) === 'Open' ? 'open' : 'closed');
    if (before && after.phase && (before.phase ?? 'Closed') !== after.phase) {
      const regarding = {
        apiVersion: API_VERSION,
        kind: 'CircuitBreaker',
        namespace: ns,
        name,
        uid: written.metadata.uid!,
      };
      await deps.event(
        regarding,
        after.phase === 'Open' ? 'Warning' : 'Normal',
        after.phase === 'Open' ? 'BreakerOpened' : 'BreakerClosed',
        `${after.reason}: ${after.message}`,
      );
    }
    return written;
  }

  const applicable = async (namespace: string) => breakersFor(await store.list(ns), namespace);

  return {
    /**
     * Whether any CircuitBreaker guards `namespace`: read beside the Stage after the grant, so that
     * an activation no breaker guards skips the admission (a step of its own) on the handoff's path.
     */
    async breakersApply(namespace: string): Promise<boolean> {
      // As watched when the worker keeps them: the admission that follows reads each one anew.
      const watched = deps.config?.list('CircuitBreaker');
      if (watched) return breakersFor(watched.map(parseBreaker), namespace).length > 0;
      return (await applicable(namespace)).length > 0;
    },

    /**
     * May activation `ref` make the routing changes of `step` now? checkOpen (its first routing
     * change of this attempt): every breaker of its namespace must be Closed. Then each
     * rate-limiting one must give a token, once per uid/attempt/step however often this is asked.
     */
    async admitActivation(ref: ActivationRef, attempt: number, step: number, checkOpen: boolean): Promise<Admission> {
      const breakers = await applicable(ref.namespace);
      if (breakers.length === 0) return { admitted: true, limited: false };
      const settled = (await Promise.all(breakers.map((b) => change(b.metadata.name!, (x) => x.status)))).filter(
        (b) => b !== undefined,
      );
      const open = settled.filter((b) => phaseOf(b.status ?? {}) === 'Open');
      if (checkOpen && open.length > 0) {
        const now = new Date();
        const waits = open.map((b) => secondsUntilClose(asBreaker(b), now));
        const byHand = waits.some((w) => w === undefined);
        const retryAfterSeconds = byHand ? DEFAULT_WAIT_SECONDS : Math.max(...(waits as number[]), 1);
        const why = open
          .map(
            (b) =>
              `CircuitBreaker ${b.metadata.name} (${breakerScope(b.spec)}) is Open: ${b.status?.reason}: ${b.status?.message}`,
          )
          .join('; ');
        const until = byHand
          ? 'until it is closed (konfidence breaker close NAME, or the konfidence.cloud/close annotation)'
          : `until its sleep window ends (in about ${retryAfterSeconds}s)`;
        return {
          admitted: false,
          reason: 'CircuitOpen',
          message: `waiting ${until}; no route is changed meanwhile. ${why}`,
          retryAfterSeconds,
        };
      }
      const key = `${ref.uid}/${attempt}/${step}`;
      for (const b of settled.filter((x) => x.spec.rateLimit)) {
        let wait = 0;
        await change(b.metadata.name!, (x, now) => {
          const t = takeToken(x, key, now);
          wait = t.ok ? 0 : t.waitSeconds;
          return t.status;
        });
        if (wait > 0) {
          const r = b.spec.rateLimit!;
          return {
            admitted: false,
            reason: 'RateLimited',
            message: `CircuitBreaker ${b.metadata.name} (${breakerScope(b.spec)}) allows ${r.routingChanges} routing changes per ${r.intervalSeconds}s; the next token in about ${wait}s`,
            retryAfterSeconds: wait,
          };
        }
      }
      return { admitted: true, limited: settled.some((b) => b.spec.rateLimit) };
    },

    /** Counts a Failed attempt on every breaker of its namespace; one attempt counts once. */
    async recordActivationFailure(ref: ActivationRef, attempt: number): Promise<void> {
      const failure = { activation: holderOf(ref), key: `${ref.uid}/${attempt}`, time: kubeTime() };
      for (const b of await applicable(ref.namespace))
        await change(b.metadata.name!, (x, now) => recordFailure(x, failure, now));
    },
  };
}
