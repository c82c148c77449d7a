/**
 * The watcher: an informer on VectorActivations that keeps one activation workflow per unfinished
 * object (workflow id from namespace, name and uid) and hands the konfidence.cloud/cancel and
 * konfidence.cloud/retry annotations to it as Updates, writing the answer into the status and an
 * Event. Level-triggered: what to do is decided from the object (decisions/watcher.ts), so a
 * resync or a restart simply decides again. A finished object is never started again unless a
 * retry is asked for, and a workflow that closed without finishing its object (terminated, timed
 * out) is found on the periodic check and its objects are brought back to truth.
 */
import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import { closeOutActivation } from '../activities/close-out.js';
import { cancelBeforeStart, holdActivation, skipBeforeStart } from '../activities/hold.js';
import { expectStageLock } from '../activities/lock.js';
import { fairShare, heldMessage, NAMESPACE_LIMIT_REASON } from '../decisions/fair-share.js';
import { BURST_QUIET_MS, BURST_SETTLE_MS, holdBurstWinners, type BurstWait, supersededBeforeStart, supersededMessage, type Superseder } from '../decisions/supersede.js';
import { coreDeps, type CoreDeps } from '../activities/deps.js';
import { FINALIZER_CLOSE_OUT } from '../api/group.js';
import { beforeStartAnswer, closedWorkflow, closedWorkflowEnding, watcherActions, type AnnotationRequest, type WatcherAction } from '../decisions/watcher.js';
import { isFinal } from '../decisions/activation.js';
import { requestEvent } from '../decisions/events.js';
import { recordEvents } from '../k8s/events.js';
import { apiMessage, k8s } from '../k8s/client.js';
import { KindCache } from '../k8s/kind-cache.js';
import type { CustomObject } from '../k8s/custom-objects.js';
import { LeaderGate, NotLeaderError, type Leadership } from '../k8s/leader-election.js';
import { kubeTime } from '../shared/format.js';
import { forEachLimited } from '../shared/pool.js';
import {
  activationWorkflowId,
  abortUpdate,
  approveUpdate,
  cancelSignal,
  cancelUpdate,
  promoteUpdate,
  releaseLockSignal,
  retryUpdate,
  stageLockWorkflowId,
  type ActivationRef,
} from '../shared/activation.js';
import { vectorActivation, type ActivationOptions } from '../workflows/activation.js';
import { componentLogger, type LogFn } from '../telemetry/log.js';
import { pinnedVersion } from '../decisions/rollout.js';
import { readCoreRollout } from './core-rollout.js';
import { addWatchedSource, observeEventLag, type WatchedActivation } from '../telemetry/metrics.js';

export interface WatcherOptions {
  kubeConfig: k8s.KubeConfig;
  client: Client;
  taskQueue: string;
  /** Namespaces to watch; default all. */
  namespaces?: string[];
  uiUrl?: string;
  queueSuffix?: string;
  /** How often unfinished activations' workflows are checked for having closed (default 30 s). */
  checkIntervalMs?: number;
  /** Passed to the workflows: how often a waiting activation asks its Stage's lock again. */
  lockAskAgainSeconds?: number;
  systemNamespace?: string;
  log?: LogFn;
  /**
   * Absent: standalone, always acts. Present: the informers run always (warm caches) but the
   * watcher acts only while leader, checks leadership right before each write, and on becoming
   * leader decides again for every cached object (docs/ha.md).
   */
  leadership?: Leadership;
  /**
   * Sharded (KONFIDENCE_SHARD, worker/shards.ts): informers only in `namespaces` (none at first;
   * setNamespaces changes them) and it acts only in the namespaces the shard serves (serve/drop).
   */
  sharded?: boolean;
  /**
   * Fairness between namespaces (decisions/fair-share.ts): at most this many Stages of one
   * namespace have activations running; the others wait, visibly (reason NamespaceLimit). Absent: no limit.
   */
  stagesPerNamespace?: number;
  /** How long a burst's newest waits for the rest of the burst at most (decisions/supersede.ts; default 250 ms). */
  burstSettleMs?: number;
  /** How long a Stage without a new activation ends that wait (decisions/supersede.ts; default 75 ms). */
  burstQuietMs?: number;
}

/** Sharded: how many namespaces' informers list at once when a shard gains namespaces. */
const LIST_PARALLEL = 16;
/** How many of a burst's superseded activations skipLosers ends Skipped at a time. */
const SKIPS_AT_ONCE = 4;
/**
 * Activations waiting at a progression's gate sit still for hours or days: their workflows are not
 * looked at one by one at every check (a thousand describes a check would be most of what the
 * system does while they wait). One visibility query a check lists the activation workflows that
 * closed since the check before; only those are looked at. Every this many checks, all are
 * (a workflow gone without a close, say, after the retention).
 */
const GATED_FULL_CHECK_EVERY = 20;
/** The visibility query looks back this much further than the check before: its records may lag. */
const CLOSED_LOOKBACK_MS = 60_000;
/** Deletions a standby saw are handed to the workflows when it takes over, if this recent. */
const STANDBY_DELETIONS_KEPT_MS = 5 * 60_000;

