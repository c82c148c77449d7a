/**
 * The activation controller (the "watcher" role): informers on VectorActivations keep one
 * activation workflow per unfinished object (workflow id from namespace, name and uid) and hand the
 * request annotations to it as Updates; informers on Stages tell the workflows of a Stage that is
 * deleted (or being deleted) at once, which then stop and end StageDeleted. Level-triggered: each
 * event decides for its object (decide-object.ts) and asks for its namespace's pass, which observes
 * the namespace (observe.ts), plans it (plan.ts: the Stage limit, a burst superseded before it
 * starts, the burst's wait) and acts (act.ts). A resync or a restart simply decides again: a
 * finished object is never started again unless a retry is asked for, and a workflow that closed
 * without finishing its object is found on the periodic sweep and its object brought back to truth.
 */
import { coreDeps } from '../../activities/deps.js';
import { isFinal } from '../../decisions/activation.js';
import { BURST_QUIET_MS, BURST_SETTLE_MS } from '../../decisions/supersede.js';
import { apiMessage } from '../../k8s/client.js';
import { NotLeaderError } from '../../k8s/leader-election.js';
import { stageOf, workflowIdOf, type CachedActivation } from '../../shared/cached-activation.js';
import { componentLogger, type LogFn } from '../../telemetry/log.js';
import { addWatchedSource, observeEventLag } from '../../telemetry/metrics.js';
import { NamespacedInformers } from '../informers.js';
import { ReconcileLoop } from '../reconcile-loop.js';
import { ActivationActions } from './act.js';
import { PassStates } from './pass-states.js';
import { readSupersession, slim, slimStage, snapshot, watched } from './observe.js';
import { decidePass, type PassSnapshot } from './decide-pass.js';
import { handOver, decideDeleted, decideObject, type CachedStage } from './decide-object.js';
import { carryOut } from './requests.js';
import { StageDeletionNotices } from './stage-deletions.js';
import { ClosedRunSweep } from './sweep.js';
import type { ActivationControllerOptions } from './options.js';

export type { ActivationControllerOptions };

/** How long a stop waits for the passes, starts and writes in flight. */
const STOP_GRACE_MS = 10_000;

