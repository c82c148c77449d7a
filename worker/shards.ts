/**
 * The shell of a shard (KONFIDENCE_SHARD): observes the Namespaces (names and labels), the
 * ShardingConfig and the other shards of its role (their leader Lease and the status.serving of
 * their ControllerStatus), asks decisions/shards.ts, and acts:
 * - every replica (leader or standby) gets the namespaces assigned to its shard, so the component's
 *   informers run only there (start-up and memory follow the shard) and a standby's cache is warm;
 * - only the leader serves: it drops what is no longer assigned at once (the component waits for
 *   its writes in flight there) and only then publishes; it publishes a claim before it starts
 *   serving it. So the published lists always cover what is served, and a shard claims only what
 *   no live peer lists: two shards never serve a namespace at once (docs/scale.md, "Shards").
 * A peer is live while its Lease has a holder and changed within a lease duration, timed by this
 * process's own clock (as the elector times the Lease it competes for): no two clocks are compared.
 */
import { API_VERSION } from '../api/group.js';
import {
  ControllerStatus,
  controllerStatusName,
  controllerStatusStatus,
  type ControllerRole,
} from '../api/controller-status.js';
import {
  SHARDING_CONFIG_NAME,
  ShardingConfig,
  shardingConfigSpec,
  type ShardingConfigSpec,
} from '../api/sharding-config.js';
import { decideServing, shardOf, type Peer } from '../decisions/shards.js';
import { apiMessage, k8s } from '../k8s/client.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { leaseName, type Leadership } from '../k8s/leader-election.js';
import type { LogFn } from '../telemetry/log.js';

/** What a sharded component (watcher, Stage controller) offers the shell. */
export interface ShardedComponent {
  /** The namespaces whose objects it lists and watches (leader and standby alike). */
  setNamespaces(namespaces: ReadonlySet<string>): Promise<void>;
  /** It may act in these namespaces from now on (decide again for what it has cached there). */
  serve(namespaces: readonly string[]): void;
  /** It stops acting in these namespaces; resolves once no write of it there is in flight. */
  drop(namespaces: readonly string[]): Promise<void>;
}

export interface ShardOptions {
  /** Unfenced: the shell publishes while it leads, which it checks itself right before the write. */
  kubeConfig: k8s.KubeConfig;
  systemNamespace: string;
  role: ControllerRole;
  shard: string;
  leadership: Leadership;
  leaseDurationMs: number;
  component: ShardedComponent;
  /** How often the config, the peers and the assignment are looked at (default 1 s). */
  intervalMs?: number;
  log: LogFn;
}

interface LeaseSeen {
  version?: string;
  holder: string;
  /** Monotonic time the version was first seen. */
  at: number;
}

export class ShardMembership {
  private readonly objects: CustomObjects;
  private readonly leases: k8s.CoordinationV1Api;
  private readonly labels = new Map<string, Record<string, string>>();
  private readonly seenLeases = new Map<string, LeaseSeen>();
  private informer?: k8s.Informer<k8s.V1Namespace>;
  private serving = new Set<string>();
  private assigned = new Set<string>();
  private published?: string;
  private lastWaiting?: string;
  private stopped = false;
  private timer?: NodeJS.Timeout;
  private pass: Promise<void> = Promise.resolve();
  private synced = false;

  constructor(private readonly settings: ShardOptions) {
    this.objects = new CustomObjects(settings.kubeConfig);
    this.leases = settings.kubeConfig.makeApiClient(k8s.CoordinationV1Api);
  }

  isSynced(): boolean {
    return this.synced && !this.stopped;
  }

  async start(): Promise<void> {
    const core = this.settings.kubeConfig.makeApiClient(k8s.CoreV1Api);
    this.informer = k8s.makeInformer<k8s.V1Namespace>(this.settings.kubeConfig, '/api/v1/namespaces', () =>
      core.listNamespace(),
    );
    const seen = (n: k8s.V1Namespace) => this.labels.set(n.metadata!.name!, n.metadata?.labels ?? {});
    this.informer.on('add', seen);
    this.informer.on('update', seen);
    this.informer.on('delete', (n) => this.labels.delete(n.metadata!.name!));
    this.informer.on('error', (err) => {
      if (this.stopped) return;
      this.settings.log(`watch of namespaces broke (${apiMessage(err)}); re-listing`, { level: 'warn' });
      setTimeout(() => !this.stopped && void this.informer!.start().catch(() => undefined), 1_000);
    });
    await this.informer.start();
    await this.tick();
    this.synced = true;
    this.schedule();
  }