type Watched = k8s.KubernetesObject & {
  spec?: { stage?: string; stageVersion?: string };
  status?: {
    phase?: string;
    reason?: string;
    message?: string;
    workflowId?: string;
    requests?: { action: AnnotationRequest; token: string; outcome: string; message: string; time: string }[];
    /** A progressive activation's weight and the type of the gate it waits at (the metrics read them). */
    progression?: { weight?: number; gate?: { type?: string } | null };
  };
};

/**
 * What the watcher keeps of an activation's status, in place (its KindCache and this.cache hold
 * the same object): what Watched declares. With 10,000 activations cached, steps and conditions
 * were most of the heap after managedFields, which KindCache drops (bench/shards.ts).
 */
function slim(o: Watched): void {
  if (!o.status) return;
  const { phase, reason, message, workflowId, requests, progression: p } = o.status;
  const progression = p ? { weight: p.weight, ...(p.gate?.type ? { gate: { type: p.gate.type } } : {}) } : undefined;
  o.status = Object.fromEntries(Object.entries({ phase, reason, message, workflowId, requests, progression }).filter(([, v]) => v !== undefined));
}

export class ActivationWatcher {
  /** Per watched namespace ('' for all namespaces). */
  private readonly informers = new Map<string, KindCache>();
  /** Sharded: the namespaces this watcher acts in; writes in flight per namespace, which a drop waits for. */
  private readonly serving = new Set<string>();
  private readonly pending = new Map<string, Set<Promise<unknown>>>();
  private startedAt = Date.now();
  /** The latest of every watched object, by uid: what the periodic check walks. */
  private readonly cache = new Map<string, Watched>();
  /** Workflow ids known to run: a repeated event costs no Temporal call. */
  private readonly running = new Set<string>();
  private readonly inFlight = new Set<string>();
  /** Per namespace, while its fair-share pass runs: whether another pass must follow it. */
  private readonly sharing = new Map<string, { again: boolean }>();
  /** Per namespace: per Stage, until when its burst's newest waits for the rest (holdBurstWinners). */
  private readonly settling = new Map<string, Map<string, BurstWait>>();
  /**
   * Per namespace: per Stage, when its latest activation arrived (first seen unfinished by the watch,
   * performance.now()): how long a burst has been quiet. One number per Stage; an old one reads as
   * quiet (decisions/supersede.ts), so none is pruned.
   */
  private readonly lastArrival = new Map<string, Map<string, number>>();
  /** Losers being ended Skipped: not candidates of another pass meanwhile (their write is on its way). */
  private readonly skipping = new Set<string>();
  /** A burst's newest activations (uid) whose Stage's lock was told to expect them: told once. */
  private readonly expectSent = new Set<string>();
  private stopped = false;
  private timer?: NodeJS.Timeout;
  private readonly gate: LeaderGate;
  private synced = false;
  /** Deletions seen while standby (workflow id → when): the leader may have died before it saw them. */
  private readonly standbyDeletions = new Map<string, number>();
  private readonly log: LogFn;
  private readonly deps: CoreDeps;
  private removeWatchedSource?: () => void;
  /** The checks of unfinished activations' workflows (checkUnfinished): how many, and when the last began. */
  private checks = 0;
  private lastCheck: number | undefined;

  constructor(private readonly o: WatcherOptions) {
    this.log = o.log ?? componentLogger('watcher').fn();
    // Sharded, every write in a namespace is fenced on the shard serving it (the system namespace is every shard's).
    this.gate = new LeaderGate(o.leadership, o.sharded ? (ns) => ns === o.systemNamespace || this.serving.has(ns) : undefined);
    this.deps = coreDeps(this.gate.kubeConfig(o.kubeConfig), o.systemNamespace ?? '', this.log);
  }

  /** True once every informer has listed, and while the last list of each succeeded (readiness). */
  isSynced(): boolean {
    return this.synced && !this.stopped && [...this.informers.values()].every((c) => c.listed);
  }


  /** Level-triggered takeover: forget what the previous term knew and decide again for every cached object. */
  private tookOver(identity: string): void {
    if (this.stopped) return;
    this.log(`${identity} leads: deciding again for ${this.cache.size} cached VectorActivations`);
    this.running.clear();
    // A wait's timer that fired while standby ran no pass: its entry would cut the next burst's wait
    // short. Arrivals stay: a burst may be arriving.
    this.settling.clear();
    this.handDeletionsOver();
    for (const o of this.cache.values()) void this.reconcile(o);
    void this.checkUnfinished();
  }

  /** Deletions seen while not acting, in the namespaces it acts in now, go to their workflows. */
  private handDeletionsOver(): void {
    const now = Date.now();
    for (const [workflowId, at] of this.standbyDeletions) {
      if (this.o.sharded && !this.serving.has(workflowId.split('/')[1]!)) continue;
      this.standbyDeletions.delete(workflowId);
      if (now - at > STANDBY_DELETIONS_KEPT_MS) continue;
      void this.o.client.workflow
        .getHandle(workflowId)
        .signal(cancelSignal, { token: 'deleted', reason: 'the VectorActivation was deleted', deleted: true })
        .catch(() => undefined);
    }
  }

