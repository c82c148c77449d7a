/**
 * Leader election on a coordination.k8s.io/v1 Lease, with client-go's semantics (see docs/ha.md):
 * - acquire and renew by a conditional replace on the Lease's resourceVersion (create when absent);
 * - a candidate takes a Lease held by someone else only after a full lease duration in which it
 *   saw the record unchanged, timed by its own (monotonic) clock from the moment it last saw the
 *   record change (client-go's observedTime); no two clocks are ever compared;
 * - the leader renews every retry period and counts itself deposed once the renew deadline passed
 *   since the start of its last successful renewal: `isLeader()` computes that on every call, so a
 *   leader paused (SIGSTOP, a long GC, a frozen VM) and resumed finds out before its next write;
 * - `stop()` releases the Lease (empty holder, 1 s duration) so a standby takes over at once.
 * Like client-go it does not fence by itself: writers check `isLeader()` right before each write
 * (`fenceWrites` does that for every mutating apiserver request of a KubeConfig).
 */
import { apiMessage, apiStatus, k8s } from './client.js';
import { componentLogger } from '../telemetry/log.js';
import { within } from '../shared/within.js';

/** The narrow view of leadership the writers and the status publisher use. */
export interface Leadership {
  readonly identity: string;
  isLeader(): boolean;
  leaderSince(): Date | undefined;
}

/** Leadership of a process that runs without election: always the leader. */
export function standalone(identity: string): Leadership {
  const since = new Date();
  return { identity, isLeader: () => true, leaderSince: () => since };
}

/** The Lease of each elected role, in the system namespace. */
export const LEASE_NAMES = {
  watcher: 'konfidence-watcher',
  'stage-controller': 'konfidence-stage-controller',
} as const;

/** The Lease of a role's shard (KONFIDENCE_SHARD): `<role lease>-<shard>`; unsharded, the role's. */
export function leaseName(role: keyof typeof LEASE_NAMES, shard?: string): string {
  return shard ? `${LEASE_NAMES[role]}-${shard}` : LEASE_NAMES[role];
}

export interface LeaderElectorOptions {
  kubeConfig: k8s.KubeConfig;
  namespace: string;
  /** The Lease's name (LEASE_NAMES per role). */
  name: string;
  /** Unique per process: the Lease's holderIdentity while this one leads. */
  identity: string;
  /** How long a standby waits, after it last saw the record change, before it takes the Lease (default 15 s). */
  leaseDurationMs?: number;
  /** How long the leader keeps acting without a successful renewal (default 10 s). */
  renewDeadlineMs?: number;
  /** How often candidates try to acquire and the leader renews (default 2 s). */
  retryPeriodMs?: number;
  onStartedLeading?: () => void;
  onStoppedLeading?: () => void;
  /** Called when the observed holder changes (including to nobody: ''). */
  onNewLeader?: (identity: string) => void;
  log?: (message: string) => void;
}

/** Monotonic milliseconds: immune to wall-clock steps. */
const monotonic = () => performance.now();

/** Thrown by a fenced write of a process that is not (or no longer) the leader. */
export class NotLeaderError extends Error {
  constructor(identity: string, what: string) {
    super(`${identity} is not the leader; refusing ${what}`);
    this.name = 'NotLeaderError';
  }
}

export class LeaderElector implements Leadership {
  readonly identity: string;
  readonly leaseDurationMs: number;
  readonly renewDeadlineMs: number;
  readonly retryPeriodMs: number;
  private readonly api: k8s.CoordinationV1Api;
  private readonly log: (message: string) => void;
  private leading = false;
  private since?: Date;
  /** Monotonic start of the last successful acquire or renewal. */
  private renewedAt = -Infinity;
  /** The resourceVersion of the record last seen, and when (monotonic) it was first seen. */
  private observedVersion?: string;
  private observedAt = 0;
  private observedHolder?: string;
  private stopped = false;
  private loop?: Promise<void>;
  private sleeping?: { timer: NodeJS.Timeout; wake: () => void };
  private lastError?: string;

  constructor(private readonly settings: LeaderElectorOptions) {
    this.identity = settings.identity;
    this.leaseDurationMs = settings.leaseDurationMs ?? 15_000;
    this.renewDeadlineMs = settings.renewDeadlineMs ?? 10_000;
    this.retryPeriodMs = settings.retryPeriodMs ?? 2_000;
    if (!settings.identity) throw new Error('leader election needs an identity');
    if (this.leaseDurationMs <= this.renewDeadlineMs)
      throw new Error('leaseDuration must be greater than renewDeadline');
    if (this.renewDeadlineMs <= 1.2 * this.retryPeriodMs)
      throw new Error('renewDeadline must be greater than 1.2 × retryPeriod');
    if (this.leaseDurationMs < 1_000)
      throw new Error('leaseDuration must be at least 1 s (the Lease counts whole seconds)');
    this.api = settings.kubeConfig.makeApiClient(k8s.CoordinationV1Api);
    this.log = settings.log ?? componentLogger('leader-election', { lease: settings.name }).fn();
  }