  /** The next look, intervalMs after this one ended (a slow apiserver never piles passes up). */
  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.pass = this.tick().then(() => this.schedule());
    }, this.settings.intervalMs ?? 1_000);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.pass;
    // No write in flight when the Lease is released after this: a peer may claim at once then.
    await this.settings.component.drop([...this.serving]);
    await this.informer?.stop();
  }

  /** One look: never throws (an apiserver that does not answer now is asked again next time). */
  private async tick(): Promise<void> {
    if (this.stopped) return;
    try {
      const config = await this.objects.get(ShardingConfig.kind, this.settings.systemNamespace, SHARDING_CONFIG_NAME);
      const parsed = config ? shardingConfigSpec.safeParse(config.spec ?? {}) : undefined;
      if (parsed && !parsed.success)
        throw new Error(
          `ShardingConfig ${this.settings.systemNamespace}/${SHARDING_CONFIG_NAME} is invalid: ${parsed.error.message}`,
        );
      const spec: ShardingConfigSpec | undefined = parsed?.data;
      const generation = config?.metadata.generation ?? 0;
      this.assigned = new Set(
        [...this.labels].filter(([ns, labels]) => shardOf(ns, labels, spec) === this.settings.shard).map(([ns]) => ns),
      );
      await this.settings.component.setNamespaces(new Set([...this.assigned, ...this.serving]));
      if (!this.settings.leadership.isLeader()) {
        // Deposed (or never led): the component's gate stops it acting; forget what this term served.
        if (this.serving.size) await this.settings.component.drop([...this.serving]);
        this.serving = new Set();
        this.published = undefined;
        return;
      }
      const peers = await this.peers();
      const d = decideServing({ generation, assigned: this.assigned, serving: this.serving, peers });
      if (d.drop.length) {
        await this.settings.component.drop(d.drop);
        for (const ns of d.drop) this.serving.delete(ns);
        this.settings.log(
          `shard ${this.settings.shard}: dropped ${d.drop.length} namespaces (${d.drop.slice(0, 5).join(', ')}${d.drop.length > 5 ? ', …' : ''})`,
        );
      }
      await this.publish(generation, d.publish);
      if (d.claim.length) {
        for (const ns of d.claim) this.serving.add(ns);
        this.settings.component.serve(d.claim);
        this.settings.log(
          `shard ${this.settings.shard}: serving ${d.claim.length} more namespaces (config generation ${generation})`,
        );
      }
      const waiting = d.waiting.map((w) => `${w.namespace}: ${w.reason}`).join('; ');
      if (waiting && waiting !== this.lastWaiting)
        this.settings.log(`shard ${this.settings.shard}: waiting for ${waiting}`);
      this.lastWaiting = waiting;
    } catch (err) {
      this.settings.log(`shard ${this.settings.shard}: ${apiMessage(err)}`, { level: 'warn' });
    }
  }

  /** status.serving of this shard's ControllerStatus; written only when it changes, only while leading. */
  private async publish(generation: number, namespaces: string[]): Promise<void> {
    const serving = { identity: this.settings.leadership.identity, generation, namespaces };
    const text = JSON.stringify(serving);
    if (text === this.published) return;
    const name = controllerStatusName(this.settings.role, this.settings.shard);
    if (!(await this.objects.get(ControllerStatus.kind, this.settings.systemNamespace, name))) {
      await this.objects.create({
        apiVersion: API_VERSION,
        kind: ControllerStatus.kind,
        metadata: { name, namespace: this.settings.systemNamespace },
        spec: { role: this.settings.role, shard: this.settings.shard },
      });
    }
    if (!this.settings.leadership.isLeader())
      throw new Error(
        `${this.settings.leadership.identity} lost the lead of shard ${this.settings.shard} before publishing`,
      );
    await this.objects.patchStatus(ControllerStatus.kind, this.settings.systemNamespace, name, { serving });
    this.published = text;
  }

  /** The other shards of this role: liveness from their Lease, what they serve from their ControllerStatus. */
  private async peers(): Promise<Peer[]> {
    const statuses = (await this.objects.list(ControllerStatus.kind, this.settings.systemNamespace)).filter(
      (s) => s.spec?.role === this.settings.role && s.spec?.shard !== this.settings.shard,
    );
    const leases = (await this.leases.listNamespacedLease({ namespace: this.settings.systemNamespace })).items;
    const now = performance.now();
    const peers: Peer[] = [];
    const shards = new Set(statuses.map((s) => s.spec.shard as string));
    const byName = new Map(leases.map((l) => [l.metadata?.name ?? '', l]));
    const prefix = `${leaseName(this.settings.role)}-`;
    for (const name of byName.keys()) {
      if (name.startsWith(prefix) && name !== leaseName(this.settings.role, this.settings.shard))
        shards.add(name.slice(prefix.length));
    }
    for (const shard of shards) {
      const lease = byName.get(leaseName(this.settings.role, shard));
      const holder = lease?.spec?.holderIdentity ?? '';
      const before = this.seenLeases.get(shard);
      const seen =
        before && lease && before.version === lease.metadata?.resourceVersion
          ? before
          : { version: lease?.metadata?.resourceVersion, holder, at: now };
      this.seenLeases.set(shard, seen);
      const duration = Math.max(this.settings.leaseDurationMs, (lease?.spec?.leaseDurationSeconds ?? 0) * 1000);
      const live = Boolean(lease && holder && now - seen.at < duration);
      const status = controllerStatusStatus.safeParse(statuses.find((s) => s.spec.shard === shard)?.status ?? {});
      const serving = status.success ? status.data.serving : undefined;
      peers.push({ shard, live, ...(serving && serving.identity === holder ? { serving } : {}) });
    }
    return peers;
  }
}