  async start(): Promise<void> {
    this.startedAt = Date.now();
    const initial = this.o.sharded ? (this.o.namespaces ?? []) : (this.o.namespaces ?? [undefined]);
    for (const namespace of initial) await this.watchNamespace(namespace);
    this.synced = true;
    this.removeWatchedSource = addWatchedSource(() => this.watched());
    this.timer = setInterval(() => void this.checkUnfinished(), this.o.checkIntervalMs ?? 30_000);
    this.gate.start((identity) => this.tookOver(identity));
  }

  /** Lists and watches one namespace (undefined: all); readiness follows whether each last list succeeded. */
  private async watchNamespace(namespace: string | undefined): Promise<void> {
    const cache = new KindCache({
      kubeConfig: this.o.kubeConfig,
      plural: 'vectoractivations',
      ...(namespace ? { namespace } : {}),
      onChange: (type, o) => (type === 'DELETED' ? void this.deleted(o as Watched) : this.observe(o as Watched, this.startedAt)),
      slim: (o) => slim(o as Watched),
      log: this.log,
    });
    this.informers.set(namespace ?? '', cache);
    await cache.start();
  }

  /** Sharded: lists and watches exactly these namespaces; a namespace left is forgotten (its cache too). */
  async setNamespaces(namespaces: ReadonlySet<string>): Promise<void> {
    for (const [ns, informer] of [...this.informers]) {
      if (namespaces.has(ns)) continue;
      this.informers.delete(ns);
      await informer.stop();
      for (const [uid, o] of this.cache) if (o.metadata?.namespace === ns) this.cache.delete(uid);
      this.forgetBursts(ns);
    }
    // Lists in parallel, a few at a time: one after the other, 200 namespaces took seconds (bench/shards.ts).
    const added = [...namespaces].filter((ns) => !this.informers.has(ns));
    await forEachLimited(added, LIST_PARALLEL, async (ns) => {
      if (!this.stopped) await this.watchNamespace(ns);
    });
  }

  /** Sharded: acts in these namespaces from now on, deciding again for what it has cached there. */
  serve(namespaces: readonly string[]): void {
    for (const ns of namespaces) this.serving.add(ns);
    const added = new Set(namespaces);
    if (this.gate.acting()) this.handDeletionsOver();
    for (const o of this.cache.values()) if (added.has(o.metadata!.namespace!)) void this.reconcile(o);
  }

  /** Sharded: stops acting in these namespaces; resolves once no write there is in flight. */
  async drop(namespaces: readonly string[]): Promise<void> {
    for (const ns of namespaces) {
      this.serving.delete(ns);
      this.settling.delete(ns);
    }
    await Promise.allSettled(namespaces.flatMap((ns) => [...(this.pending.get(ns) ?? [])]));
    // Whoever serves them next asks Temporal again (a start finds a running workflow by its id).
    for (const o of this.cache.values()) if (namespaces.includes(o.metadata!.namespace!)) this.running.delete(activationWorkflowId(this.ref(o)));
  }

  /** A namespace left: its bursts' waits and arrivals go with its cache. */
  private forgetBursts(namespace: string): void {
    this.settling.delete(namespace);
    this.lastArrival.delete(namespace);
  }

  /** Standalone or leader, and (sharded) the shard serves the namespace. */
  private acting(namespace: string): boolean {
    return this.gate.acting() && (!this.o.sharded || this.serving.has(namespace));
  }

  /** Runs a piece of work that may write in a namespace, so a drop can wait for it. */
  private tracked<T>(namespace: string, work: () => Promise<T>): Promise<T> {
    const set = this.pending.get(namespace) ?? new Set();
    this.pending.set(namespace, set);
    const p = work();
    set.add(p);
    void p.finally(() => set.delete(p)).catch(() => undefined);
    return p;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    this.removeWatchedSource?.();
    this.gate.stop();
    await Promise.all([...this.informers.values()].map((i) => i.stop()));
    // Its caller closes the Temporal connection next: no start or Update may still be on its way.
    await Promise.allSettled([...this.pending.values()].flatMap((set) => [...set]));
  }

  private ref(o: Watched): ActivationRef {
    return { namespace: o.metadata!.namespace!, name: o.metadata!.name!, uid: o.metadata!.uid! };
  }

  /** What konfidence_activations_waiting counts: the cached activations queued at their Stage's lock. */
  /** What the metrics show of the cache: the Waiting activations, and the weight and gate of the progressing ones. */
  private *watched(): Iterable<WatchedActivation> {
    for (const o of this.cache.values()) {
      if (!o.spec?.stage) continue;
      const where = { namespace: o.metadata!.namespace!, stage: o.spec.stage };
      if (o.status?.phase === 'Waiting' && o.status.reason !== NAMESPACE_LIMIT_REASON) yield where;
      const p = o.status?.progression;
      if (o.status?.phase === 'InProgress' && p?.weight !== undefined) yield { ...where, weight: p.weight, ...(p.gate?.type ? { gate: p.gate.type } : {}) };
    }
  }

  /** Fields that say which activation a record is about. */
  private about(o: Watched) {
    const ref = this.ref(o);
    return { namespace: ref.namespace, activation: ref.name, ...(o.spec?.stage ? { stage: o.spec.stage } : {}), workflowId: activationWorkflowId(ref) };
  }

