/**
 * The Stage controller (ADR-0013, ADR-0012 step 1), level-triggered and shaped like a kubebuilder
 * reconciler: any change in a namespace that a pass reads (filter.ts) queues it on the reconcile
 * loop (../reconcile-loop.ts), and one pass observes (observe.ts: the namespace's Stages,
 * StageVersions, usages and activations, and what their managed routes hold), decides
 * (decisions/stage.ts decideNamespace, pure: what to create, patch, delete and which status each
 * object should have) and acts (act.ts). At most one status write per object, none when it is
 * unchanged. A pass that changed something is followed by another through the watch events of its
 * own writes.
 */
import { DEFAULT_SYSTEM_NAMESPACE } from '../../api/index.js';
import { decideNamespace, freshReads, type NamespaceDecision, type Observed } from '../../decisions/stage.js';
import { builtInRouteKinds } from '../../executors/index.js';
import { apiMessage } from '../../k8s/client.js';
import { CustomObjects, pluralOf, type CustomObject } from '../../k8s/custom-objects.js';
import { eventRecorder } from '../../k8s/events.js';
import { KindCache } from '../../k8s/kind-cache.js';
import { NotLeaderError, type LeaderGate } from '../../k8s/leader-election.js';
import { componentLogger, type LogFn } from '../../telemetry/log.js';
import { observeEventLag } from '../../telemetry/metrics.js';
import { NamespacedInformers } from '../informers.js';
import { ReconcileLoop } from '../reconcile-loop.js';
import { StageActions } from './act.js';
import { slim } from './cache.js';
import { StageEventFilter } from './filter.js';
import { KINDS, NamespaceObserver } from './observe.js';
import { RouteReaders } from './route-readers.js';
import type { StageControllerOptions } from './options.js';
import { WrittenStatuses } from './written-statuses.js';

export type { StageControllerOptions };

/** How often every namespace gets a pass whatever changed, and refused route kinds are listed again. */
const RESYNC_MS = 30_000;
/** How long a stop waits for the pass that runs. */
const STOP_GRACE_MS = 10_000;

export class StageController {
  /**
   * The caches a pass reads, one per kind of KINDS and per route kind of the built-in executors,
   * per namespace watched; sharded, the namespaces served.
   */
  private readonly informers: NamespacedInformers;
  private readonly loop: ReconcileLoop;
  private readonly filter: StageEventFilter;
  private readonly observer: NamespaceObserver;
  private readonly actions: StageActions;
  private readonly gate: LeaderGate;
  private readonly log: LogFn;
  private stopped = false;
  private timer?: NodeJS.Timeout;
  /** Changes from before this are what the initial watch lists, not event lag. */
  private startedAt = Date.now();
  /** The registrations and plans of the system namespace: they name the routes a Stage's traffic goes through. */
  private registrations?: KindCache;
  private plans?: KindCache;
  /** The Landscapes: their status holds what a landscape Stage's routes hold, as its workers report. */
  private landscapes?: KindCache;