  /** True while this process holds the Lease and renewed it within the renew deadline. */
  isLeader(): boolean {
    return this.leading && !this.stopped && monotonic() - this.renewedAt < this.renewDeadlineMs;
  }

  leaderSince(): Date | undefined {
    return this.isLeader() ? this.since : undefined;
  }

  /** The holder last observed in the Lease ('' when released), undefined before the first read. */
  observedLeader(): string | undefined {
    return this.observedHolder;
  }

  /** Starts competing for the Lease in the background. */
  start(): void {
    this.loop ??= this.run();
  }

  /** Stops competing; if leading, gives the Lease up so a standby takes over at once. */
  async stop(): Promise<void> {
    if (this.stopped) return;
    this.stopped = true; // isLeader() is false from here on
    if (this.sleeping) {
      clearTimeout(this.sleeping.timer);
      this.sleeping.wake();
    }
    await this.loop;
    const wasLeading = this.leading;
    this.leading = false;
    if (wasLeading) {
      await this.release().catch((err: unknown) =>
        this.log(`could not release Lease ${this.settings.namespace}/${this.settings.name}: ${apiMessage(err)}`),
      );
      this.settings.onStoppedLeading?.();
    }
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const started = monotonic();
      let acquired = false;
      try {
        const bound = Math.max(this.retryPeriodMs, this.renewDeadlineMs / 2);
        acquired = await within(this.tryAcquireOrRenew(), bound, () => {
          throw new Error(`no answer from the apiserver within ${bound} ms`);
        });
        this.lastError = undefined;
      } catch (err) {
        const message = apiMessage(err);
        if (message !== this.lastError) this.log(`Lease ${this.settings.namespace}/${this.settings.name}: ${message}`);
        this.lastError = message;
      }
      if (this.stopped) return;
      if (acquired) {
        this.renewedAt = started;
        if (!this.leading) {
          this.leading = true;
          this.since = new Date();
          this.log(`${this.identity} leads (Lease ${this.settings.namespace}/${this.settings.name})`);
          this.settings.onStartedLeading?.();
        }
      } else if (
        this.leading &&
        (this.observedHolder !== this.identity || monotonic() - this.renewedAt >= this.renewDeadlineMs)
      ) {
        this.leading = false;
        this.log(
          `${this.identity} stopped leading (Lease ${this.settings.namespace}/${this.settings.name} ${this.observedHolder !== this.identity ? `taken by ${this.observedHolder || 'nobody'}` : 'not renewed within the renew deadline'})`,
        );
        this.settings.onStoppedLeading?.();
      }
      // client-go: the leader renews every retry period; candidates retry with jitter (here up to +20 %).
      await this.sleep(this.leading ? this.retryPeriodMs : this.retryPeriodMs * (1 + Math.random() * 0.2));
    }
  }

  private observe(lease: k8s.V1Lease): void {
    const version = lease.metadata?.resourceVersion;
    if (version !== this.observedVersion) {
      this.observedVersion = version;
      this.observedAt = monotonic();
    }
    const holder = lease.spec?.holderIdentity ?? '';
    if (holder !== this.observedHolder) {
      this.observedHolder = holder;
      this.settings.onNewLeader?.(holder);
    }
  }

  /** One attempt; true when this process holds the Lease afterwards. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const { namespace, name } = this.settings;
    const now = new k8s.V1MicroTime(Date.now());
    const durationSeconds = Math.ceil(this.leaseDurationMs / 1000);
    let lease: k8s.V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace });
    } catch (err) {
      if (apiStatus(err) !== 404) throw err;
      try {
        const created = await this.api.createNamespacedLease({
          namespace,
          body: {
            metadata: { name, namespace },
            spec: {
              holderIdentity: this.identity,
              leaseDurationSeconds: durationSeconds,
              acquireTime: now,
              renewTime: now,
              leaseTransitions: 0,
            },
          },
        });
        this.observe(created);
        return true;
      } catch (createErr) {
        if (apiStatus(createErr) === 409) return false; // another candidate created it first
        throw createErr;
      }
    }
    this.observe(lease);
    const spec = lease.spec ?? {};
    const holder = spec.holderIdentity ?? '';
    const ours = holder === this.identity;
    const durationMs = (spec.leaseDurationSeconds ?? durationSeconds) * 1000;
    if (holder && !ours && monotonic() < this.observedAt + durationMs) return false; // held, not expired by our clock
    lease.spec = {
      ...spec,
      holderIdentity: this.identity,
      leaseDurationSeconds: durationSeconds,
      renewTime: now,
      acquireTime: ours && spec.acquireTime ? spec.acquireTime : now,
      leaseTransitions: (spec.leaseTransitions ?? 0) + (ours ? 0 : 1),
    };
    try {
      // Conditional: the body carries the resourceVersion read above.
      this.observe(await this.api.replaceNamespacedLease({ name, namespace, body: lease }));
      return true;
    } catch (err) {
      if (apiStatus(err) === 409) return false; // changed since the read: someone else renewed or took it
      throw err;
    }
  }

  /** Gives the Lease up if this process still holds it: empty holder, 1 s duration (client-go's release). */
  private async release(): Promise<void> {
    const { namespace, name } = this.settings;
    const lease = await this.api.readNamespacedLease({ name, namespace });
    if (lease.spec?.holderIdentity !== this.identity) return;
    const now = new k8s.V1MicroTime(Date.now());
    lease.spec = {
      ...lease.spec,
      holderIdentity: undefined,
      leaseDurationSeconds: 1,
      renewTime: now,
      acquireTime: now,
    };
    await this.api.replaceNamespacedLease({ name, namespace, body: lease });
    this.log(`${this.identity} released Lease ${namespace}/${name}`);
  }

  private sleep(ms: number): Promise<void> {
    if (this.stopped) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        this.sleeping = undefined;
        resolve();
      };
      this.sleeping = { timer: setTimeout(wake, ms), wake };
    });
  }
}