  private observe(o: Watched, startedAt: number): void {
    observeEventLag('watcher', 'VectorActivation', o, startedAt);
    if (!this.cache.has(o.metadata!.uid!) && !isFinal(o.status?.phase)) {
      const stages = this.lastArrival.get(o.metadata!.namespace!) ?? new Map<string, number>();
      this.lastArrival.set(o.metadata!.namespace!, stages.set(o.spec?.stage ?? '', performance.now()));
    }
    this.cache.set(o.metadata!.uid!, o);
    void this.reconcile(o);
    // An activation that ended may free a place for a held one.
    if (this.o.stagesPerNamespace && isFinal(o.status?.phase)) this.share(o.metadata!.namespace!);
  }

  /** Acts on what decisions/watcher.ts says for the object; safe to call any number of times. */
  private async reconcile(o: Watched): Promise<void> {
    if (!this.acting(o.metadata!.namespace!)) return; // a standby only keeps its cache; it decides again when it takes over
    return this.tracked(o.metadata!.namespace!, () => this.reconcileActing(o));
  }

  private async reconcileActing(o: Watched): Promise<void> {
    const ref = this.ref(o);
    const actions = watcherActions({
      phase: o.status?.phase,
      deleting: Boolean(o.metadata?.deletionTimestamp),
      closing: o.metadata?.finalizers?.includes(FINALIZER_CLOSE_OUT) ?? false,
      annotations: o.metadata?.annotations ?? {},
      answered: o.status?.requests ?? [],
    });
    // The workflow starts only from the namespace's pass (Stage limit, bursts superseded before
    // they start), whatever requests the activation carries.
    const id = activationWorkflowId(ref);
    if (actions.some((a) => a.kind === 'ensure') && !this.running.has(id)) this.share(ref.namespace);
    // A request to one whose workflow has not started is answered here (decisions/watcher.ts).
    const notStarted = !isFinal(o.status?.phase) && !this.running.has(id) && !o.status?.workflowId;
    for (const action of actions) {
      if (action.kind === 'ensure') continue;
      const key = `${ref.uid}/${action.kind}/${'token' in action ? action.token : ''}`;
      if (this.inFlight.has(key)) continue;
      this.inFlight.add(key);
      try {
        await (notStarted && action.kind === 'relay' ? this.beforeStart(ref, action) : this.act(o, ref, action));
      } catch (err) {
        // Deposed between the decision and a write: the new leader decides again.
        if (!(err instanceof NotLeaderError)) this.log(`VectorActivation ${ref.namespace}/${ref.name}: ${apiMessage(err)}`, { level: 'warn', ...this.about(o) });
      } finally {
        this.inFlight.delete(key);
      }
    }
  }

  /** Runs the namespace's fair-share pass, or asks the running one to run once more. */
  private share(namespace: string): void {
    const pass = this.sharing.get(namespace);
    if (pass) {
      pass.again = true;
      return;
    }
    const state = { again: true };
    this.sharing.set(namespace, state);
    void this.tracked(namespace, async () => {
      try {
        // Events that arrive together (an initial list, one read of the watch stream) go into one
        // pass: a burst seen whole supersedes its older activations before they start.
        await new Promise((resolve) => setImmediate(resolve));
        while (state.again && !this.stopped && this.acting(namespace)) {
          state.again = false;
          await this.sharePass(namespace).catch((err: unknown) => this.log(`fair-share pass in ${namespace}: ${apiMessage(err)}`, { level: 'warn', namespace }));
        }
      } finally {
        this.sharing.delete(namespace);
      }
    });
  }

