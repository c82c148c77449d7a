/**
 * The Stage controller (ADR-0013, ADR-0012 step 1), level-triggered and shaped like a kubebuilder
 * reconciler: any change in a namespace marks it dirty (a route's spec included, its pass a moment
 * later: ROUTE_PASS_DELAY_MS), and one pass observes (the namespace's Stages, StageVersions, usages
 * and activations, and what their managed routes hold), plans (decisions/stage.ts, pure: what to
 * create, patch, delete and which status each object should have) and acts. Every action is
 * idempotent: creates tolerate "exists", deletes "gone", finalizer patches are conditional on the
 * resourceVersion read; at most one status write per object, none when it is unchanged. A pass that
 * changed something is followed by another through the watch events of its own writes.
 */
import { DEFAULT_SYSTEM_NAMESPACE, type ActivationExecutionPlanResource, type ActivationTaskRegistrationResource } from '../api/index.js';
import { observeTraffic } from './stage-traffic.js';
import { WrittenStatuses } from './written-statuses.js';
import { isRoute, relevantState, routeKeyOf, slim } from './stage-cache.js';
import { RouteReaders } from './route-readers.js';
import { freshReads, decideNamespace, type Observed, type NamespaceDecision } from '../decisions/stage.js';
import { builtInRouteKinds } from '../executors/index.js';
import type { RouteKind } from '../executors/types.js';
import { apiMessage, apiStatus, k8s } from '../k8s/client.js';
import { CustomObjects, pluralOf, type CustomObject } from '../k8s/custom-objects.js';
import { KindCache } from '../k8s/kind-cache.js';
import { LeaderGate, NotLeaderError, type Leadership } from '../k8s/leader-election.js';
import { NamespacedInformers } from './informers.js';
import { activationCreatedEvents, cleanedUpEvents, stageVersionCreatedEvents, type EventSpec } from '../decisions/events.js';
import { eventRecorder, sendEvents, type EventRecorder } from '../k8s/events.js';
import { componentLogger, type LogFn } from '../telemetry/log.js';
import { observeEventLag } from '../telemetry/metrics.js';

/** What a pass reads, in Observed's order. */
const KINDS = ['Stage', 'StageVersion', 'StageVersionUsage', 'VectorActivation'];
/** How often every namespace gets a pass whatever changed, and refused route kinds are listed again. */
const RESYNC_MS = 30_000;
/**
 * How long after a route's change its namespace's pass starts, unless another change brings it
 * sooner: an activation's route writes, a step apart, are decided and written once with its switch
 * (whose usage and marks start the pass at once), not once each. Counted from the first route
 * change, so routes that keep changing still get a pass this often.
 */
const ROUTE_PASS_DELAY_MS = 200;

export interface StageControllerOptions {
  kubeConfig: k8s.KubeConfig;
  /** Namespaces to manage; default all. */
  namespaces?: string[];
  /**
   * The system namespace (KONFIDENCE_SYSTEM_NAMESPACE), where this controller's ControllerStatus
   * lives; each Stage's status.controllerStatus points there. Default konfidence-system.
   */
  systemNamespace?: string;
  log?: LogFn;
  /**
   * Absent: standalone, always acts. Present: the watches run always, passes run only while
   * leader (leadership is checked right before each write), and becoming leader re-reconciles
   * every namespace (docs/ha.md).
   */
  leadership?: Leadership;
  /**
   * Sharded (KONFIDENCE_SHARD, worker/shards.ts): watches only in `namespaces` (none at first;
   * setNamespaces changes them) and passes only in the namespaces the shard serves (serve/drop).
   */
  sharded?: boolean;
  /** Sharded: the shard's name, which the Stages' status.controllerStatus names. */
  shard?: string;
  /** How often every namespace gets a pass whatever changed (default RESYNC_MS). */
  resyncMs?: number;
}