export class ActivationController {
  private readonly informers: NamespacedInformers;
  private readonly actions: ActivationActions;
  private readonly passStates = new PassStates();
  /** The latest of every watched object, by uid: what the passes and the sweep read. */
  private readonly cache = new Map<string, CachedActivation>();
  /** Requests being carried out (decide-object.ts RequestStep keys): a repeated event does not repeat one. */
  private readonly inFlight = new Set<string>();
  /** The namespaces' passes: one at a time per namespace, namespaces side by side. */
  private readonly passes: ReconcileLoop;
  /** Deletions seen while not acting, by workflow id: the leader may have died before it saw them. */
  private standbyDeletions = new Map<string, { at: number }>();
  private readonly stageDeletions: StageDeletionNotices;
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
      keepsDeletion: (workflowId) => this.standbyDeletions.has(workflowId),
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
        if (obj.kind === 'Stage') this.stageDeletions.changed(type, obj as CachedStage);
        else if (type === 'DELETED') this.deleted(obj as CachedActivation);
        else this.observe(obj as CachedActivation);
      },
      onForget: (ns) => this.forget(ns),
      slim: (obj) => (obj.kind === 'Stage' ? slimStage(obj) : slim(obj as CachedActivation)),
      log: this.log,
    });
    const { gate } = this.informers;
    this.actions = new ActivationActions({
      ...settings,
      gate,
      deps: coreDeps(this.informers.kubeConfig(), settings.systemNamespace ?? '', this.log),
      passStates: this.passStates,
      log: this.log,
      pass: (ns) => this.schedulePass(ns),
    });
    this.sweep = new ClosedRunSweep({
      client: settings.client,
      informers: this.informers,
      actions: this.actions,
      passStates: this.passStates,
      activations: () => this.cache.values(),
      beforeSweep: () => this.stageDeletions.decideDeleting(),
      reconcile: (activation) => this.reconcile(activation),
      schedulePass: (ns) => this.schedulePass(ns),
      stopped: () => this.stopped,
      log: this.log,
    });
    this.stageDeletions = new StageDeletionNotices({
      informers: this.informers,
      actions: this.actions,
      activations: () => this.cache.values(),
      stopped: () => this.stopped,
      log: this.log,
    });
    // A standby, or a shard that does not serve the namespace (yet), keeps its passes queued: it
    // decides again for everything when it takes over (tookOver, serve).
    this.passes = new ReconcileLoop({
      reconcile: (ns) => this.actions.work.run(ns, () => this.pass(ns)),
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
    await this.informers.start();
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
    await this.informers.stop();
    // Its caller closes the Temporal connection next: no start or Update may still be on its way.
    const ended = await this.passes.stop(STOP_GRACE_MS);
    let timer: NodeJS.Timeout | undefined;
    const outOfTime = new Promise<false>((resolve) => (timer = setTimeout(() => resolve(false), STOP_GRACE_MS)));
    const settled = await Promise.race([this.actions.work.settled().then(() => true), outOfTime]);
    clearTimeout(timer);
    if (!ended || !settled) this.log(`stopped with work still in flight after ${STOP_GRACE_MS} ms`, { level: 'warn' });
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
    this.stageDeletions.takeOver();
    for (const activation of this.cache.values()) void this.reconcile(activation);
    this.passes.poke();
    void this.sweep.run();
  }

  /** Deletions seen while not acting, in the namespaces it acts in now, go to their workflows. */
  private handDeletionsOver(): void {
    const serves = (ns: string) => this.informers.serves(ns);
    const deletions = handOver(this.standbyDeletions, Date.now(), serves);
    this.standbyDeletions = deletions.keep;
    for (const [workflowId] of deletions.signal) void this.actions.signalDeleted(workflowId);
    this.stageDeletions.handOver(serves);
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
    const decision = decideDeleted(cachedActivation, acting);
    // A standby, or a shard that does not serve the namespace (yet): whoever serves it next hands it over.
    if (decision === 'later') this.standbyDeletions.set(workflowIdOf(cachedActivation), { at: Date.now() });
    if (decision === 'signal') void this.actions.signalDeleted(workflowIdOf(cachedActivation));
  }

  /** Acts on what decide-object.ts says for the object; safe to call any number of times. */
  private async reconcile(cachedActivation: CachedActivation): Promise<void> {
    const ns = cachedActivation.metadata!.namespace!;
    if (!this.informers.acting(ns)) return; // a standby only keeps its cache; it decides again when it takes over
    return this.actions.work.run(ns, async () => {
      const plan = decideObject(cachedActivation, this.passStates.of(ns).running);
      if (plan.pass) this.schedulePass(ns);
      for (const step of plan.requests) {
        if (this.inFlight.has(step.key)) continue;
        this.inFlight.add(step.key);
        try {
          await carryOut(this.actions, cachedActivation, step);
        } catch (err) {
          // Deposed between the decision and a write: the new leader decides again.
          if (!(err instanceof NotLeaderError))
            this.log(`VectorActivation ${ns}/${cachedActivation.metadata!.name}: ${apiMessage(err)}`, {
              level: 'warn',
              ...this.actions.about(cachedActivation),
            });
        } finally {
          this.inFlight.delete(step.key);
        }
      }
    });
  }

  /**
   * Queues the namespace's pass (the only path that starts a workflow); one queued while it runs
   * follows it. Events that arrive together (an initial list, one read of the watch stream) go into
   * one pass: a burst seen whole supersedes its older activations before they start.
   */
  private schedulePass(namespace: string, delayMs = 0): void {
    this.passes.enqueue(namespace, delayMs);
  }

  /** One pass over a namespace: observe, plan, act. */
  private async pass(namespace: string): Promise<void> {
    let snap: PassSnapshot = snapshot(this.cache.values(), namespace, performance.now(), {
      ...(this.settings.stagesPerNamespace ? { limit: this.settings.stagesPerNamespace } : {}),
      settleMs: this.settings.burstSettleMs ?? BURST_SETTLE_MS,
      quietMs: this.settings.burstQuietMs ?? BURST_QUIET_MS,
    });
    let plan = decidePass(snap, this.passStates.of(namespace), performance.now());
    if (plan.read.length > 0) {
      // A burst: its Stages and StageVersions tell the losers. Unreadable, everything starts and the lock supersedes.
      const supersession = await readSupersession(this.actions.options.deps.objects, namespace, plan.read).catch(
        (err: unknown) => {
          this.log(`superseding a burst in ${namespace}: ${apiMessage(err)}; starting every activation`, {
            level: 'warn',
            namespace,
          });
          return 'unreadable' as const;
        },
      );
      snap = { ...snap, supersession };
      plan = decidePass(snap, this.passStates.of(namespace), performance.now());
    }
    this.passStates.apply(namespace, plan.nextState);
    if (plan.wakeAt !== undefined) this.schedulePass(namespace, Math.max(plan.wakeAt - performance.now(), 0) + 1);
    await this.actions.pass(namespace, plan);
  }
}