  /** Starts the workflows the Stage limit admits; marks the ones it holds (decisions/fair-share.ts). */
  private async sharePass(namespace: string): Promise<void> {
    const seenAt = performance.now();
    const unfinished = [...this.cache.values()].filter((o) => o.metadata!.namespace === namespace && !o.metadata!.deletionTimestamp && !isFinal(o.status?.phase));
    const limit = this.o.stagesPerNamespace!;
    const admitted = fairShare(
      unfinished.map((o) => ({
        uid: o.metadata!.uid!,
        name: o.metadata!.name!,
        stage: o.spec?.stage ?? '',
        created: new Date(o.metadata!.creationTimestamp ?? 0).toISOString(),
        // A burst's newest held for the rest of its burst keeps the place its Stage was admitted to.
        started: this.running.has(activationWorkflowId(this.ref(o))) || Boolean(o.status?.workflowId) || Boolean(this.settling.get(namespace)?.has(o.spec?.stage ?? '')),
      })),
      limit,
    );
    const attempt = (o: Watched, what: string, work: () => Promise<unknown>) =>
      Promise.resolve()
        .then(work)
        .catch((err: unknown) => err instanceof NotLeaderError || this.log(`VectorActivation ${namespace}/${o.metadata!.name}: ${what}: ${apiMessage(err)}`, { level: 'warn', ...this.about(o) }));
    // Both hold an activation until it is final or gone, as the cache says (the watch brought the skip back).
    for (const set of [this.expectSent, this.skipping]) for (const uid of set) if (!this.cache.has(uid) || isFinal(this.cache.get(uid)!.status?.phase)) set.delete(uid);
    const starting = unfinished.filter((o) => admitted.has(o.metadata!.uid!) && !this.running.has(activationWorkflowId(this.ref(o))) && !o.status?.workflowId && !this.skipping.has(o.metadata!.uid!));
    const losers = await this.burstLosers(namespace, starting);
    // A burst's newest: its lock expects it (an older one started already waits for it there), and
    // it waits a moment for the rest of its burst (decisions/supersede.ts).
    const winners = new Map([...losers.values()].map((w) => [w.uid, w]));
    for (const w of winners.values()) if (!this.expectSent.has(w.uid)) void this.tracked(namespace, () => this.expectAtLock(namespace, w));
    // A burst's wait is judged after the reads, on every arrival up to now: one that came during
    // them (not in this pass's snapshot) makes its Stage wait for the next pass, which sees it.
    const judgedAt = performance.now();
    const arrivals = this.lastArrival.get(namespace) ?? new Map<string, number>();
    const starts = starting.filter((o) => !losers.has(o.metadata!.uid!)).map((o) => {
      const stage = o.spec?.stage ?? '';
      return { uid: o.metadata!.uid!, stage, crowd: winners.has(o.metadata!.uid!), missed: (arrivals.get(stage) ?? -Infinity) > seenAt };
    });
    const hold = holdBurstWinners(starts, arrivals, this.settling.get(namespace) ?? new Map(), judgedAt, this.o.burstSettleMs ?? BURST_SETTLE_MS, this.o.burstQuietMs ?? BURST_QUIET_MS);
    this.settling.set(namespace, hold.settling);
    if (hold.wakeAt !== undefined) setTimeout(() => this.share(namespace), Math.max(hold.wakeAt - performance.now(), 0) + 1).unref();
    const start = (o: Watched) => attempt(o, 'start', () => this.ensure(o, this.ref(o)));
    // The winners start while the losers are ended: not after them (a burst's newest would wait
    // for every skip). A loser that could not be ended starts, and the Stage's lock supersedes it.
    // Nor does the next pass wait for them: a burst's newest held for the rest of the burst starts
    // when its time comes (skipping keeps the losers out of that pass).
    const skipped = starting.filter((o) => losers.has(o.metadata!.uid!));
    if (skipped.length > 0) void this.tracked(namespace, () => this.skipLosers(namespace, skipped, losers).then((unended) => Promise.all(unended.map(start))));
    await Promise.all(unfinished.filter((o) => admitted.has(o.metadata!.uid!) && !losers.has(o.metadata!.uid!) && !hold.held.has(o.metadata!.uid!) && !this.skipping.has(o.metadata!.uid!)).map(start));
    const message = heldMessage(namespace, limit);
    for (const o of unfinished) {
      if (admitted.has(o.metadata!.uid!) || (o.status?.reason === NAMESPACE_LIMIT_REASON && o.status.phase === 'Waiting')) continue;
      await attempt(o, 'marking it held', () => {
        this.gate.fence(`holding ${namespace}/${o.metadata!.name}`, namespace);
        return holdActivation(this.deps, this.ref(o), message);
      });
    }
  }

  /**
   * A burst on one Stage: of the activations about to start, only the newest gets a workflow; the
   * others (the losers: uid → the one that supersedes it) end Skipped/Superseded without one
   * (decisions/supersede.ts; skipLosers ends them). Reads the Stage and StageVersions only when a Stage has more than one
   * activation starting; when they cannot be read, there are no losers: everything starts and the
   * lock supersedes as before.
   */
  private async burstLosers(namespace: string, starting: Watched[]): Promise<Map<string, Superseder>> {
    const count = new Map<string, number>();
    for (const o of starting) count.set(o.spec?.stage ?? '', (count.get(o.spec?.stage ?? '') ?? 0) + 1);
    const crowded = [...count].filter(([, n]) => n > 1).map(([stage]) => stage);
    if (crowded.length === 0) return new Map();
    try {
      const [stages, stageVersions] = await Promise.all([
        Promise.all(crowded.map((stage) => this.deps.objects.get('Stage', namespace, stage))),
        this.deps.objects.list('StageVersion', namespace),
      ]);
      return supersededBeforeStart(
        starting.map((o) => ({ uid: o.metadata!.uid!, name: o.metadata!.name!, stage: o.spec?.stage ?? '', stageVersion: o.spec?.stageVersion ?? '', created: new Date(o.metadata!.creationTimestamp ?? 0).toISOString() })),
        new Set(stages.flatMap((st) => (st && !st.metadata.deletionTimestamp ? [st.metadata.name] : []))),
        new Map(stageVersions.map((sv) => [sv.metadata.name, { stage: sv.spec?.stage, revision: sv.spec?.revision }])),
      );
    } catch (err) {
      this.log(`superseding a burst in ${namespace}: ${apiMessage(err)}; starting every activation`, { level: 'warn', namespace });
      return new Map();
    }
  }

