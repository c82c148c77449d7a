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
import type { StageDeletion } from '../../shared/activation.js';
import { stageOf, workflowIdOf, type CachedActivation } from '../../shared/cached-activation.js';
import { componentLogger, type LogFn } from '../../telemetry/log.js';
import { addWatchedSource, observeEventLag } from '../../telemetry/metrics.js';
import { NamespacedInformers } from '../informers.js';
import { ActivationActions } from './act.js';
import { PassStates } from './pass-states.js';
import { closedSince, readSupersession, slim, slimStage, snapshot, watched } from './observe.js';
import { decidePass, type PassSnapshot } from './decide-pass.js';
import { fullSweep, handOver, decideDeleted, decideObject, decideStageEvent, sweepStep, type CachedStage } from './decide-object.js';
import { carryOut } from './requests.js';
import type { ActivationControllerOptions } from './options.js';

export type { ActivationControllerOptions };

/** The visibility query looks back this much further than the sweep before: its records may lag. */
const CLOSED_LOOKBACK_MS = 60_000;
/** Where the informers' kinds list Stages (the constructor's `kinds`). */
const STAGE_KIND = 1;
/** How often a Stage's deletion is signalled to a workflow Temporal could not be asked for, a second more each time. */
const STAGE_NOTICE_ATTEMPTS = 5;

export class ActivationController {
  private readonly informers: NamespacedInformers;
  private readonly actions: ActivationActions;
  private readonly memory = new PassStates();
  /** The latest of every watched object, by uid: what the passes and the sweep read. */
  private readonly cache = new Map<string, CachedActivation>();
  /** Requests being carried out (decide-object.ts RequestStep keys): a repeated event does not repeat one. */
  private readonly inFlight = new Set<string>();
  /** Per namespace, while its pass runs: whether another must follow it. */
  private readonly passes = new Map<string, { again: boolean }>();
  /** Deletions seen while not acting, by workflow id: the leader may have died before it saw them. */
  private standbyDeletions = new Map<string, { at: number }>();
  /** Stage deletions seen while not acting, by the workflow id of each activation to tell. */
  private standbyStageDeletions = new Map<string, { at: number; notice: StageDeletion }>();
  /**
   * Uids of the Stages whose deletion their activations were told of (or are being told): a deleting
   * Stage's every change does not tell them again. A uid leaves it when the telling failed, so the
   * next change or sweep tells them again; a takeover forgets it all and decides again.
   */
  private readonly toldStages = new Set<string>();
  private readonly log: LogFn;
  private startedAt = Date.now();
  private stopped = false;
  private timer?: NodeJS.Timeout;
  private removeWatchedSource?: () => void;
  /** The sweeps of unfinished activations' workflows: how many, and when the last began. */
  private sweeps = 0;
  private sweeping = false;
  private lastSweep: number | undefined;

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
      // STAGE_KIND is the index of 'Stage' here.
      kinds: ['VectorActivation', 'Stage'],
      ...(settings.namespaces ? { namespaces: settings.namespaces } : {}),
      ...(settings.leadership ? { leadership: settings.leadership } : {}),
      ...(settings.sharded ? { sharded: true } : {}),
      ...(settings.systemNamespace ? { systemNamespace: settings.systemNamespace } : {}),
      onChange: (type, obj) => {
        if (obj.kind === 'Stage') this.stageChanged(type, obj as CachedStage);
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
      memory: this.memory,
      log: this.log,
      pass: (ns) => this.schedulePass(ns),
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
    this.timer = setInterval(() => void this.sweep(), this.settings.checkIntervalMs ?? 30_000);
    this.informers.gate.start((identity) => this.tookOver(identity));
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.removeWatchedSource?.();
    this.informers.gate.stop();
    await this.informers.stop();
    // Its caller closes the Temporal connection next: no start or Update may still be on its way.
    await this.actions.work.settled();
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
    for (const activation of this.cache.values()) if (added.has(activation.metadata!.namespace!)) void this.reconcile(activation);
  }

  /** Sharded: stops acting in these namespaces; resolves once no write there is in flight. */
  async drop(namespaces: readonly string[]): Promise<void> {
    this.informers.unserve(namespaces);
    await this.actions.work.settled(namespaces);
    // Whoever serves them next asks Temporal again (a start finds a running workflow by its id).
    for (const ns of namespaces) this.memory.dropped(ns);
  }

  /** A namespace left: its cache and memory go. */
  private forget(namespace: string): void {
    for (const [uid, activation] of this.cache) if (activation.metadata?.namespace === namespace) this.cache.delete(uid);
    this.memory.forget(namespace);
  }

