/**
 * The activation controller (the "watcher" role): informers on VectorActivations keep one
 * activation workflow per unfinished object (workflow id from namespace, name and uid) and hand the
 * request annotations to it as Updates; informers on Stages tell the workflows of a Stage that is
 * deleted (or being deleted) at once, which then stop and end StageDeleted. Level-triggered: each
 * event decides for its object (decide-object.ts) and asks for its namespace's pass, which observes
 * the namespace (observe.ts), decides for it (decide-pass.ts: the Stage limit, a burst superseded
 * before it starts, the burst's wait) and acts (namespace-pass.ts, act.ts). A resync or a restart
 * simply decides again: a finished object is never started again unless a retry is asked for, and a
 * workflow that closed without finishing its object is found on the periodic sweep and its object
 * brought back to truth.
 */
import { coreDeps } from '../../activities/deps.js';
import { isFinal } from '../../decisions/activation.js';
import { apiMessage } from '../../k8s/client.js';
import { stageOf, workflowIdOf, type CachedActivation } from '../../shared/cached-activation.js';
import { componentLogger, type LogFn } from '../../telemetry/log.js';
import { addWatchedSource, observeEventLag } from '../../telemetry/metrics.js';
import { NamespacedInformers } from '../informers.js';
import { ReconcileLoop, settledWithin } from '../reconcile-loop.js';
import { ActivationActions } from './act.js';
import { PassStates } from './pass-states.js';
import { slim, slimStage, watched } from './observe.js';
import type { CachedStage } from './decide-object.js';
import { NamespacePass } from './namespace-pass.js';
import { ObjectReconciler } from './object-reconcile.js';
import { DeletionNotices } from './deletion-notices.js';
import { ClosedRunSweep } from './sweep.js';
import type { ActivationControllerOptions } from './options.js';
import { CoreRolloutWatch } from '../../worker/core-rollout.js';

export type { ActivationControllerOptions };

/** How long a stop waits for the passes, starts and writes in flight. */
const STOP_GRACE_MS = 10_000;

export class ActivationController {
  /** The core rollout in the system namespace, watched (absent without a system namespace: no canary). */
  private readonly rolloutWatch: CoreRolloutWatch | undefined;
  private readonly informers: NamespacedInformers;
  private readonly actions: ActivationActions;
  private readonly namespacePass: NamespacePass;
  private readonly passStates = new PassStates();
  /** The latest of every watched object, by uid: what the passes and the sweep read. */
  private readonly cache = new Map<string, CachedActivation>();
  private readonly objectReconciler: ObjectReconciler;
  /** The namespaces' passes: one at a time per namespace, namespaces side by side. */
  private readonly passes: ReconcileLoop;
  private readonly deletionNotices: DeletionNotices;
  private readonly log: LogFn;
  private startedAt = Date.now();
  private stopped = false;
  private timer?: NodeJS.Timeout;
  private removeWatchedSource?: () => void;
  private readonly sweep: ClosedRunSweep;

  /**
   * What the controller holds right now, read-only (for tools and tests): whether it last saw itself
   * acting, whether an activation (by uid) is in its cache, and whether a deletion it saw as a
   * standby waits (by workflow id) to be handed over at a takeover.
   */
  standing(): { seenActing: boolean; holds(uid: string): boolean; keepsDeletion(workflowId: string): boolean } {
    return {
      seenActing: this.informers.gate.seenActing,
      holds: (uid) => this.cache.has(uid),
      keepsDeletion: (workflowId) => this.deletionNotices.keeps(workflowId),
    };
  }

  constructor(private readonly settings: ActivationControllerOptions) {
    this.log = settings.log ?? componentLogger('watcher').fn();
    this.informers = new NamespacedInformers({
      kubeConfig: settings.kubeConfig,
      // STAGE_KIND (stage-deletions.ts) is the index of 'Stage' here.
      kinds: ['VectorActivation', 'Stage'],
      ...(settings.namespaces ? { namespaces: settings.namespaces } : {}),
      ...(settings.leadership ? { leadership: settings.leadership } : {}),
      ...(settings.sharded ? { sharded: true } : {}),
      ...(settings.systemNamespace ? { systemNamespace: settings.systemNamespace } : {}),
      onChange: (type, obj) => {
        if (obj.kind === 'Stage') this.deletionNotices.changed(type, obj as CachedStage);
        else if (type === 'DELETED') this.deleted(obj as CachedActivation);
        else this.observe(obj as CachedActivation);
      },
      onForget: (ns) => this.forget(ns),
      slim: (obj) => (obj.kind === 'Stage' ? slimStage(obj) : slim(obj as CachedActivation)),
      log: this.log,
    });
    const { gate } = this.informers;
    if (settings.systemNamespace)
      this.rolloutWatch = new CoreRolloutWatch(settings.kubeConfig, settings.systemNamespace, this.log);
    this.actions = new ActivationActions({
      ...settings,
      ...(this.rolloutWatch ? { rolloutWatch: this.rolloutWatch } : {}),
      gate,
      deps: coreDeps(this.informers.kubeConfig(), settings.systemNamespace ?? '', this.log),
      passStates: this.passStates,
      log: this.log,
      pass: (ns) => this.schedulePass(ns),
    });
    // What the parts of the controller share; each takes what it needs.
    const shared = {
      informers: this.informers,
      actions: this.actions,
      passStates: this.passStates,
      activations: () => this.cache.values(),
      schedulePass: (ns: string, delayMs?: number) => this.schedulePass(ns, delayMs),
      stopped: () => this.stopped,
      log: this.log,
    };
    this.objectReconciler = new ObjectReconciler(shared);
    this.namespacePass = new NamespacePass({ ...shared, settings });
    this.deletionNotices = new DeletionNotices(shared);
    this.sweep = new ClosedRunSweep({
      ...shared,
      client: settings.client,
      beforeSweep: () => this.deletionNotices.decideDeleting(),
      reconcile: (activation) => this.reconcile(activation),
    });
    // A standby, or a shard that does not serve the namespace (yet), keeps its passes queued: it
    // decides again for everything when it takes over (tookOver, serve).
    this.passes = new ReconcileLoop({
      reconcile: (ns) => this.actions.work.run(ns, () => this.namespacePass.run(ns)),
      ready: (ns) => this.informers.acting(ns),
      failed: (ns, err) => {
        this.log(`pass in ${ns}: ${apiMessage(err)}`, { level: 'warn', namespace: ns });
        return 'backoff';
      },
      concurrency: Infinity,
    });
  }