  /**
   * Tells the Stage's lock that a burst's newest is on its way: an older activation started before
   * the burst was seen whole then waits at the lock to be superseded by it, instead of taking the
   * free Stage and running first (bench/burst). Without it (the signal failed) that one runs first.
   */
  private async expectAtLock(namespace: string, w: Superseder): Promise<void> {
    this.expectSent.add(w.uid);
    const activation = `${namespace}/${w.name}`;
    try {
      this.gate.fence(`expecting ${activation} at its Stage's lock`, namespace);
      await expectStageLock(this.o.client, this.o.taskQueue, namespace, w.stage, { requester: activationWorkflowId({ namespace, name: w.name, uid: w.uid }), revision: w.revision, activation });
    } catch (err) {
      if (err instanceof NotLeaderError) this.expectSent.delete(w.uid);
      else this.log(`telling the lock of ${namespace}/${w.stage} to expect ${w.name}: ${apiMessage(err)}`, { level: 'warn', namespace, activation: w.name, stage: w.stage });
    }
  }

  /** Ends a burst's losers Skipped, a few at a time; returns those it did not end (they start). */
  private async skipLosers(namespace: string, losers: Watched[], winners: Map<string, Superseder>): Promise<Watched[]> {
    const unended: Watched[] = [];
    // A few at a time: all of a burst's skips at once (a read, a status write and an Event each)
    // would queue the Stage's running activation behind them at the apiserver (bench/burst).
    for (const o of losers) this.skipping.add(o.metadata!.uid!);
    await forEachLimited(losers, SKIPS_AT_ONCE, async (o) => {
      const ref = this.ref(o);
      try {
        // A previous leader may have started it, and its workflow not written a status yet.
        if ((await this.workflowStatus(activationWorkflowId(ref))) === undefined) {
          this.gate.fence(`superseding ${namespace}/${ref.name}`, namespace);
          // Ended: it stays among those being skipped until the watch brings the write back (a
          // stale event may come first), so that no pass starts it meanwhile.
          if (await skipBeforeStart(this.deps, ref, supersededMessage(namespace, winners.get(ref.uid)!), o as CustomObject)) return;
        }
      } catch (err) {
        if (!(err instanceof NotLeaderError)) this.log(`superseding ${namespace}/${ref.name}: ${apiMessage(err)}; starting it`, { level: 'warn', ...this.about(o) });
      }
      this.skipping.delete(ref.uid);
      unended.push(o);
    });
    return unended;
  }

  /** The status of the workflow's latest run (RUNNING, COMPLETED, ...); undefined when Temporal has none. */
  private async workflowStatus(workflowId: string): Promise<string | undefined> {
    return (await this.latestRun(workflowId))?.status;
  }

  /** The workflow's latest run: its status, and whether it was a close-out run; undefined when Temporal has none. */
  private async latestRun(workflowId: string): Promise<{ status: string; closeOut: boolean } | undefined> {
    try {
      const d = await this.o.client.workflow.getHandle(workflowId).describe();
      return { status: d.status.name, closeOut: d.memo?.closeOut === true };
    } catch (err) {
      if (err instanceof WorkflowNotFoundError) return undefined;
      throw err;
    }
  }

  /**
   * A request to an activation whose workflow has not started: a cancel ends it where it is (when
   * the conditional write finds it started meanwhile, its workflow gets the request at the next
   * reconcile); anything else is refused.
   */
  private async beforeStart(ref: ActivationRef, action: Extract<WatcherAction, { kind: 'relay' }>): Promise<void> {
    const answer = beforeStartAnswer(action.action);
    if ('refused' in answer) return this.answer(ref, action.action, action.token, 'Refused', answer.refused, action.by);
    // As a burst's loser is skipped: no pass starts it meanwhile, and one a pass (or a leader
    // before) started, whose workflow has not written a status yet, is not ended under it.
    this.skipping.add(ref.uid);
    try {
      if ((await this.workflowStatus(activationWorkflowId(ref))) === undefined) {
        this.gate.fence(`cancelling ${ref.namespace}/${ref.name} before its start`, ref.namespace);
        const message = `cancelled before it started${action.by ? ` by ${action.by}` : ''}: no workflow ran, no route was changed`;
        // Ended: it stays among those being skipped until the watch brings the write back.
        if (await cancelBeforeStart(this.deps, ref, message)) return await this.answer(ref, 'cancel', action.token, 'Accepted', message, action.by);
      }
    } catch (err) {
      this.skipping.delete(ref.uid);
      throw err;
    }
    // Started meanwhile: its workflow gets the request at the next reconcile; not started, its turn comes.
    this.skipping.delete(ref.uid);
    this.share(ref.namespace);
  }

  private async act(o: Watched, ref: ActivationRef, action: WatcherAction): Promise<void> {
    if (action.kind === 'ensure') return this.ensure(o, ref);
    if (action.kind === 'deleted') return this.deleting(o, ref);
    if (action.kind === 'refuse') return this.answer(ref, action.action, action.token, 'Refused', action.message, action.by);
    const handle = this.o.client.workflow.getHandle(activationWorkflowId(ref));
    const update = { cancel: cancelUpdate, retry: retryUpdate, approve: approveUpdate, promote: promoteUpdate, abort: abortUpdate }[action.action];
    try {
      this.gate.fence(`the ${action.action} Update of ${ref.namespace}/${ref.name}`, ref.namespace);
      const result = await handle.executeUpdate(update, { args: [{ token: action.token, reason: `annotation ${action.token.split('=')[0]}`, ...(action.by ? { by: action.by } : {}) }] });
      return this.answer(ref, action.action, action.token, 'Accepted', result.message, action.by);
    } catch (err) {
      if (err instanceof WorkflowUpdateFailedError) return this.answer(ref, action.action, action.token, 'Refused', (err.cause as Error | undefined)?.message ?? err.message, action.by);
      if (!(err instanceof WorkflowNotFoundError)) throw err;
    }
    if (action.action !== 'cancel' && action.action !== 'retry') {
      return this.answer(ref, action.action, action.token, 'Refused', `refused: the activation is ${o.status?.phase} and its workflow has closed; nothing waits`, action.by);
    }
    // The workflow has closed (its retry window passed, or retention dropped it).
    if (action.action === 'retry') {
      await this.startWorkflow(o, ref, { resume: 'retry' }, 'ALLOW_DUPLICATE');
      return this.answer(ref, 'retry', action.token, 'Accepted', 'retry started in a new workflow run (the previous run had closed)');
    }
    return this.answer(ref, 'cancel', action.token, 'Refused', `refused: the activation is ${o.status?.phase} and its workflow has closed; nothing to cancel`);
  }

