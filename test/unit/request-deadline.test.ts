/**
 * k8s/client.ts: every API call has a deadline. A call to an apiserver that accepts the connection
 * and never answers fails at it, with a message that says so; a call answered in time is unaffected.
 * No servers: a local HTTP server stands for the apiserver's socket.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { apiMessage, k8s, REQUEST_TIMEOUT_MS, setRequestTimeout } from '../../k8s/client.js';

let server: Server;
let answer = false;
beforeAll(async () => {
  server = createServer((_req, res) => {
    if (!answer) return; // the connection stays open, and nothing comes back
    res.writeHead(200, { 'Content-Type': 'application/json' });
    res.end(JSON.stringify({ kind: 'NamespaceList', apiVersion: 'v1', metadata: {}, items: [] }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  setRequestTimeout(300);
});
afterAll(async () => {
  setRequestTimeout(REQUEST_TIMEOUT_MS);
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

function client(): k8s.CoreV1Api {
  const kc = new k8s.KubeConfig();
  const cluster = {
    name: 'local',
    server: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    skipTLSVerify: true,
  };
  kc.loadFromOptions({
    clusters: [cluster],
    users: [{ name: 'nobody' }],
    contexts: [{ name: 'local', cluster: 'local', user: 'nobody' }],
    currentContext: 'local',
  });
  return kc.makeApiClient(k8s.CoreV1Api);
}

it('fails a call the apiserver never answers at its deadline, saying so', async () => {
  answer = false;
  const err = await client()
    .listNamespace()
    .then(
      () => undefined,
      (e: unknown) => e,
    );
  expect(apiMessage(err)).toBe('the apiserver did not answer within 0.3 s');
});

it('leaves a call answered in time as it was', async () => {
  answer = true;
  expect((await client().listNamespace()).items).toEqual([]);
});
