/**
 * SIGTERM ends every role's process within its grace period, whatever it is doing (worker/shutdown.ts):
 * during its start-up (once its health server listens, with the apiserver answering and not; a
 * signal there ends it at once, by its own hand, not by Node's default), and once ready while the
 * apiserver does not answer (reached through a TCP proxy that the test stops answering), where the
 * graceful stop hangs on its requests and the grace period ends it. An elected role SIGTERMed
 * while it leads releases its Lease on the way out. `worker/main.ts ROLE` as its own process, on the local
 * servers, each in namespaces of its own.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { pollUntil } from '../scripts/env/process.js';
import { k8s } from '../k8s/client.js';
import { LEASE_NAMES } from '../k8s/leader-election.js';
import { freshNamespace, kubeConfig } from './support/cluster.js';
import { removeNamespaces } from './support/namespaces.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const kc = kubeConfig();
const GRACE_MS = 4_000;
/** What a loaded 2-core machine may add to an exit: the runtime's own teardown, the signal's delivery. */
const SLACK_MS = 4_000;
const ROLES: [string, ...string[]][] = [
  ['core'],
  ['watcher'],
  ['stage-controller'],
  ['executor', 'gateway-api'],
  ['all'],
];

const children = new Set<ChildProcess>();
const namespaces: string[] = [];
const dir = mkdtempSync(join(tmpdir(), 'konfidence-shutdown-'));
let proxy: ApiserverProxy | undefined;

afterAll(async () => {
  for (const child of children) kill(child, 'SIGKILL');
  const running = [...children].filter((child) => child.exitCode === null && child.signalCode === null);
  await Promise.all(running.map((child) => once(child, 'exit')));
  proxy?.close();
  await removeNamespaces(kc, namespaces);
  rmSync(dir, { recursive: true, force: true });
});

function kill(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    process.kill(-child.pid!, signal);
  } catch {
    // gone already
  }
}

interface Role {
  /** The role as its command line names it. */
  name: string;
  child: ChildProcess;
  /** The namespace it watches. */
  namespace: string;
  /** Its system namespace (the elected roles' Leases are there). */
  systemNamespace: string;
  lines: string[];
  /** How the process ended: ms after `since`, and the signal that killed it (null: it exited by itself). */
  exitedAfter(since: number): Promise<{ ms: number; signal: NodeJS.Signals | null }>;
  /** Resolves once its health server listens (the port is logged early in start-up). */
  listening(): Promise<void>;
  ready(): Promise<void>;
}