  private async startWorkflow(o: Watched, ref: ActivationRef, extra: Partial<ActivationOptions>, reuse: 'REJECT_DUPLICATE' | 'ALLOW_DUPLICATE', memo?: Record<string, unknown>) {
    // A canary namespace's activation starts pinned to the canary build (docs/scale.md); read at
    // every start, so a canary set a moment ago applies to the next activation.
    const rollout = this.o.systemNamespace ? await readCoreRollout(this.o.kubeConfig, this.o.systemNamespace) : undefined;
    const pinnedTo = pinnedVersion(rollout, ref.namespace);
    this.gate.fence(`starting the workflow of ${ref.namespace}/${ref.name}`, ref.namespace);
    return this.o.client.workflow.start(vectorActivation, {
      ...(pinnedTo ? { versioningOverride: { pinnedTo } } : {}),
      workflowId: activationWorkflowId(ref),
      taskQueue: this.o.taskQueue,
      args: [
        ref,
        {
          ...(this.o.uiUrl ? { uiUrl: this.o.uiUrl } : {}),
          ...(this.o.queueSuffix ? { queueSuffix: this.o.queueSuffix } : {}),
          ...(this.o.lockAskAgainSeconds ? { lockAskAgainSeconds: this.o.lockAskAgainSeconds } : {}),
          ...extra,
        },
      ],
      // A repeated event, a resync or a restarted watcher finds the running workflow.
      workflowIdConflictPolicy: 'USE_EXISTING',
      workflowIdReusePolicy: reuse,
      staticSummary: `Activate ${o.spec?.stageVersion} on Stage ${ref.namespace}/${o.spec?.stage}`,
      staticDetails: `VectorActivation ${ref.namespace}/${ref.name} (uid ${ref.uid})`,
      ...(memo ? { memo } : {}),
    });
  }

  /** Starts the workflow of an unfinished object, or finds it running, or closes the object out. */
  private async ensure(o: Watched, ref: ActivationRef): Promise<void> {
    const workflowId = activationWorkflowId(ref);
    if (this.running.has(workflowId)) return;
    try {
      await this.startWorkflow(o, ref, {}, 'REJECT_DUPLICATE');
      this.running.add(workflowId);
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      await this.checkClosed(o, ref); // a closed run exists, yet the object is unfinished
    }
  }

  /** The periodic check: an unfinished object whose workflow closed is closed out. */
  private async checkUnfinished(): Promise<void> {
    const since = this.lastCheck;
    this.lastCheck = Date.now();
    const full = this.checks++ % GATED_FULL_CHECK_EVERY === 0 || since === undefined;
    // undefined: every workflow is looked at (a full check, or the query failed).
    const closed = full ? undefined : await this.closedSince(since - CLOSED_LOOKBACK_MS).catch(() => undefined);
    for (const o of this.cache.values()) {
      if (this.stopped || !this.gate.acting()) return;
      const phase = o.status?.phase;
      if (!this.acting(o.metadata!.namespace!)) continue;
      // Deleted, waiting for its close-out finalizer: the deletion reaches its workflow, or a close-out.
      if (o.metadata?.deletionTimestamp && o.metadata.finalizers?.includes(FINALIZER_CLOSE_OUT)) void this.reconcile(o);
      if (o.metadata?.deletionTimestamp || isFinal(phase)) continue;
      if (!this.running.has(activationWorkflowId(this.ref(o))) && !o.status?.workflowId) {
        this.share(o.metadata!.namespace!); // not started: held, or its start failed; the pass decides again
        continue;
      }
      if (closed && o.status?.progression?.gate && !closed.has(activationWorkflowId(this.ref(o)))) continue;
      await this.tracked(o.metadata!.namespace!, () => this.checkClosed(o, this.ref(o))).catch((err: unknown) => err instanceof NotLeaderError || this.log(`check of ${o.metadata?.namespace}/${o.metadata?.name}: ${apiMessage(err)}`, { level: 'warn', ...this.about(o) }));
    }
  }

  /** The activation workflows that closed after `ms` (epoch), by one visibility query. */
  private async closedSince(ms: number): Promise<Set<string>> {
    const ids = new Set<string>();
    const query = `WorkflowType = '${vectorActivation.name}' AND ExecutionStatus != 'Running' AND CloseTime > '${new Date(ms).toISOString()}'`;
    for await (const w of this.o.client.workflow.list({ query })) ids.add(w.workflowId);
    return ids;
  }