export class StageController {
  private readonly objects: CustomObjects;
  /**
   * The caches a pass reads, one per kind of KINDS and per route kind of the built-in executors,
   * per namespace watched; sharded, the namespaces served.
   */
  private readonly informers: NamespacedInformers;
  /** The pass running now: a drop of its namespace waits for it. */
  private current?: { ns: string; done: Promise<void> };
  /** The namespaces a change marked, with when their pass is due. */
  private readonly dirty = new Map<string, number>();
  /** What a pass reads of each object (relevantState), by kind/uid: a change costs a pass, nothing else does. */
  private readonly seen = new Map<string, { ns: string; state: string }>();
  /** Its status writes the caches may not hold yet: a pass sees them, and writes none twice. */
  private readonly written = new WrittenStatuses();
  /** Which namespaces' Stages manage each route: a route's change marks them too, not only its own namespace. */
  private readonly routeReaders = new RouteReaders();
  private stopped = false;
  private wake: () => void = () => undefined;
  private loop?: Promise<void>;
  private timer?: NodeJS.Timeout;
  private readonly gate: LeaderGate;
  private readonly log: LogFn;
  private readonly event: EventRecorder;
  /** Changes from before this are what the initial watch lists, not event lag. */
  private startedAt = Date.now();
  /** The registrations and plans of the system namespace: they name the routes a Stage's traffic goes through. */
  private registrations?: KindCache;
  private plans?: KindCache;

  constructor(private readonly settings: StageControllerOptions) {
    this.log = settings.log ?? componentLogger('stage-controller').fn();
    this.informers = new NamespacedInformers({
      kubeConfig: settings.kubeConfig,
      kinds: KINDS,
      // A route kind whose CRD is not installed is not cached: its routes are read with a GET, and
      // its list is tried again on the resync.
      optionalKinds: builtInRouteKinds,
      ...(settings.namespaces ? { namespaces: settings.namespaces } : {}),
      ...(settings.leadership ? { leadership: settings.leadership } : {}),
      ...(settings.sharded ? { sharded: true } : {}),
      systemNamespace: settings.systemNamespace ?? DEFAULT_SYSTEM_NAMESPACE,
      onChange: (type, obj) => this.observe(type, obj),
      onListed: () => this.wake(),
      onForget: (ns) => {
        for (const [key, state] of this.seen) if (state.ns === ns) this.seen.delete(key);
        this.written.forget(ns);
        this.routeReaders.forget(ns);
      },
      slim,
      log: this.log,
    });
    this.gate = this.informers.gate;
    this.objects = new CustomObjects(this.informers.kubeConfig());
    this.event = eventRecorder(this.informers.kubeConfig(), this.log);
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
    const current = this.current;
    if (current && namespaces.includes(current.ns)) await current.done;
  }

  /** True once every cache has listed, and while the last list of each succeeded (readiness). */
  isSynced(): boolean {
    return !this.stopped && this.informers.isSynced();
  }


  async start(): Promise<void> {
    this.startedAt = Date.now();
    // A registration or plan that changes changes which routes every Stage's traffic is read from.
    const system = (kind: string) =>
      new KindCache({ kubeConfig: this.settings.kubeConfig, plural: pluralOf(kind), namespace: this.settings.systemNamespace ?? DEFAULT_SYSTEM_NAMESPACE, onChange: () => void this.resyncAll(), log: this.log });
    this.registrations = system('ActivationTaskRegistration');
    this.plans = system('ActivationExecutionPlan');
    await Promise.all([this.registrations.start(), this.plans.start()]);
    await this.informers.start();
    this.timer = setInterval(() => {
      void this.informers.retryOptional();
      void this.resyncAll();
    }, this.settings.resyncMs ?? RESYNC_MS);
    this.gate.start((identity) => {
      if (this.stopped) return;
      this.log(`${identity} leads: reconciling every namespace`);
      this.wake();
      void this.resyncAll();
    });
    this.loop = this.run();
    void this.resyncAll();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.gate.stop();
    await Promise.all([this.informers.stop(), ...[this.registrations, this.plans].filter((cache) => cache !== undefined).map((cache) => cache.stop())]);
    this.wake();
    await this.loop;
  }

  /**
   * Enqueues a namespace when an object changed in a way a pass decides on. Status writes that
   * change nothing else (the controller's own, an activation's progress, a gateway's on a route) do
   * not cost a pass: with four list calls each, they slowed activations running beside the
   * controller.
   */
  private observe(type: string, changed: CustomObject): void {
    const key = `${changed.kind}/${changed.metadata.uid}`;
    const seen = relevantState(changed);
    if (type === 'DELETED') this.seen.delete(key);
    else if (this.seen.get(key)?.state === seen) return;
    else this.seen.set(key, { ns: changed.metadata.namespace!, state: seen });
    if (type !== 'DELETED') observeEventLag('stage-controller', changed.kind, changed, this.startedAt);
    const delay = isRoute(changed) ? ROUTE_PASS_DELAY_MS : 0;
    this.enqueue(changed.metadata.namespace!, delay);
    if (isRoute(changed)) for (const ns of this.routeReaders.of(routeKeyOf(changed))) this.enqueue(ns, delay);
  }