  /** True once every informer has listed, and while the last list of each succeeded (readiness). */
  isSynced(): boolean {
    return !this.stopped && this.informers.isSynced();
  }

  async start(): Promise<void> {
    this.startedAt = Date.now();
    await Promise.all([this.informers.start(), this.rolloutWatch?.start()]);
    this.removeWatchedSource = addWatchedSource(() => watched(this.cache.values()));
    this.timer = setInterval(() => void this.sweep.run(), this.settings.checkIntervalMs ?? 30_000);
    this.informers.gate.start((identity) => this.tookOver(identity));
  }

  /** Stops watching and deciding; waits for the starts and writes in flight at most STOP_GRACE_MS. */
  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.removeWatchedSource?.();
    this.informers.gate.stop();
    await Promise.all([this.informers.stop(), this.rolloutWatch?.stop()]);
    // Its caller closes the Temporal connection next: no start or Update may still be on its way.
    // No pass starts from now on; those running are work in flight, which the wait below covers.
    void this.passes.stop(0);
    if (!(await settledWithin(this.actions.work.settled(), STOP_GRACE_MS)))
      this.log(`stopped with work still in flight after ${STOP_GRACE_MS} ms`, { level: 'warn' });
  }

  /** Sharded: lists and watches exactly these namespaces. */
  setNamespaces(namespaces: ReadonlySet<string>): Promise<void> {
    return this.informers.setNamespaces(namespaces);
  }

  /** Sharded: acts in these namespaces from now on, deciding again for what it has cached there. */
  serve(namespaces: readonly string[]): void {
    this.informers.serve(namespaces);
    const added = new Set(namespaces);
    if (this.informers.gate.acting()) this.handDeletionsOver();
    for (const activation of this.cache.values())
      if (added.has(activation.metadata!.namespace!)) void this.reconcile(activation);
    this.passes.poke();
  }

  /** Sharded: stops acting in these namespaces; resolves once no write there is in flight. */
  async drop(namespaces: readonly string[]): Promise<void> {
    this.informers.unserve(namespaces);
    await this.actions.work.settled(namespaces);
    // Whoever serves them next asks Temporal again (a start finds a running workflow by its id).
    for (const ns of namespaces) this.passStates.dropped(ns);
  }

  /** A namespace left: its cache and memory go. */
  private forget(namespace: string): void {
    for (const [uid, activation] of this.cache)
      if (activation.metadata?.namespace === namespace) this.cache.delete(uid);
    this.passStates.forget(namespace);
  }

  /** Level-triggered takeover: forget what the previous term knew and decide again for every cached object. */
  private tookOver(identity: string): void {
    if (this.stopped) return;
    this.log(`${identity} leads: deciding again for ${this.cache.size} cached VectorActivations`);
    this.passStates.takeover();
    this.handDeletionsOver();
    this.deletionNotices.takeOver();
    for (const activation of this.cache.values()) void this.reconcile(activation);
    this.passes.poke();
    void this.sweep.run();
  }

  /** Deletions seen while not acting, in the namespaces it acts in now, go to their workflows. */
  private handDeletionsOver(): void {
    this.deletionNotices.handOver((ns) => this.informers.serves(ns));
  }

  private observe(cachedActivation: CachedActivation): void {
    observeEventLag(
      'watcher',
      'VectorActivation',
      cachedActivation as Parameters<typeof observeEventLag>[2],
      this.startedAt,
    );
    const ns = cachedActivation.metadata!.namespace!;
    if (!this.cache.has(cachedActivation.metadata!.uid!) && !isFinal(cachedActivation.status?.phase))
      this.passStates.arrived(ns, stageOf(cachedActivation), performance.now());
    this.cache.set(cachedActivation.metadata!.uid!, cachedActivation);
    void this.reconcile(cachedActivation);
    // An activation that ended may free a place for a held one.
    if (this.settings.stagesPerNamespace && isFinal(cachedActivation.status?.phase)) this.schedulePass(ns);
  }

  private deleted(cachedActivation: CachedActivation): void {
    const ns = cachedActivation.metadata!.namespace!;
    this.cache.delete(cachedActivation.metadata!.uid!);
    const acting = this.informers.acting(ns);
    if (this.settings.stagesPerNamespace && acting) this.schedulePass(ns);
    this.passStates.deleted(ns, cachedActivation.metadata!.uid!, workflowIdOf(cachedActivation));
    this.deletionNotices.activationDeleted(cachedActivation, acting);
  }

  /** Acts on what decide-object.ts says for the object; safe to call any number of times. */
  private reconcile(activation: CachedActivation): Promise<void> {
    return this.objectReconciler.reconcile(activation);
  }

  /**
   * Queues the namespace's pass (the only path that starts a workflow); one queued while it runs
   * follows it. Events that arrive together (an initial list, one read of the watch stream) go into
   * one pass: a burst seen whole supersedes its older activations before they start.
   */
  private schedulePass(namespace: string, delayMs = 0): void {
    this.passes.enqueue(namespace, delayMs);
  }
}