  private async checkClosed(o: Watched, ref: ActivationRef): Promise<void> {
    const workflowId = activationWorkflowId(ref);
    const run = await this.latestRun(workflowId);
    if (run === undefined) {
      this.running.delete(workflowId);
      return this.ensure(o, ref); // gone (retention, deleted): an unfinished object gets a workflow
    }
    if (run.status === 'RUNNING' || run.status === 'CONTINUED_AS_NEW') {
      this.running.add(workflowId);
      return;
    }
    this.running.delete(workflowId);
    return this.closeOut(o, ref, run);
  }

  /**
   * Deleted with the close-out finalizer: a running workflow is told (it stops, reverts under
   * Revert, and takes the finalizer away as it ends); one that closed is closed out.
   */
  private async deleting(o: Watched, ref: ActivationRef): Promise<void> {
    const workflowId = activationWorkflowId(ref);
    const run = await this.latestRun(workflowId);
    if (run?.status === 'RUNNING') {
      this.gate.fence(`handing the deletion of ${ref.namespace}/${ref.name} to its workflow`, ref.namespace);
      await this.o.client.workflow.getHandle(workflowId).signal(cancelSignal, { token: 'deleted', reason: 'the VectorActivation was deleted', deleted: true });
      return;
    }
    return this.closeOut(o, ref, run);
  }

  /**
   * An activation whose run closed without finishing it (or has none): a close-out run of its
   * workflow puts back what it changed (ActivationRun.closeOut). Finished already, or its
   * close-out run closed too: the watcher lets everything go itself, reverting nothing.
   */
  private async closeOut(o: Watched, ref: ActivationRef, run: { status: string; closeOut: boolean } | undefined): Promise<void> {
    const workflowId = activationWorkflowId(ref);
    if (!isFinal(o.status?.phase) && !run?.closeOut) {
      const why = closedWorkflow(run?.status ?? 'NOT_FOUND', workflowId);
      await this.startWorkflow(o, ref, { resume: 'close-out', closeOut: why }, 'ALLOW_DUPLICATE', { closeOut: true });
      this.running.add(workflowId);
      this.log(`VectorActivation ${ref.namespace}/${ref.name}: ${why.message}; its close-out run started`, this.about(o));
      return;
    }
    this.gate.fence(`closing out ${ref.namespace}/${ref.name}`, ref.namespace);
    if (await closeOutActivation(this.deps, ref, closedWorkflowEnding(run?.status ?? 'NOT_FOUND', workflowId))) {
      this.log(`VectorActivation ${ref.namespace}/${ref.name}: workflow ${run?.status.toLowerCase() ?? 'gone'}; closed out`, this.about(o));
      // Free the Stage now rather than at the lock's next holder check.
      this.gate.fence(`releasing the lock of Stage ${ref.namespace}/${o.spec!.stage}`, ref.namespace);
      await this.o.client.workflow
        .getHandle(stageLockWorkflowId(ref.namespace, o.spec!.stage!))
        .signal(releaseLockSignal, { requester: workflowId })
        .catch(() => undefined);
    }
  }

  /** Writes the answer to an annotation into status.requests (one entry per action) and an Event. */
  private async answer(ref: ActivationRef, action: AnnotationRequest, token: string, outcome: 'Accepted' | 'Refused', message: string, by?: string): Promise<void> {
    const va = await this.deps.objects.get('VectorActivation', ref.namespace, ref.name);
    if (!va || va.metadata.uid !== ref.uid) return;
    const entry = { action, token, outcome, ...(by ? { by } : {}), message: message.slice(0, 4096), time: kubeTime() };
    this.gate.fence(`answering ${token} on ${ref.namespace}/${ref.name}`, ref.namespace);
    const requests = [...((va.status?.requests ?? []) as { action: string }[]).filter((r) => r.action !== action), entry];
    // The Event first: answering again after a crash between the two counts it instead of losing it.
    await recordEvents(this.deps.event, ref.namespace, [requestEvent(ref.name, action, token, outcome, message, by)], { [`VectorActivation/${ref.name}`]: ref.uid });
    await this.deps.objects.patchStatus('VectorActivation', ref.namespace, ref.name, { requests });
  }

  private async deleted(o: Watched): Promise<void> {
    this.cache.delete(o.metadata!.uid!);
    if (this.o.stagesPerNamespace && this.acting(o.metadata!.namespace!)) this.share(o.metadata!.namespace!);
    const workflowId = activationWorkflowId(this.ref(o));
    this.running.delete(workflowId);
    if (['Succeeded', 'Skipped'].includes(o.status?.phase ?? '')) return;
    if (!this.acting(o.metadata!.namespace!)) {
      // A standby, or a shard that does not serve the namespace (yet): whoever serves it next hands it over.
      this.standbyDeletions.set(workflowId, Date.now());
      return;
    }
    await this.o.client.workflow
      .getHandle(workflowId)
      .signal(cancelSignal, { token: 'deleted', reason: 'the VectorActivation was deleted', deleted: true })
      .catch(() => undefined);
  }
}
