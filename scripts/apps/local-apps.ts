/**
 * The local control plane's stand-in for a deployment system: for every StageVersion of the
 * namespaces it serves whose backend names a Service, it makes that Service (a plain ClusterIP
 * Service, owned by the StageVersion, its address on the loopback range: scripts/env/gateway.ts)
 * and runs the version's server on it (app-server.mjs), one process per version. When the
 * StageVersion is gone (deleted, its finalizers let go) the server stops and the Service goes with
 * it, as an undeploy does: a gateway that still sends it requests then fails them.
 *
 * The tests, `npm start`'s sample and the benchmarks use it; `behave` tells a version to fail a
 * share of requests or to answer late.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { API_VERSION } from '../../api/group.js';
import { apiMessage, k8s } from '../../k8s/client.js';
import type { CustomObject } from '../../k8s/custom-objects.js';
import { loopbackService } from './loopback-service.js';
import { KindCache } from '../../k8s/kind-cache.js';

const SERVER = fileURLToPath(new URL('./app-server.mjs', import.meta.url));
/** A version's server is up within this long, or the deploy failed. */
const START_TIMEOUT_MS = 15_000;
const DEFAULT_PORT = 8080;

export interface Behaviour {
  /** The share of requests answered 503 (0 to 1). */
  failRatio?: number;
  /** How long each request waits before its answer. */
  delayMs?: number;
}

interface Running {
  namespace: string;
  stageVersion: string;
  uid: string;
  service: string;
  address: string;
  port: number;
  process: ChildProcess;
  ready: Promise<void>;
}

export interface LocalAppsOptions {
  kubeConfig: k8s.KubeConfig;
  namespaces: readonly string[];
  log?: (message: string) => void;
}

export class LocalApps {
  private readonly caches: KindCache[];
  private readonly core: k8s.CoreV1Api;
  /** By namespace/StageVersion name. */
  private readonly running = new Map<string, Running>();
  /** Deploys and undeploys in flight, by namespace/StageVersion name: one at a time per version. */
  private readonly pending = new Map<string, Promise<void>>();
  private readonly log: (message: string) => void;
  private stopped = false;

  constructor(o: LocalAppsOptions) {
    this.log = o.log ?? (() => undefined);
    this.core = o.kubeConfig.makeApiClient(k8s.CoreV1Api);
    this.caches = o.namespaces.map(
      (namespace) =>
        new KindCache({
          kubeConfig: o.kubeConfig,
          plural: 'stageversions',
          namespace,
          onChange: (type, sv) => this.changed(type, sv),
          log: (message) => this.log(message),
        }),
    );
  }

  /** Lists the StageVersions and deploys those with a backend; resolves once each of their servers listens. */
  async start(): Promise<void> {
    await Promise.all(this.caches.map((c) => c.start()));
    await this.settled();
  }

  /** Stops every server (and the watches); the Services stay with their StageVersions. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.caches.map((c) => c.stop()));
    await Promise.allSettled(this.pending.values());
    await Promise.all([...this.running.values()].map((r) => stopServer(r.process)));
    this.running.clear();
  }

  /** Resolves once every deploy and undeploy asked so far is done. */
  async settled(): Promise<void> {
    while (this.pending.size > 0) await Promise.allSettled(this.pending.values());
  }

  /** Where a version's server listens, once it does; undefined when it is not deployed. */
  async address(namespace: string, stageVersion: string): Promise<{ address: string; port: number } | undefined> {
    await this.pending.get(`${namespace}/${stageVersion}`)?.catch(() => undefined);
    const r = this.running.get(`${namespace}/${stageVersion}`);
    if (!r) return undefined;
    await r.ready;
    return { address: r.address, port: r.port };
  }

  /** Whether a version's server runs. */
  deployed(namespace: string, stageVersion: string): boolean {
    return this.running.has(`${namespace}/${stageVersion}`);
  }

  /** Tells a version to fail a share of requests, or to answer late (each field optional). */
  async behave(namespace: string, stageVersion: string, behaviour: Behaviour): Promise<void> {
    const at = await this.address(namespace, stageVersion);
    if (!at) throw new Error(`StageVersion ${namespace}/${stageVersion} is not deployed`);
    const res = await fetch(`http://${at.address}:${at.port}/_konfidence/behaviour`, {
      method: 'POST',
      body: JSON.stringify(behaviour),
    });
    if (!res.ok) throw new Error(`${stageVersion} refused the behaviour: ${await res.text()}`);
  }

  private changed(type: 'ADDED' | 'MODIFIED' | 'DELETED', sv: CustomObject): void {
    if (this.stopped) return;
    const key = `${sv.metadata.namespace}/${sv.metadata.name}`;
    const before = this.pending.get(key) ?? Promise.resolve();
    const next = before
      .catch(() => undefined)
      .then(() => (type === 'DELETED' ? this.undeploy(key, sv.metadata.uid) : this.deploy(key, sv)))
      .catch((err: unknown) => this.log(`StageVersion ${key}: ${apiMessage(err)}`))
      .finally(() => {
        if (this.pending.get(key) === next) this.pending.delete(key);
      });
    this.pending.set(key, next);
  }

  private async deploy(key: string, sv: CustomObject): Promise<void> {
    const backend = sv.spec?.backend as { service?: string; port?: number } | undefined;
    const existing = this.running.get(key);
    if (existing && existing.uid === sv.metadata.uid) return;
    if (existing) await this.undeploy(key, existing.uid); // re-created under the same name
    // One being deleted is not deployed again (its namespace may be going: nothing new is let in).
    if (!backend?.service || this.stopped || sv.metadata.deletionTimestamp) return;
    const namespace = sv.metadata.namespace!;
    const port = backend.port ?? DEFAULT_PORT;
    // Owned by the StageVersion, so that it goes with it.
    const address = await loopbackService(this.core, namespace, backend.service, port, {
      apiVersion: API_VERSION,
      kind: 'StageVersion',
      name: sv.metadata.name,
      uid: sv.metadata.uid!,
    });
    const child = spawn(
      process.execPath,
      [SERVER, '--address', address, '--port', String(port), '--version', sv.metadata.name],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const ready = listening(child, `${key} on ${address}:${port}`);
    this.running.set(key, {
      namespace,
      stageVersion: sv.metadata.name,
      uid: sv.metadata.uid!,
      service: backend.service,
      address,
      port,
      process: child,
      ready,
    });
    await ready;
    this.log(`deployed ${key} on ${address}:${port} (Service ${backend.service})`);
  }

  private async undeploy(key: string, uid: string | undefined): Promise<void> {
    const r = this.running.get(key);
    if (!r || (uid && r.uid !== uid)) return;
    this.running.delete(key);
    await stopServer(r.process);
    this.log(`undeployed ${key}`);
  }
}

/** Resolves when the server says it listens; rejects when it exits first or takes too long. */
function listening(child: ChildProcess, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    let said = '';
    const timer = setTimeout(
      () => reject(new Error(`${what}: no server within ${START_TIMEOUT_MS} ms`)),
      START_TIMEOUT_MS,
    );
    child.stderr!.on('data', (d) => (said += String(d)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (!line.startsWith('listening')) return;
      clearTimeout(timer);
      resolve();
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what}: the server exited (${code}): ${said.trim()}`));
    });
  });
}

/** SIGTERM, then SIGKILL if it lingers; resolves once it has exited. */
function stopServer(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), 6_000);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}