  /** Marks a namespace for a pass, at once or in `delayMs` (tests and other components may call it too). */
  enqueue(namespace: string, delayMs = 0): void {
    if (!this.informers.watches(namespace)) return;
    const due = Date.now() + delayMs;
    this.dirty.set(namespace, Math.min(this.dirty.get(namespace) ?? due, due));
    this.wake();
  }

  /** Never throws: an apiserver that does not answer now is asked again at the next resync. */
  private async resyncAll(): Promise<void> {
    try {
      const namespaces = this.informers.namespaces();
      for (const ns of new Set(namespaces)) this.enqueue(ns);
    } catch (err) {
      this.log(`resync: ${apiMessage(err)}`, { level: 'warn' });
    }
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      // Sharded: a namespace the shard does not serve (yet) waits in the dirty set; so does one
      // whose caches have not listed yet (empty, they would look like a namespace without objects).
      const now = Date.now();
      const passable = [...this.dirty].filter(([n]) => this.informers.serves(n) && this.informers.listed(n));
      const ns = passable.find(([, due]) => due <= now)?.[0];
      // A standby keeps its dirty set (the watches run) and waits to be woken as leader.
      if (ns === undefined || !this.gate.acting()) {
        const next = passable.length > 0 && this.gate.acting() ? Math.min(...passable.map(([, due]) => due)) - now : undefined;
        await this.sleep(next);
        continue;
      }
      this.dirty.delete(ns);
      let done: () => void = () => undefined;
      this.current = { ns, done: new Promise<void>((resolve) => (done = resolve)) };
      try {
        // A pass that changed something is followed by another once the caches saw its writes:
        // each write's watch event marks the namespace again (observe). Passing again at once
        // would decide on caches that may not hold them yet.
        await this.reconcile(ns);
      } catch (err) {
        if (err instanceof NotLeaderError) {
          this.dirty.set(ns, Date.now()); // deposed mid-pass: decided again on the next term
          continue;
        }
        this.log(`namespace ${ns}: ${apiMessage(err)}`, { level: 'warn', namespace: ns });
        setTimeout(() => this.enqueue(ns), 1_000);
      } finally {
        this.current = undefined;
        done();
      }
    }
  }

  /** Until woken, or `ms` passed (undefined: until woken). */
  private async sleep(ms: number | undefined): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    await new Promise<void>((resolve) => {
      this.wake = resolve;
      if (ms !== undefined) timer = setTimeout(resolve, ms);
    });
    clearTimeout(timer);
  }

  /** One pass over a namespace: observe, plan, act. */
  async reconcile(ns: string): Promise<void> {
    const options = { ...(this.settings.systemNamespace ? { systemNamespace: this.settings.systemNamespace } : {}), ...(this.settings.shard ? { shard: this.settings.shard } : {}) };
    const withTraffic = (observed: Observed, traffic: Observed['traffic']): Observed => (traffic ? { ...observed, traffic } : observed);
    // What the routes hold comes from their caches too: a change to a route's spec (a person's
    // edit, an executor's write) marks the namespace like any other change, so a pass that read a
    // route a moment before it changed is followed by one that reads it changed.
    let observed = this.observeNamespace(ns);
    let traffic = await this.observeTraffic(ns, observed);
    observed = withTraffic(observed, traffic);
    let plan = decideNamespace(observed, new Date(), options);
    // What the next pass cannot take back is decided on fresh reads (decisions/stage.ts
    // freshReads): the caches of different kinds may lag one another by a moment (a Stage's status
    // ahead of its new StageVersion, a usage not cached yet), and the routes' caches the routes.
    const fresh = { objects: false, routes: false };
    for (let need = freshReads(plan); (need.objects && !fresh.objects) || (need.routes && !fresh.routes); need = freshReads(plan)) {
      if (need.objects && !fresh.objects) {
        observed = withTraffic(await this.listNamespace(ns), traffic);
        fresh.objects = true;
      }
      if (need.routes && !fresh.routes) {
        traffic = await this.observeTraffic(ns, observed, { fresh: true });
        observed = withTraffic(observed, traffic);
        fresh.routes = true;
      }
      plan = decideNamespace(observed, new Date(), options);
    }
    // A drain ends with no change to announce it: the namespace is passed again then.
    if (plan.wakeAt !== undefined) this.enqueue(ns, Math.max(plan.wakeAt - Date.now(), 0));
    return this.act(ns, plan, observed);
  }

  /**
   * The namespace as the caches hold it. The apiserver validated every object against the CRDs
   * generated from the same zod schemas, so a cached object has the shape of its zod type.
   */
  private observeNamespace(namespace: string): Observed {
    const [stages, stageVersions, usages, activations] = KINDS.map((kind, i) => {
      const cached = this.informers.list(namespace, i);
      this.written.prune(kind, namespace, cached);
      return cached.map((object) => this.written.view(kind, object));
    });
    return { namespace, stages, stageVersions, usages, activations } as unknown as Observed;
  }

  /**
   * What the managed routes of the namespace's Stages hold; undefined while no registration is
   * cached. A route is read from its cache unless `fresh` (or not cached: another namespace not
   * watched, a kind not listed), else from the apiserver.
   */
  private async observeTraffic(ns: string, observed: Observed, how: { fresh?: boolean } = {}): Promise<Observed['traffic']> {
    const system = this.settings.systemNamespace ?? DEFAULT_SYSTEM_NAMESPACE;
    const registrations = this.registrations?.list(system) ?? [];
    const stages = observed.stages.filter((st) => !st.metadata.deletionTimestamp);
    // Registrations or plans not listed now (start-up, a re-list after a watch ended): what the
    // routes hold cannot be told, so every Stage's traffic is unknown and nothing is cleaned up on
    // the marks alone (a previous version's serving mark may still be on its way).
    if (!this.registrations?.synced || !this.plans?.synced) return new Map(stages.map((st) => [st.metadata.name!, undefined]));
    if (registrations.length === 0) return undefined;
    const cachedRoute = (kind: RouteKind, namespace: string, name: string) => this.informers.get(kind, namespace, name);
    // Every route the pass reads wakes this namespace from the moment it is read, whether it sends
    // a Stage traffic or not (an edit may make it): one in another namespace too.
    const readers = this.routeReaders;
    const routes = new (class extends Map<string, Promise<unknown>> {
      override set(key: string, read: Promise<unknown>) {
        readers.add(ns, key);
        return super.set(key, read);
      }
    })();
    const traffic = await observeTraffic(
      { kubeConfig: this.gate.kubeConfig(this.settings.kubeConfig), routes, ...(how.fresh ? {} : { cachedRoute }) },
      ns,
      stages,
      observed.stageVersions,
      registrations as unknown as ActivationTaskRegistrationResource[],
      this.plans.list(system) as unknown as ActivationExecutionPlanResource[],
      observed.activations,
    );
    this.routeReaders.note(ns, routes.keys());
    return traffic;
  }

  /** The namespace as the apiserver lists it now. */
  private async listNamespace(namespace: string): Promise<Observed> {
    const [stages, stageVersions, usages, activations] = await Promise.all(KINDS.map((kind) => this.objects.list(kind, namespace)));
    return { namespace, stages, stageVersions, usages, activations } as unknown as Observed;
  }

  /** The Events of an object this controller created (docs/events.md); best effort, in the background. */
  private recordCreated(ns: string, created: CustomObject): void {
    const stageUid = created.metadata.ownerReferences?.find((owner) => owner.kind === 'Stage')?.uid;
    let events: EventSpec[] = [];
    if (created.kind === 'StageVersion') events = stageVersionCreatedEvents({ name: created.metadata.name, stage: created.spec.stage, revision: created.spec.revision, vector: created.spec.vector });
    if (created.kind === 'VectorActivation') events = activationCreatedEvents({ name: created.metadata.name, stage: created.spec.stage, stageVersion: created.spec.stageVersion });
    const stage = created.spec?.stage as string | undefined;
    // Only a create that made the object says so: no look-up for a repeat is needed.
    sendEvents(this.event, ns, events, { ...(stage ? { [`Stage/${stage}`]: stageUid } : {}), [`${created.kind}/${created.metadata.name}`]: created.metadata.uid }, this.log, { once: true });
  }

  /** A pass in a second, for a change no watch event will announce. */
  private passAgainSoon(ns: string): void {
    setTimeout(() => !this.stopped && this.enqueue(ns), 1_000).unref();
  }

  /** Performs a plan in its order; every action is safe to repeat, status writes come last. */
  private async act(ns: string, plan: NamespaceDecision, observed: Observed): Promise<void> {
    /** The resourceVersion this pass's metadata writes left, by kind/name: a status written after is noted over it. */
    const patched = new Map<string, string>();
    for (const metadataPatch of plan.metadata) {
      this.gate.fence(`patching ${metadataPatch.kind} ${ns}/${metadataPatch.name}`, ns);
      this.log(metadataPatch.why, { namespace: ns });
      try {
        const written = await this.objects.mergeMetadataOf(metadataPatch.kind, ns, metadataPatch.name, { ...metadataPatch.metadata, ...(metadataPatch.resourceVersion ? { resourceVersion: metadataPatch.resourceVersion } : {}) });
        if (written?.metadata.resourceVersion) patched.set(`${metadataPatch.kind}/${metadataPatch.name}`, written.metadata.resourceVersion);
      } catch (err) {
        if (apiStatus(err) !== 409) throw err;
        // Changed since the read, maybe by a status write that marks no pass: decide again soon.
        this.passAgainSoon(ns);
      }
    }
    for (const creation of plan.creates) {
      this.gate.fence(`creating ${creation.object.kind} ${ns}/${creation.object.metadata.name}`, ns);
      this.log(creation.why, { namespace: ns });
      const { object, created } = await this.objects.create(creation.object as CustomObject);
      if (created) {
        // Said once, when done: a resync or a restarted controller finds it done and says nothing.
        this.recordCreated(ns, object);
      }
      else if (creation.object.kind === 'StageVersion') {
        // A StageVersion the cache does not hold yet: its watch event brings a pass that sees it,
        // and decides again before pointing a usage at it.
        this.log(`StageVersion ${ns}/${creation.object.metadata.name} exists already; planning again once it is cached`, { namespace: ns });
        this.passAgainSoon(ns);
        return;
      } else this.log(`${creation.object.kind} ${ns}/${creation.object.metadata.name} exists already`, { namespace: ns });
    }
    for (const specPatch of plan.specs) {
      this.gate.fence(`patching ${specPatch.kind} ${ns}/${specPatch.name}`, ns);
      this.log(specPatch.why, { namespace: ns });
      await this.objects.mergeSpec(specPatch.kind, ns, specPatch.name, specPatch.spec);
    }
    for (const deletion of plan.deletes) {
      this.gate.fence(`deleting ${deletion.kind} ${ns}/${deletion.name}`, ns);
      this.log(deletion.why, { namespace: ns });
      try {
        await this.objects.delete(deletion.kind, ns, deletion.name, deletion.uid);
        const stage = observed.stageVersions.find((sv) => sv.metadata.name === deletion.name)?.spec.stage;
        const stageUid = observed.stages.find((st) => st.metadata.name === stage)?.metadata.uid;
        if (stage) sendEvents(this.event, ns, cleanedUpEvents({ name: deletion.name, stage }, deletion.why), { [`StageVersion/${deletion.name}`]: deletion.uid, [`Stage/${stage}`]: stageUid }, this.log);
      } catch (err) {
        // Refused by the admission policy (an activation marked it since the read): decide again later.
        if (apiStatus(err) !== 403 && apiStatus(err) !== 422) throw err;
        this.log(`deleting ${deletion.kind} ${ns}/${deletion.name} was refused: ${apiMessage(err)}`, { level: 'warn', namespace: ns });
      }
    }
    // Status alone never needs another pass.
    const objectsOf = { Stage: observed.stages, StageVersion: observed.stageVersions, StageVersionUsage: observed.usages };
    for (const statusPatch of plan.statuses) {
      this.gate.fence(`the status of ${statusPatch.kind} ${ns}/${statusPatch.name}`, ns);
      await this.objects.patchStatus(statusPatch.kind, ns, statusPatch.name, statusPatch.patch);
      const over = (objectsOf[statusPatch.kind] as { metadata: { name?: string; resourceVersion?: string } }[]).find((cached) => cached.metadata.name === statusPatch.name);
      const after = patched.get(`${statusPatch.kind}/${statusPatch.name}`);
      if (over) this.written.note(statusPatch.kind, after ? { metadata: { ...over.metadata, resourceVersion: after } } : over, statusPatch.patch);
    }
  }
}