  /** Level-triggered takeover: forget what the previous term knew and decide again for every cached object. */
  private tookOver(identity: string): void {
    if (this.stopped) return;
    this.log(`${identity} leads: deciding again for ${this.cache.size} cached VectorActivations`);
    this.memory.takeover();
    this.handDeletionsOver();
    this.toldStages.clear();
    this.decideDeletingStages();
    for (const activation of this.cache.values()) void this.reconcile(activation);
    void this.sweep();
  }

  /** Deletions seen while not acting, in the namespaces it acts in now, go to their workflows. */
  private handDeletionsOver(): void {
    const serves = (ns: string) => this.informers.serves(ns);
    const deletions = handOver(this.standbyDeletions, Date.now(), serves);
    this.standbyDeletions = deletions.keep;
    for (const [workflowId] of deletions.signal) void this.actions.signalDeleted(workflowId);
    const stageDeletions = handOver(this.standbyStageDeletions, Date.now(), serves);
    this.standbyStageDeletions = stageDeletions.keep;
    for (const [workflowId, { notice }] of stageDeletions.signal) void this.actions.signalStageDeleted(workflowId, notice);
  }

  /** A Stage deleted, or being deleted: its unfinished activations' workflows are told, once it worked. */
  private stageChanged(type: 'ADDED' | 'MODIFIED' | 'DELETED', stage: CachedStage): void {
    const plan = decideStageEvent(type, stage, this.cache.values(), this.toldStages);
    const uid = stage.metadata?.uid;
    // A Stage gone sends no more events: its telling runs to its end (or its attempts') below.
    if (uid && type === 'DELETED') this.toldStages.delete(uid);
    if (!plan) return;
    const { notice, workflowIds } = plan;
    // A standby, or a shard that does not serve the namespace (yet): whoever serves it next tells them.
    if (!this.informers.acting(notice.namespace)) {
      for (const workflowId of workflowIds) this.standbyStageDeletions.set(workflowId, { at: Date.now(), notice });
      return;
    }
    if (workflowIds.length === 0) return;
    if (uid && type !== 'DELETED') this.toldStages.add(uid);
    this.log(`Stage ${notice.namespace}/${notice.stage} is ${notice.deleting ? 'being ' : ''}deleted: telling ${workflowIds.length} unfinished activation(s)`, { namespace: notice.namespace, stage: notice.stage });
    void this.tell(notice, workflowIds).then((told) => {
      if (!told && uid) this.toldStages.delete(uid);
    });
  }

  /** Signals the notice to each workflow, again (a bounded number of times) to those Temporal could not be asked for; true once all were told. */
  private async tell(notice: StageDeletion, workflowIds: readonly string[]): Promise<boolean> {
    let left = [...workflowIds];
    for (let attempt = 1; left.length > 0 && attempt <= STAGE_NOTICE_ATTEMPTS && !this.stopped; attempt++) {
      if (attempt > 1) await new Promise((resolve) => setTimeout(resolve, (attempt - 1) * 1_000).unref());
      const told = await Promise.all(left.map((workflowId) => this.actions.signalStageDeleted(workflowId, notice)));
      left = left.filter((_, i) => !told[i]);
    }
    if (left.length > 0 && !this.stopped) this.log(`Stage ${notice.namespace}/${notice.stage} is deleted: ${left.length} workflow(s) could not be told; each finds it before its next route write`, { level: 'warn', namespace: notice.namespace });
    return left.length === 0;
  }

  /** Every cached Stage being deleted, decided again (after a takeover, and at each sweep for those not told yet). */
  private decideDeletingStages(): void {
    for (const ns of this.informers.namespaces()) {
      for (const st of this.informers.list(ns, STAGE_KIND) as CachedStage[]) if (st.metadata?.deletionTimestamp) this.stageChanged('MODIFIED', st);
    }
  }