const READ_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * A KubeConfig whose mutating requests (POST, PUT, PATCH, DELETE) check `leadership.isLeader()`
 * immediately before they are sent and throw NotLeaderError otherwise; reads and watches pass.
 * `onWrite` sees every write that is sent (the write log of KONFIDENCE_LOG_WRITES).
 */
export function fenceWrites(
  kc: k8s.KubeConfig,
  o: {
    leadership?: Leadership;
    onWrite?: (method: string, url: string) => void;
    serves?: (namespace: string) => boolean;
  },
): k8s.KubeConfig {
  const fenced = Object.create(kc) as k8s.KubeConfig;
  fenced.applySecurityAuthentication = async (context) => {
    const method = String(context.getHttpMethod());
    if (!READ_METHODS.has(method)) {
      const path = new URL(context.getUrl()).pathname;
      if (o.leadership && !o.leadership.isLeader())
        throw new NotLeaderError(o.leadership.identity, `${method} ${path}`);
      // Sharded: a write in a namespace the shard no longer serves is its new owner's to make.
      const namespace = /\/namespaces\/([^/]+)\//.exec(path)?.[1];
      if (namespace && o.serves && !o.serves(namespace))
        throw new NotLeaderError(
          o.leadership?.identity ?? 'this replica',
          `${method} ${path}: its shard no longer serves namespace ${namespace}`,
        );
      o.onWrite?.(method, new URL(context.getUrl()).pathname);
    }
    return kc.applySecurityAuthentication(context);
  };
  return fenced;
}

/** How often an elected component looks whether it has just become leader. */
const TAKEOVER_POLL_MS = 200;

/**
 * What an elected component (watcher, Stage controller) shares: it acts only while leader (or
 * always, standalone), checks right before each write, writes through a fenced KubeConfig, and
 * decides again for everything it has cached when it becomes leader (level-triggered takeover).
 */
export class LeaderGate {
  private wasLeader = false;
  private timer?: NodeJS.Timeout;

  /**
   * `serves` (sharded): whether the shard serves a namespace right now. Every write in a namespace
   * it no longer serves is refused, at the call (fence) and at the request (kubeConfig): one
   * decided while it served the namespace must not land once its new owner acts there.
   */
  constructor(
    private readonly leadership: Leadership | undefined,
    private readonly serves?: (namespace: string) => boolean,
  ) {}

  /** Whether this replica saw itself acting at its last look (every 200 ms): acting after a standby is a takeover. */
  get seenActing(): boolean {
    return this.wasLeader;
  }

  /** Standalone, or leader right now. */
  acting(): boolean {
    return !this.leadership || this.leadership.isLeader();
  }

  /** Throws NotLeaderError unless acting (and, sharded, serving `namespace`): call it right before a write. */
  fence(what: string, namespace?: string): void {
    if (!this.acting()) throw new NotLeaderError(this.leadership!.identity, what);
    if (namespace && this.serves && !this.serves(namespace))
      throw new NotLeaderError(
        this.leadership?.identity ?? 'this replica',
        `${what}: its shard no longer serves namespace ${namespace}`,
      );
  }

  /** `kc` itself standalone; else one whose mutating requests are refused while not leader. */
  kubeConfig(kc: k8s.KubeConfig): k8s.KubeConfig {
    const { leadership, serves } = this;
    return leadership || serves
      ? fenceWrites(kc, { ...(leadership ? { leadership } : {}), ...(serves ? { serves } : {}) })
      : kc;
  }

  /** Calls `tookOver` each time this replica becomes leader; nothing standalone. */
  start(tookOver: (identity: string) => void): void {
    this.wasLeader = this.acting();
    if (!this.leadership) return;
    const identity = this.leadership.identity;
    this.timer = setInterval(() => {
      const leader = this.acting();
      if (leader && !this.wasLeader) tookOver(identity);
      this.wasLeader = leader;
    }, TAKEOVER_POLL_MS);
  }

  stop(): void {
    clearInterval(this.timer);
  }
}
