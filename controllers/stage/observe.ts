/**
 * What a Stage controller pass observes of a namespace: its Stages, StageVersions, usages and
 * activations as the caches hold them (with the statuses this controller wrote that the caches may
 * not hold yet) or as the apiserver lists them now, and what the managed routes of its Stages hold.
 */
import type { ActivationExecutionPlanResource, ActivationTaskRegistrationResource } from '../../api/index.js';
import type { LandscapeResource } from '../../api/landscape.js';
import type { Observed } from '../../decisions/stage.js';
import type { RouteKind } from '../../executors/types.js';
import type { k8s } from '../../k8s/client.js';
import type { CustomObjects } from '../../k8s/custom-objects.js';
import type { KindCache } from '../../k8s/kind-cache.js';
import type { NamespacedInformers } from '../informers.js';
import type { RouteReaders } from './route-readers.js';
import { observeTraffic } from './traffic.js';
import type { WrittenStatuses } from './written-statuses.js';

/** What a pass reads, in Observed's order. */
export const KINDS = ['Stage', 'StageVersion', 'StageVersionUsage', 'VectorActivation'];

export interface ObserverParts {
  informers: NamespacedInformers;
  objects: CustomObjects;
  written: WrittenStatuses;
  routeReaders: RouteReaders;
  /** The system namespace's registrations and plans: they name the routes a Stage's traffic goes through. */
  system: () => { namespace: string; registrations?: KindCache; plans?: KindCache; landscapes?: KindCache };
  kubeConfig: k8s.KubeConfig;
}

export class NamespaceObserver {
  constructor(private readonly parts: ObserverParts) {}

  /**
   * The namespace as the caches hold it. The apiserver validated every object against the CRDs
   * generated from the same zod schemas, so a cached object has the shape of its zod type.
   */
  cached(namespace: string): Observed {
    const { informers, written } = this.parts;
    const [stages, stageVersions, usages, activations] = KINDS.map((kind, i) => {
      const cached = informers.list(namespace, i);
      written.prune(kind, namespace, cached);
      return cached.map((object) => written.view(kind, object));
    });
    return { namespace, stages, stageVersions, usages, activations } as unknown as Observed;
  }

  /** The namespace as the apiserver lists it now. */
  async listed(namespace: string): Promise<Observed> {
    const [stages, stageVersions, usages, activations] = await Promise.all(
      KINDS.map((kind) => this.parts.objects.list(kind, namespace)),
    );
    return { namespace, stages, stageVersions, usages, activations } as unknown as Observed;
  }

  /**
   * What the managed routes of the namespace's Stages hold; undefined while no registration is
   * cached. A route is read from its cache unless `fresh` (or not cached: another namespace not
   * watched, a kind not listed), else from the apiserver.
   */
  async traffic(
    ns: string,
    observed: Observed,
    how: { fresh?: boolean } = {},
  ): Promise<Pick<Observed, 'traffic' | 'reporting'>> {
    const { informers, routeReaders } = this.parts;
    const { namespace: system, registrations, plans, landscapes } = this.parts.system();
    const registered = registrations?.list(system) ?? [];
    const stages = observed.stages.filter((stage) => !stage.metadata.deletionTimestamp);
    // Registrations or plans not listed now (start-up, a re-list after a watch ended): what the
    // routes hold cannot be told, so every Stage's traffic is unknown and nothing is cleaned up on
    // the marks alone (a previous version's serving mark may still be on its way).
    if (!registrations?.synced || !plans?.synced)
      return { traffic: new Map(stages.map((stage) => [stage.metadata.name!, undefined])) };
    if (registered.length === 0) return {};
    const cachedRoute = (kind: RouteKind, namespace: string, name: string) => informers.get(kind, namespace, name);
    // Every route the pass reads wakes this namespace from the moment it is read, whether it sends
    // a Stage traffic or not (an edit may make it): one in another namespace too.
    const routes = new (class extends Map<string, Promise<unknown>> {
      override set(key: string, read: Promise<unknown>) {
        routeReaders.add(ns, key);
        return super.set(key, read);
      }
    })();
    // While the Landscapes are not listed (start-up, a re-list), their reports are not known.
    const landscapeReports = (name: string) =>
      landscapes?.synced
        ? ((landscapes.get(system, name) as unknown as LandscapeResource | undefined)?.status?.reports ?? [])
        : undefined;
    const { traffic, reporting } = await observeTraffic(
      {
        kubeConfig: informers.gate.kubeConfig(this.parts.kubeConfig),
        routes,
        landscapeReports,
        ...(how.fresh ? {} : { cachedRoute }),
      },
      ns,
      stages,
      observed.stageVersions,
      registered as unknown as ActivationTaskRegistrationResource[],
      plans.list(system) as unknown as ActivationExecutionPlanResource[],
      observed.activations,
    );
    routeReaders.note(ns, routes.keys());
    return { traffic, reporting };
  }
}