  private observe(cachedActivation: CachedActivation): void {
    observeEventLag('watcher', 'VectorActivation', cachedActivation as Parameters<typeof observeEventLag>[2], this.startedAt);
    const ns = cachedActivation.metadata!.namespace!;
    if (!this.cache.has(cachedActivation.metadata!.uid!) && !isFinal(cachedActivation.status?.phase)) this.memory.arrived(ns, stageOf(cachedActivation), performance.now());
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
    this.memory.deleted(ns, cachedActivation.metadata!.uid!, workflowIdOf(cachedActivation));
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
      const plan = decideObject(cachedActivation, this.memory.of(ns).running);
      if (plan.pass) this.schedulePass(ns);
      for (const step of plan.requests) {
        if (this.inFlight.has(step.key)) continue;
        this.inFlight.add(step.key);
        try {
          await carryOut(this.actions, cachedActivation, step);
        } catch (err) {
          // Deposed between the decision and a write: the new leader decides again.
          if (!(err instanceof NotLeaderError)) this.log(`VectorActivation ${ns}/${cachedActivation.metadata!.name}: ${apiMessage(err)}`, { level: 'warn', ...this.actions.about(cachedActivation) });
        } finally {
          this.inFlight.delete(step.key);
        }
      }
    });
  }

  /** Runs the namespace's pass (the only path that starts a workflow), or asks the running one to run once more. */
  private schedulePass(namespace: string): void {
    const running = this.passes.get(namespace);
    if (running) {
      running.again = true;
      return;
    }
    const state = { again: true };
    this.passes.set(namespace, state);
    void this.actions.work.run(namespace, async () => {
      try {
        // Events that arrive together (an initial list, one read of the watch stream) go into one
        // pass: a burst seen whole supersedes its older activations before they start.
        await new Promise((resolve) => setImmediate(resolve));
        while (state.again && !this.stopped && this.informers.acting(namespace)) {
          state.again = false;
          await this.pass(namespace).catch((err: unknown) => this.log(`pass in ${namespace}: ${apiMessage(err)}`, { level: 'warn', namespace }));
        }
      } finally {
        this.passes.delete(namespace);
      }
    });
  }

  /** One pass over a namespace: observe, plan, act. */
  private async pass(namespace: string): Promise<void> {
    let snap: PassSnapshot = snapshot(this.cache.values(), namespace, performance.now(), {
      ...(this.settings.stagesPerNamespace ? { limit: this.settings.stagesPerNamespace } : {}),
      settleMs: this.settings.burstSettleMs ?? BURST_SETTLE_MS,
      quietMs: this.settings.burstQuietMs ?? BURST_QUIET_MS,
    });
    let plan = decidePass(snap, this.memory.of(namespace), performance.now());
    if (plan.read.length > 0) {
      // A burst: its Stages and StageVersions tell the losers. Unreadable, everything starts and the lock supersedes.
      const supersession = await readSupersession(this.actions.options.deps.objects, namespace, plan.read).catch((err: unknown) => {
        this.log(`superseding a burst in ${namespace}: ${apiMessage(err)}; starting every activation`, { level: 'warn', namespace });
        return 'unreadable' as const;
      });
      snap = { ...snap, supersession };
      plan = decidePass(snap, this.memory.of(namespace), performance.now());
    }
    this.memory.apply(namespace, plan.memory);
    if (plan.wakeAt !== undefined) setTimeout(() => this.schedulePass(namespace), Math.max(plan.wakeAt - performance.now(), 0) + 1).unref();
    await this.actions.pass(namespace, plan);
  }

  /**
   * The periodic sweep: an unfinished object whose workflow closed is closed out. One at a time: a
   * sweep that outlasts the interval (thousands of describes) is not started again beside itself.
   */
  private async sweep(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      await this.sweepOnce();
    } finally {
      this.sweeping = false;
    }
  }

  private async sweepOnce(): Promise<void> {
    if (this.informers.gate.acting()) this.decideDeletingStages();
    const since = this.lastSweep;
    this.lastSweep = Date.now();
    const full = fullSweep(this.sweeps++, since);
    // undefined: every workflow is looked at (a full sweep, or the query failed).
    const closed = full ? undefined : await closedSince(this.settings.client, since! - CLOSED_LOOKBACK_MS).catch(() => undefined);
    for (const activation of this.cache.values()) {
      if (this.stopped || !this.informers.gate.acting()) return;
      const ns = activation.metadata!.namespace!;
      if (!this.informers.acting(ns)) continue;
      const step = sweepStep(activation, this.memory.of(ns).running, closed);
      if (step === 'reconcile') void this.reconcile(activation);
      if (step === 'pass') this.schedulePass(ns);
      if (step !== 'check') continue;
      await this.actions.work.run(ns, () => this.actions.checkClosed(activation)).catch((err: unknown) => err instanceof NotLeaderError || this.log(`check of ${ns}/${activation.metadata?.name}: ${apiMessage(err)}`, { level: 'warn', ...this.actions.about(activation) }));
    }
  }
}