async function startRole(args: string[], env: Record<string, string>): Promise<Role> {
  const systemNs = await freshNamespace('shutdown-sys');
  const watched = await freshNamespace('shutdown');
  namespaces.push(systemNs, watched);
  const child = spawn(process.execPath, ['--import', 'tsx', 'worker/main.ts', ...args], {
    cwd: root,
    env: {
      ...process.env,
      KONFIDENCE_SYSTEM_NAMESPACE: systemNs,
      KONFIDENCE_WATCH_NAMESPACES: watched,
      KONFIDENCE_QUEUE_SUFFIX: `-${watched}`,
      KONFIDENCE_HEALTH_PORT: '0',
      KONFIDENCE_SHUTDOWN_GRACE_MS: String(GRACE_MS),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  children.add(child);
  const exit = once(child, 'exit').then(([, signal]) => ({
    at: performance.now(),
    signal: signal as NodeJS.Signals | null,
  }));
  const lines: string[] = [];
  let port: number | undefined;
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => {
      lines.push(line);
      const logged = /health server listening on port (\d+)/.exec(line)?.[1];
      if (logged) port = Number(logged);
    });
  }
  return {
    name: args.join(' '),
    child,
    namespace: watched,
    systemNamespace: systemNs,
    lines,
    exitedAfter: async (since) => {
      const { at, signal } = await exit;
      return { ms: at - since, signal };
    },
    listening: async () => {
      await pollUntil(() => port, 60_000, `${args.join(' ')} to listen (log: ${lines.slice(-3).join(' | ')})`, 20);
    },
    ready: async () => {
      await pollUntil(
        async () =>
          port !== undefined && (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200,
        120_000,
        `${args.join(' ')} to be ready (log: ${lines.slice(-3).join(' | ')})`,
        200,
      );
    },
  };
}

/** SIGTERM now; how the process ended after it. */
async function terminate(role: Role): Promise<{ ms: number; signal: NodeJS.Signals | null }> {
  expect({
    running: role.child.exitCode === null && role.child.signalCode === null,
    log: role.lines.slice(-3),
  }).toEqual({ running: true, log: expect.any(Array) });
  const at = performance.now();
  kill(role.child, 'SIGTERM');
  const ended = await role.exitedAfter(at);
  children.delete(role.child);
  return ended;
}

/**
 * Each role's end after its SIGTERM, by role: in time, and by its own hand (an exit, not Node's
 * default end on the signal, which would say nothing of worker/shutdown.ts). The roles run side
 * by side (one file's time, not five).
 */
async function terminateAll(roles: Role[]): Promise<Record<string, string>> {
  const ended = await Promise.all(roles.map(terminate));
  return Object.fromEntries(
    roles.map((r, i) => [
      r.name,
      `${ended[i]!.ms < GRACE_MS + SLACK_MS ? 'in time' : `after ${Math.round(ended[i]!.ms)} ms`}, ${ended[i]!.signal ?? 'exited'}`,
    ]),
  );
}
const allExitedInTime = () => Object.fromEntries(ROLES.map((args) => [args.join(' '), 'in time, exited']));

it.each(['', ' while the apiserver does not answer'])(
  'SIGTERM during start-up, once its health server listens%s: every role exits at once, by itself',
  async (outage) => {
    if (outage) {
      proxy ??= await apiserverProxy();
      proxy.freeze();
    }
    const roles = await Promise.all(
      ROLES.map((args) => startRole(args, outage ? { KUBECONFIG: proxy!.kubeconfig } : {})),
    );
    // The health server listens early in start-up, before the caches list (which the frozen
    // apiserver keeps from ever finishing) and the workflows are bundled.
    await Promise.all(roles.map((r) => r.listening()));
    expect(await terminateAll(roles)).toEqual(allExitedInTime());
  },
  120_000,
);

it('every role ready, then the apiserver stops answering: SIGTERM ends each within its grace period', async () => {
  proxy ??= await apiserverProxy();
  proxy.thaw();
  const roles = await Promise.all(
    ROLES.map((args) =>
      startRole(args, {
        KUBECONFIG: proxy!.kubeconfig,
        KONFIDENCE_LEADER_ELECTION: 'true',
        KONFIDENCE_IDENTITY: `shutdown-${args[0]}`,
      }),
    ),
  );
  await Promise.all(roles.map((r) => r.ready()));
  proxy.freeze();
  expect(await terminateAll(roles)).toEqual(allExitedInTime());
}, 240_000);

it('an elected watcher and Stage controller, each leading, SIGTERMed: each exits by itself and leaves its Lease released, for a standby to take at once', async () => {
  const elected = ['watcher', 'stage-controller'] as const;
  // The default grace period: what is looked at here is the release, not how fast the exit is.
  const roles = await Promise.all(
    elected.map((role) =>
      startRole([role], {
        KONFIDENCE_LEADER_ELECTION: 'true',
        KONFIDENCE_IDENTITY: `leader-${role}`,
        KONFIDENCE_SHUTDOWN_GRACE_MS: '28000',
      }),
    ),
  );
  const leases = kc.makeApiClient(k8s.CoordinationV1Api);
  const lease = (i: number) =>
    leases.readNamespacedLease({ name: LEASE_NAMES[elected[i]!], namespace: roles[i]!.systemNamespace });
  await Promise.all(
    roles.map((r, i) =>
      pollUntil(
        async () => (await lease(i).catch(() => undefined))?.spec?.holderIdentity === `leader-${elected[i]}`,
        60_000,
        `${r.name} to lead (log: ${r.lines.slice(-3).join(' | ')})`,
        100,
      ),
    ),
  );
  const ended = await Promise.all(roles.map(terminate));
  expect(ended.map((e) => e.signal)).toEqual([null, null]);
  // Released as client-go releases: no holder, a 1 s duration; a standby need not wait the 15 s lease out.
  const after = await Promise.all(roles.map((_r, i) => lease(i)));
  expect(after.map((l) => ({ holder: l.spec?.holderIdentity ?? '', seconds: l.spec?.leaseDurationSeconds }))).toEqual([
    { holder: '', seconds: 1 },
    { holder: '', seconds: 1 },
  ]);
}, 180_000);

interface ApiserverProxy {
  kubeconfig: string;
  /** Stops answering: open connections hang, new ones are accepted and never answered. */
  freeze(): void;
  /** Answers again (new connections go through). */
  thaw(): void;
  close(): void;
}

/** A TCP proxy to the apiserver and a kubeconfig that goes through it (TLS passes through untouched). */
async function apiserverProxy(): Promise<ApiserverProxy> {
  const upstream = new URL(kc.getCurrentCluster()!.server);
  let frozen = false;
  const open = new Set<{ client: Socket; server?: Socket }>();
  const server: Server = createServer((clientSocket) => {
    const pair: { client: Socket; server?: Socket } = { client: clientSocket };
    open.add(pair);
    clientSocket.on('error', () => undefined);
    clientSocket.on('close', () => {
      pair.server?.destroy();
      open.delete(pair);
    });
    if (frozen) return;
    pair.server = connect(Number(upstream.port), upstream.hostname);
    pair.server.on('error', () => clientSocket.destroy());
    clientSocket.pipe(pair.server).pipe(clientSocket);
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const port = (server.address() as { port: number }).port;
  const config = JSON.parse(kc.exportConfig());
  for (const c of config.clusters) c.cluster.server = `https://127.0.0.1:${port}`;
  const kubeconfig = join(dir, 'kubeconfig');
  writeFileSync(kubeconfig, JSON.stringify(config));
  return {
    kubeconfig,
    freeze: () => {
      frozen = true;
      for (const pair of open) {
        pair.client.unpipe();
        pair.server?.unpipe();
        pair.server?.destroy();
        pair.server = undefined;
      }
    },
    thaw: () => {
      frozen = false;
    },
    close: () => {
      for (const pair of open) pair.client.destroy();
      server.close();
    },
  };
}
