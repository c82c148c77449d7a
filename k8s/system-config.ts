/**
 * The system namespace's configuration as the core reads it for every activation: its
 * ActivationExecutionPlans, ActivationTaskRegistrations, CircuitBreakers and Landscapes, kept by watches (as
 * controller-runtime's client reads from its informers). An activation then reads them with no
 * request; a change reaches the next activation as soon as its watch event does. Until a kind's
 * first list succeeded, or while its watch is broken, `read` says so and the caller asks the
 * apiserver as before.
 */
import type { k8s } from './client.js';
import type { CustomObject } from './custom-objects.js';
import { KindCache } from './kind-cache.js';
import type { LogFn } from '../telemetry/log.js';

export const SYSTEM_CONFIG_KINDS = {
  ActivationExecutionPlan: 'activationexecutionplans',
  ActivationTaskRegistration: 'activationtaskregistrations',
  CircuitBreaker: 'circuitbreakers',
  Landscape: 'landscapes',
} as const;
export type SystemConfigKind = keyof typeof SYSTEM_CONFIG_KINDS;
type ChangeType = 'ADDED' | 'MODIFIED' | 'DELETED';

export class SystemConfig {
  private readonly caches: Record<SystemConfigKind, KindCache>;
  /** Who is told of a change of each kind (the landscape reports start when a Landscape appears). */
  private readonly listeners = new Set<{ kind: SystemConfigKind; onChange: (type: ChangeType) => void }>();

  constructor(
    kubeConfig: k8s.KubeConfig,
    readonly namespace: string,
    log: LogFn,
  ) {
    // A kind not installed, or not granted for list and watch (an older Role), is read from the
    // apiserver instead, as before: said once, not retried every second.
    const cache = (plural: string, kind: SystemConfigKind) =>
      new KindCache({
        kubeConfig,
        plural,
        namespace,
        onChange: (type) => {
          for (const listener of this.listeners) if (listener.kind === kind) listener.onChange(type);
        },
        onRefused: (refusal) =>
          log(`${plural} in ${namespace} are read per activation: their watch was refused (${refusal})`, {
            level: 'warn',
          }),
        log,
      });
    this.caches = {
      ActivationExecutionPlan: cache(SYSTEM_CONFIG_KINDS.ActivationExecutionPlan, 'ActivationExecutionPlan'),
      ActivationTaskRegistration: cache(SYSTEM_CONFIG_KINDS.ActivationTaskRegistration, 'ActivationTaskRegistration'),
      CircuitBreaker: cache(SYSTEM_CONFIG_KINDS.CircuitBreaker, 'CircuitBreaker'),
      Landscape: cache(SYSTEM_CONFIG_KINDS.Landscape, 'Landscape'),
    };
  }

  /** Calls `onChange` on every change of `kind` as its watch sees it, until the returned function is called. */
  onChange(kind: SystemConfigKind, onChange: (type: ChangeType) => void): () => void {
    const listener = { kind, onChange };
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  /** Resolves once every kind was listed (or its list failed: its reads then go to the apiserver). */
  async start(): Promise<void> {
    await Promise.all(Object.values(this.caches).map((c) => c.start()));
  }

  async stop(): Promise<void> {
    await Promise.all(Object.values(this.caches).map((c) => c.stop()));
  }

  /**
   * The objects of `kind` in the system namespace, as cached: read only (the callers parse them
   * into objects of their own); undefined when the cache cannot answer now (not listed yet, or its
   * last list failed).
   */
  list(kind: SystemConfigKind): readonly CustomObject[] | undefined {
    const cache = this.caches[kind];
    return cache.listed ? cache.list(this.namespace) : undefined;
  }
}
