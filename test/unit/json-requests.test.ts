/**
 * k8s/json-requests.ts: a request is prepared where the generated APIs' calls are (credentials, a
 * role's user agent, a write fence, the deadline), sent as given, and answered as JSON; a refusal
 * is the client's ApiException with the apiserver's own message. What the custom resource helpers
 * and the Event recorder send by it. TLS (the agent's CA, client certificate and server name) is
 * the integration tests' part: every request there goes to the real apiserver over TLS. No servers: a local HTTP server
 * stands for the apiserver's socket and records what reaches it.
 */
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import {
  apiMessage,
  apiStatus,
  k8s,
  REQUEST_TIMEOUT_MS,
  setRequestTimeout,
  userAgentOf,
  withUserAgent,
} from '../../k8s/client.js';
import { CustomObjects } from '../../k8s/custom-objects.js';
import { eventRecorder, SeriesCache } from '../../k8s/events.js';
import { JsonRequests, customObjectPath } from '../../k8s/json-requests.js';
import { fenceWrites, NotLeaderError } from '../../k8s/leader-election.js';
import { offlineKubeConfig } from './support/kube-config.js';

interface Received {
  method?: string;
  url?: string;
  headers: IncomingHttpHeaders;
  body: string;
}
const received: Received[] = [];
/** What the server answers next: a status and a body, or nothing at all (a stalled apiserver). */
let answer: { status: number; body: string; gzip?: boolean } | 'never' = { status: 200, body: '{}' };
let server: Server;

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() });
      if (answer === 'never') return;
      res.writeHead(answer.status, {
        'Content-Type': 'application/json',
        ...(answer.gzip ? { 'Content-Encoding': 'gzip' } : {}),
      });
      res.end(answer.gzip ? gzipSync(answer.body) : answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
});
afterAll(async () => {
  setRequestTimeout(REQUEST_TIMEOUT_MS);
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});
beforeEach(() => {
  received.length = 0;
  answer = { status: 200, body: '{}' };
});

const kubeConfig = () => offlineKubeConfig('secret', `http://127.0.0.1:${(server.address() as AddressInfo).port}`);
const stagePath = customObjectPath('landscape.konfidence.cloud', 'v1alpha1', 'stages', 'team-a', 'web', 'status');

test('a patch goes as given, with the credentials and the role, and its answer comes back as JSON', async () => {
  answer = { status: 200, body: JSON.stringify({ metadata: { name: 'web', resourceVersion: '8' } }) };
  const requests = new JsonRequests(withUserAgent(kubeConfig(), userAgentOf('core')));
  const written = await requests.send({
    method: 'PATCH',
    path: stagePath,
    query: { fieldManager: 'konfidence', dryRun: undefined },
    body: '{"status":{"phase":"Ready"}}',
    contentType: 'application/merge-patch+json',
  });
  expect(written).toEqual({ metadata: { name: 'web', resourceVersion: '8' } });
  expect(received).toHaveLength(1);
  expect(received[0]).toMatchObject({
    method: 'PATCH',
    url: '/apis/landscape.konfidence.cloud/v1alpha1/namespaces/team-a/stages/web/status?fieldManager=konfidence',
    body: '{"status":{"phase":"Ready"}}',
    headers: {
      authorization: 'Bearer secret',
      'user-agent': 'konfidence-activation/core',
      'content-type': 'application/merge-patch+json',
      accept: 'application/json',
    },
  });
});

test('each segment of a path is encoded as one', () => {
  expect(customObjectPath('g', 'v1', 'things', 'ns', 'a/b?c')).toBe('/apis/g/v1/namespaces/ns/things/a%2Fb%3Fc');
});

test("a refusal is the client's ApiException, with the apiserver's status and message", async () => {
  answer = {
    status: 422,
    body: JSON.stringify({ kind: 'Status', message: 'the server rejected our request due to an error in our request' }),
  };
  const err = await new JsonRequests(kubeConfig()).send({ method: 'GET', path: stagePath }).catch((e: unknown) => e);
  expect(err).toBeInstanceOf(k8s.ApiException);
  expect(apiStatus(err)).toBe(422);
  expect(apiMessage(err)).toBe('the server rejected our request due to an error in our request');
});

