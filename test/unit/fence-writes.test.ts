/**
 * Writes through a fenced KubeConfig (k8s/leader-election.ts fenceWrites): a sharded component's
 * write in a namespace its shard no longer serves is refused before it is sent, whatever decided
 * it earlier; reads, and writes outside any namespace, pass. No server: the request is only
 * prepared, never sent.
 */
import { fenceWrites, NotLeaderError } from '../../k8s/leader-election.js';
import { k8s } from '../../k8s/client.js';
import { offlineKubeConfig } from './support/kube-config.js';

const kc = offlineKubeConfig('t', 'https://127.0.0.1:1');
const serving = new Set(['served']);
const fenced = fenceWrites(kc, { serves: (ns) => serving.has(ns) });
const prepare = (method: k8s.HttpMethod, path: string) =>
  fenced.applySecurityAuthentication(new k8s.RequestContext(`https://127.0.0.1:1${path}`, method));
const vas = (ns: string) => `/apis/landscape.konfidence.cloud/v1alpha1/namespaces/${ns}/vectoractivations/va/status`;

it.each([
  ['a write in a served namespace', k8s.HttpMethod.PATCH, vas('served'), 'sent'],
  ['a write in a namespace the shard dropped', k8s.HttpMethod.PATCH, vas('dropped'), 'refused'],
  ['a create in a namespace the shard dropped', k8s.HttpMethod.POST, '/api/v1/namespaces/dropped/events', 'refused'],
  ['a read in a namespace the shard dropped', k8s.HttpMethod.GET, vas('dropped'), 'sent'],
  ['a write outside any namespace', k8s.HttpMethod.POST, '/apis/authorization.k8s.io/v1/selfsubjectreviews', 'sent'],
] as const)('%s is %s', async (_n, method, path, outcome) => {
  const result = await prepare(method, path).then(
    () => 'sent',
    (err: unknown) => (err instanceof NotLeaderError ? 'refused' : `failed: ${String(err)}`),
  );
  expect(result).toBe(outcome);
});

it('says which namespace its shard no longer serves', async () => {
  await expect(prepare(k8s.HttpMethod.DELETE, vas('dropped'))).rejects.toThrow(/no longer serves namespace dropped/);
});
