/**
 * SIGTERM ends every role's process within its grace period, whatever it is doing (worker/shutdown.ts):
 * at several points of its start-up (a signal there exits at once, and the watcher starts no
 * workflow for an activation created after it), and once ready while the apiserver does not answer
 * (reached through a TCP proxy that the test stops answering), where the graceful stop hangs on its
 * requests and the grace period ends it. `worker/main.ts ROLE` as its own process, on the local
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
import { Connection, Client } from '@temporalio/client';
import { API_VERSION } from '../api/group.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { pollUntil } from '../scripts/env/process.js';
import { activationWorkflowId } from '../shared/activation.js';
import { freshNamespace, kubeConfig } from './support/cluster.js';
import { removeNamespaces } from './support/namespaces.js';
import { temporalAddress, temporalNamespace } from './support/temporal.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const kc = kubeConfig();
const objects = new CustomObjects(kc);
const GRACE_MS = 4_000;
/** What a loaded 2-core machine may add to an exit: the runtime's own teardown, the signal's delivery. */
const SLACK_MS = 4_000;
const ROLES: [string, ...string[]][] = [['core'], ['watcher'], ['stage-controller'], ['executor', 'gateway-api'], ['all']];

const children = new Set<ChildProcess>();
const namespaces: string[] = [];
const dir = mkdtempSync(join(tmpdir(), 'konfidence-shutdown-'));
let proxy: ApiserverProxy | undefined;
let client: Client;

beforeAll(async () => {
  client = new Client({ connection: await Connection.connect({ address: temporalAddress() }), namespace: temporalNamespace() });
});

afterAll(async () => {
  for (const child of children) kill(child, 'SIGKILL');
  await Promise.all([...children].map((c) => (c.exitCode === null && c.signalCode === null ? once(c, 'exit') : undefined)));
  proxy?.close();
  await removeNamespaces(kc, namespaces);
  await client.connection.close();
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
  lines: string[];
  /** When the process exited, ms after `since`. */
  exitedAfter(since: number): Promise<number>;
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
  const exit = once(child, 'exit').then(() => performance.now());
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
    lines,
    exitedAfter: async (since) => (await exit) - since,
    ready: async () => {
      await pollUntil(async () => port !== undefined && (await fetch(`http://127.0.0.1:${port}/readyz`).catch(() => undefined))?.status === 200, 120_000, `${args.join(' ')} to be ready (log: ${lines.slice(-3).join(' | ')})`, 200);
    },
  };
}

/** SIGTERM now; how long the process took to exit after it. */
async function terminate(role: Role): Promise<number> {
  expect({ running: role.child.exitCode === null && role.child.signalCode === null, log: role.lines.slice(-3) }).toEqual({ running: true, log: expect.any(Array) });
  const at = performance.now();
  kill(role.child, 'SIGTERM');
  const took = await role.exitedAfter(at);
  children.delete(role.child);
  return took;
}

/** Each role's exit after its SIGTERM, by role; the roles run side by side (one file's time, not five). */
async function terminateAll(roles: Role[]): Promise<Record<string, boolean>> {
  const took = await Promise.all(roles.map(terminate));
  return Object.fromEntries(roles.map((r, i) => [r.name, took[i]! < GRACE_MS + SLACK_MS]));
}
const allInTime = () => Object.fromEntries(ROLES.map((args) => [args.join(' '), true]));

it.each([300, 1_500, 4_000])('SIGTERM %i ms into start-up: every role exits within its grace period, starting nothing after the signal', async (delayMs) => {
  const roles = await Promise.all(ROLES.map((args) => startRole(args, {})));
  // A point in their start-up, the thing under test (not a wait for something to happen).
  await new Promise((r) => setTimeout(r, delayMs));
  expect(await terminateAll(roles)).toEqual(allInTime());
  // A watcher (watcher, all) would have started a workflow for this activation: none did.
  for (const role of roles) {
    const { object } = await objects.create({ apiVersion: API_VERSION, kind: 'VectorActivation', metadata: { name: 'after-the-signal', namespace: role.namespace }, spec: { stage: 'shop', stageVersion: 'shop-2' } });
    const id = activationWorkflowId({ namespace: role.namespace, name: 'after-the-signal', uid: object.metadata.uid! });
    expect({ role: role.name, workflow: await client.workflow.getHandle(id).describe().then(() => 'started', () => 'none') }).toEqual({ role: role.name, workflow: 'none' });
  }
}, 120_000);

it('every role ready, then the apiserver stops answering: SIGTERM ends each within its grace period', async () => {
  proxy = await apiserverProxy();
  const roles = await Promise.all(ROLES.map((args) => startRole(args, { KUBECONFIG: proxy!.kubeconfig, KONFIDENCE_LEADER_ELECTION: 'true', KONFIDENCE_IDENTITY: `shutdown-${args[0]}` })));
  await Promise.all(roles.map((r) => r.ready()));
  proxy.freeze();
  expect(await terminateAll(roles)).toEqual(allInTime());
}, 240_000);

interface ApiserverProxy {
  kubeconfig: string;
  /** Stops answering: open connections hang, new ones are accepted and never answered. */
  freeze(): void;
  resume(): void;
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
    resume: () => {
      frozen = false;
    },
    close: () => {
      for (const pair of open) pair.client.destroy();
      server.close();
    },
  };
}
