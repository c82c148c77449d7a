/**
 * `npm run expose`: an HTTP server of a user's own, on a port of 127.0.0.1, behind a Service of the
 * local control plane, reached through the local gateway by an HTTPRoute that names the Service.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { requestOnce } from '../scripts/apps/load.js';
import { GATEWAY_PARENT_REF } from '../scripts/env/gateway.js';
import { pollUntil, stopProcess } from '../scripts/env/process.js';
import { freshNamespace, kubeConfig } from './support/cluster.js';
import { gatewayUrl } from './support/data-plane.js';
import { createOther } from './support/system.js';

const root = fileURLToPath(new URL('..', import.meta.url));
let ns: string;
let mine: Server;
let expose: ChildProcess | undefined;
let said = '';

beforeAll(async () => {
  ns = await freshNamespace('expose');
  // The user's app: any HTTP server on loopback.
  mine = createServer((_req, res) =>
    res.writeHead(200, { 'x-konfidence-version': 'my-app' }).end('hello from my app\n'),
  );
  mine.listen(0, '127.0.0.1');
  await once(mine, 'listening');
});
afterAll(async () => {
  if (expose?.pid) await stopProcess(expose.pid);
  await new Promise((resolve) => mine?.close(resolve));
});

it('puts a server on 127.0.0.1 behind a Service the gateway routes to, and says how to use it', async () => {
  const port = (mine.address() as AddressInfo).port;
  expose = spawn(
    process.execPath,
    ['--import', 'tsx', 'scripts/expose.ts', 'my-app', String(port), '--namespace', ns, '--service-port', '8080'],
    { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  expose.stdout!.on('data', (d) => (said += String(d)));
  expose.stderr!.on('data', (d) => (said += String(d)));
  await pollUntil(
    () => said.includes('Ctrl-C stops forwarding') || undefined,
    60_000,
    `expose to say it forwards (said: ${said})`,
    100,
  );
  expect(said).toMatch(
    new RegExp(`Service ${ns}/my-app \\(127\\.\\d+\\.\\d+\\.\\d+:8080\\) forwards to 127\\.0\\.0\\.1:${port}`),
  );

  const host = `my-app.${ns}.test`;
  await createOther(kubeConfig(), 'gateway.networking.k8s.io', 'v1', 'httproutes', ns, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: 'my-app', namespace: ns },
    spec: {
      parentRefs: [GATEWAY_PARENT_REF],
      hostnames: [host],
      rules: [{ backendRefs: [{ name: 'my-app', port: 8080 }] }],
    },
  });
  const answer = await pollUntil(
    async () => {
      const r = await requestOnce(gatewayUrl(), host);
      return r.status === 200 ? r : undefined;
    },
    30_000,
    'the gateway to route to my app',
    200,
  );
  expect(answer.version).toBe('my-app');
});

it('refuses a bad command line with the usage, before it touches anything', async () => {
  const child = spawn(process.execPath, ['--import', 'tsx', 'scripts/expose.ts', 'My_App', '80'], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let err = '';
  child.stderr!.on('data', (d) => (err += String(d)));
  const [code] = await once(child, 'exit');
  expect(code).toBe(2);
  expect(err).toContain('"My_App" is no Service name');
});