test('a deletion may answer nothing; any other answer that is not JSON is an error, not an object gone', async () => {
  answer = { status: 200, body: '' };
  expect(await new JsonRequests(kubeConfig()).send({ method: 'DELETE', path: stagePath })).toBeUndefined();
  answer = { status: 200, body: '<html>sign in</html>' };
  await expect(new JsonRequests(kubeConfig()).send({ method: 'GET', path: stagePath })).rejects.toThrow(
    'the apiserver answered 200 with application/json, not JSON: "<html>sign in</html>"',
  );
  await expect(new CustomObjects(kubeConfig()).get('Stage', 'team-a', 'web')).rejects.toThrow('not JSON');
});

test('a gzipped answer (a large list) is unzipped', async () => {
  answer = { status: 200, body: JSON.stringify({ items: [{ metadata: { name: 'web' } }] }), gzip: true };
  expect(await new CustomObjects(kubeConfig()).list('Stage', 'team-a')).toEqual([{ metadata: { name: 'web' } }]);
  expect(received[0]!.headers['accept-encoding']).toBe('gzip');
});

describe('what the custom resource helpers send', () => {
  beforeEach(() => {
    answer = { status: 200, body: JSON.stringify({ metadata: { name: 'to-2' } }) };
  });

  test("a JSON patch of the status, its strings escaped as Go writes them (a test's bytes match)", async () => {
    const ops = [{ op: 'test', path: '/status/message', value: 'p < 0.05 & more' }];
    await new CustomObjects(kubeConfig()).jsonPatchStatus('VectorActivation', 'team-a', 'to-2', ops);
    expect(received[0]).toMatchObject({
      method: 'PATCH',
      url: '/apis/landscape.konfidence.cloud/v1alpha1/namespaces/team-a/vectoractivations/to-2/status',
      headers: { 'content-type': 'application/json-patch+json' },
      body: '[{"op":"test","path":"/status/message","value":"p \\u003c 0.05 \\u0026 more"}]',
    });
  });

  test('a deletion of one object by its uid carries the precondition', async () => {
    await new CustomObjects(kubeConfig()).delete('VectorActivation', 'team-a', 'to-2', 'uid-1');
    expect(received[0]).toMatchObject({
      method: 'DELETE',
      url: '/apis/landscape.konfidence.cloud/v1alpha1/namespaces/team-a/vectoractivations/to-2',
      body: '{"preconditions":{"uid":"uid-1"}}',
    });
  });

  test('an Event is created as events.k8s.io/v1 with its time to the microsecond', async () => {
    const record = eventRecorder(kubeConfig(), () => undefined, new SeriesCache());
    const regarding = {
      apiVersion: 'landscape.konfidence.cloud/v1alpha1',
      kind: 'Stage',
      namespace: 'team-a',
      name: 'web',
      uid: 'u1',
    };
    await record(regarding, 'Normal', 'ActivationStarted', 'to-2 started', 'Activate', { once: true });
    expect(received).toHaveLength(1);
    expect(received[0]).toMatchObject({ method: 'POST', url: '/apis/events.k8s.io/v1/namespaces/team-a/events' });
    const event = JSON.parse(received[0]!.body);
    expect(event).toMatchObject({
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      reason: 'ActivationStarted',
      action: 'Activate',
      note: 'to-2 started',
      regarding,
    });
    expect(event.eventTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
  });
});

test('a write fence refuses a write before it is sent, and lets a read pass', async () => {
  const fenced = new JsonRequests(
    fenceWrites(kubeConfig(), { leadership: { identity: 'b', isLeader: () => false, leaderSince: () => undefined } }),
  );
  await expect(fenced.send({ method: 'PATCH', path: stagePath, body: '{}' })).rejects.toBeInstanceOf(NotLeaderError);
  expect(received).toEqual([]);
  await fenced.send({ method: 'GET', path: stagePath });
  expect(received.map((r) => r.method)).toEqual(['GET']);
});

test('a request the apiserver never answers fails at its deadline, saying so', async () => {
  answer = 'never';
  setRequestTimeout(300);
  try {
    const err = await new JsonRequests(kubeConfig()).send({ method: 'GET', path: stagePath }).catch((e: unknown) => e);
    expect(apiMessage(err)).toBe('the apiserver did not answer within 0.3 s');
  } finally {
    setRequestTimeout(REQUEST_TIMEOUT_MS);
  }
});