  constructor(private readonly settings: StageControllerOptions) {
    this.log = settings.log ?? componentLogger('stage-controller').fn();
    /** Its status writes the caches may not hold yet: a pass sees them, and writes none twice. */
    const written = new WrittenStatuses();
    /** Which namespaces' Stages manage each route: a route's change marks them too, not only its own namespace. */
    const routeReaders = new RouteReaders();
    this.filter = new StageEventFilter(routeReaders);
    this.informers = new NamespacedInformers({
      kubeConfig: settings.kubeConfig,
      kinds: KINDS,
      // A route kind whose CRD is not installed is not cached: its routes are read with a GET, and
      // its list is tried again on the resync.
      optionalKinds: builtInRouteKinds,
      ...(settings.namespaces ? { namespaces: settings.namespaces } : {}),
      ...(settings.leadership ? { leadership: settings.leadership } : {}),
      ...(settings.sharded ? { sharded: true } : {}),
      systemNamespace: this.systemNamespace,
      onChange: (type, object) => this.observe(type, object),
      onListed: () => this.loop.poke(),
      onForget: (ns) => {
        this.filter.forget(ns);
        written.forget(ns);
        routeReaders.forget(ns);
      },
      slim,
      log: this.log,
    });
    this.gate = this.informers.gate;
    const objects = new CustomObjects(this.informers.kubeConfig());
    this.observer = new NamespaceObserver({
      informers: this.informers,
      objects,
      written,
      routeReaders,
      kubeConfig: settings.kubeConfig,
      system: () => ({
        namespace: this.systemNamespace,
        ...(this.registrations ? { registrations: this.registrations } : {}),
        ...(this.plans ? { plans: this.plans } : {}),
        ...(this.landscapes ? { landscapes: this.landscapes } : {}),
      }),
    });
    const events = eventRecorder(this.informers.kubeConfig(), this.log);
    this.actions = new StageActions({
      objects,
      gate: this.gate,
      written,
      events,
      log: this.log,
      passAgain: (ns, delayMs) => this.enqueue(ns, delayMs),
    });
    // Sharded: a namespace the shard does not serve (yet) waits queued; so does one whose caches
    // have not listed yet (empty, they would look like a namespace without objects). A standby
    // keeps its queue (the watches run) and goes on once it leads.
    this.loop = new ReconcileLoop({
      reconcile: (ns) => this.reconcile(ns),
      ready: (ns) => this.gate.acting() && this.informers.serves(ns) && this.informers.listed(ns),
      failed: (ns, err) => {
        if (err instanceof NotLeaderError) return 'now'; // deposed mid-pass: decided again on the next term
        this.log(`namespace ${ns}: ${apiMessage(err)}`, { level: 'warn', namespace: ns });
        return 'backoff';
      },
    });
  }

  private get systemNamespace(): string {
    return this.settings.systemNamespace ?? DEFAULT_SYSTEM_NAMESPACE;
  }

  /** Sharded: watches exactly these namespaces. */
  setNamespaces(namespaces: ReadonlySet<string>): Promise<void> {
    return this.informers.setNamespaces(namespaces);
  }

  /** Sharded: passes run in these namespaces from now on, each at once. */
  serve(namespaces: readonly string[]): void {
    this.informers.serve(namespaces);
    for (const ns of namespaces) this.enqueue(ns);
  }

  /** Sharded: no pass starts in these namespaces any more; resolves once a pass running in one is done. */
  async drop(namespaces: readonly string[]): Promise<void> {
    this.informers.unserve(namespaces);
    await this.loop.idle((ns) => namespaces.includes(ns));
  }

  /** True once every cache has listed, and while the last list of each succeeded (readiness). */
  isSynced(): boolean {
    return !this.stopped && this.informers.isSynced();
  }

  async start(): Promise<void> {
    this.startedAt = Date.now();
    // A registration or plan that changes changes which routes every Stage's traffic is read from.
    const system = (kind: string) =>
      new KindCache({
        kubeConfig: this.settings.kubeConfig,
        plural: pluralOf(kind),
        namespace: this.systemNamespace,
        onChange: () => this.resyncAll(),
        log: this.log,
      });
    this.registrations = system('ActivationTaskRegistration');
    this.plans = system('ActivationExecutionPlan');
    // A landscape's report changes what its Stages' routes are known to hold: their namespaces pass.
    this.landscapes = new KindCache({
      kubeConfig: this.settings.kubeConfig,
      plural: pluralOf('Landscape'),
      namespace: this.systemNamespace,
      onChange: (_type, landscape) => this.landscapeChanged(landscape.metadata.name),
      log: this.log,
    });
    await Promise.all([this.registrations.start(), this.plans.start(), this.landscapes.start()]);
    await this.informers.start();
    this.timer = setInterval(() => {
      void this.informers.retryOptional();
      this.resyncAll();
    }, this.settings.resyncMs ?? RESYNC_MS);
    this.gate.start((identity) => {
      if (this.stopped) return;
      this.log(`${identity} leads: reconciling every namespace`);
      this.loop.poke();
      this.resyncAll();
    });
    this.resyncAll();
  }

