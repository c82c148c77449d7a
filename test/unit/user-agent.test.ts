/**
 * Our processes' requests carry `konfidence-activation/<role>` as their user agent, on both paths
 * a KubeConfig serves: the generated API calls and the watches. An audit log attributes requests by
 * it (the benchmarks count ours with it), and a write fence stacked on top keeps it.
 */
import { k8s, userAgentOf, withUserAgent } from '../../k8s/client.js';
import { fenceWrites } from '../../k8s/leader-election.js';
import { offlineKubeConfig } from './support/kube-config.js';

const config = () => offlineKubeConfig();

test('an API call carries the role as its user agent, beside its credentials', async () => {
  const context = new k8s.RequestContext('https://127.0.0.1:6443/api/v1/namespaces', k8s.HttpMethod.GET);
  await withUserAgent(config(), userAgentOf('core')).applySecurityAuthentication(context);
  expect(context.getHeaders()).toMatchObject({
    'User-Agent': 'konfidence-activation/core',
    Authorization: 'Bearer secret',
  });
});

test('a watch carries it too', async () => {
  const options = await withUserAgent(config(), userAgentOf('watcher')).applyToFetchOptions({});
  expect((options.headers as unknown as Headers).get('user-agent')).toBe('konfidence-activation/watcher');
  expect((options.headers as unknown as Headers).get('authorization')).toBe('Bearer secret');
});

test('a write fence over it keeps it; the configuration it views is left as it was', async () => {
  const plain = config();
  const context = new k8s.RequestContext('https://127.0.0.1:6443/api/v1/namespaces/a/configmaps', k8s.HttpMethod.POST);
  await fenceWrites(withUserAgent(plain, userAgentOf('stage-controller')), {}).applySecurityAuthentication(context);
  expect(context.getHeaders()['User-Agent']).toBe('konfidence-activation/stage-controller');
  const untouched = new k8s.RequestContext('https://127.0.0.1:6443/api/v1/namespaces', k8s.HttpMethod.GET);
  await plain.applySecurityAuthentication(untouched);
  expect(untouched.getHeaders()['User-Agent']).toBeUndefined();
});
