/** A KubeConfig for tests that prepare requests without sending them: a bearer token, no server behind it. */
import { k8s } from '../../../k8s/client.js';

export function offlineKubeConfig(token = 'secret', server = 'https://127.0.0.1:6443'): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u', token }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}