  /** Stops watching and passing; waits for the pass that runs at most STOP_GRACE_MS. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.gate.stop();
    const caches = [this.registrations, this.plans, this.landscapes].filter((cache) => cache !== undefined);
    await Promise.all([this.informers.stop(), ...caches.map((cache) => cache.stop())]);
    if (!(await this.loop.stop(STOP_GRACE_MS)))
      this.log(`stopped with a pass still running after ${STOP_GRACE_MS} ms`, { level: 'warn' });
  }

  /** Queues a namespace's pass, at once or in `delayMs` (tests and other components may call it too). */
  enqueue(namespace: string, delayMs = 0): void {
    if (this.informers.watches(namespace)) this.loop.enqueue(namespace, delayMs);
  }

  /** One pass over a namespace: observe, decide, act. */
  async reconcile(ns: string): Promise<void> {
    const { systemNamespace, shard } = this.settings;
    const options = { ...(systemNamespace ? { systemNamespace } : {}), ...(shard ? { shard } : {}) };
    const withTraffic = (observed: Observed, read: Pick<Observed, 'traffic' | 'reporting'>): Observed => ({
      ...observed,
      ...read,
    });
    // What the routes hold comes from their caches too: a change to a route's spec (a person's
    // edit, an executor's write) marks the namespace like any other change, so a pass that read a
    // route a moment before it changed is followed by one that reads it changed.
    let observed = this.observer.cached(ns);
    let traffic = await this.observer.traffic(ns, observed);
    observed = withTraffic(observed, traffic);
    let decision: NamespaceDecision = decideNamespace(observed, new Date(), options);
    // What the next pass cannot take back is decided on fresh reads (decisions/stage.ts
    // freshReads): the caches of different kinds may lag one another by a moment (a Stage's status
    // ahead of its new StageVersion, a usage not cached yet), and the routes' caches the routes.
    const fresh = { objects: false, routes: false };
    for (
      let need = freshReads(decision);
      (need.objects && !fresh.objects) || (need.routes && !fresh.routes);
      need = freshReads(decision)
    ) {
      if (need.objects && !fresh.objects) {
        observed = withTraffic(await this.observer.listed(ns), traffic);
        fresh.objects = true;
      }
      if (need.routes && !fresh.routes) {
        traffic = await this.observer.traffic(ns, observed, { fresh: true });
        observed = withTraffic(observed, traffic);
        fresh.routes = true;
      }
      decision = decideNamespace(observed, new Date(), options);
    }
    // A drain ends with no change to announce it: the namespace is passed again then.
    if (decision.wakeAt !== undefined) this.enqueue(ns, Math.max(decision.wakeAt - Date.now(), 0));
    return this.actions.act(ns, decision, observed);
  }

  /**
   * Queues the namespaces a change marks (filter.ts). Status writes that change nothing else do
   * not cost a pass: with four list calls each, they slowed activations running beside the
   * controller.
   */
  private observe(type: string, changed: CustomObject): void {
    const passes = this.filter.passesFor(type, changed);
    if (!passes) return;
    if (type !== 'DELETED') observeEventLag('stage-controller', changed.kind, changed, this.startedAt);
    for (const ns of passes.namespaces) this.enqueue(ns, passes.delayMs);
  }

  /** Queues the namespaces with a Stage in the Landscape. */
  private landscapeChanged(landscape: string): void {
    const stageKind = KINDS.indexOf('Stage');
    for (const ns of new Set(this.informers.namespaces()))
      if (this.informers.list(ns, stageKind).some((stage) => stage.spec?.landscape === landscape)) this.enqueue(ns);
  }

  /** Every watched namespace, queued; never throws: an apiserver that does not answer now is asked again at the next resync. */
  private resyncAll(): void {
    try {
      for (const ns of new Set(this.informers.namespaces())) this.enqueue(ns);
    } catch (err) {
      this.log(`resync: ${apiMessage(err)}`, { level: 'warn' });
    }
  }
}
