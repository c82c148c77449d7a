/** Test access to the real local apiserver: clients, a fresh namespace per test file, kubectl. */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { binaries } from '../../scripts/env/paths.js';
import { apply, k8s, loadKubeConfig } from '../../k8s/client.js';
import { own } from './owned.js';

export function kubeConfig(): k8s.KubeConfig {
  const path = process.env.KUBECONFIG;
  if (!path) throw new Error('KUBECONFIG is not set: jest global setup did not run');
  return loadKubeConfig(path);
}

export function objectApi(kc = kubeConfig()): k8s.KubernetesObjectApi {
  return k8s.KubernetesObjectApi.makeApiClient(kc);
}

/**
 * Creates a namespace no other test uses. A bare apiserver never finishes deleting a namespace
 * (that is kube-controller-manager's job), so tests isolate by name instead of cleaning up.
 */
export async function freshNamespace(prefix: string, kc = kubeConfig()): Promise<string> {
  const name = `${prefix}-${randomBytes(4).toString('hex')}`;
  own(name);
  await apply(objectApi(kc), {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels: { 'konfidence.cloud/test': 'true' } },
  });
  return name;
}

const run = promisify(execFile);

/** Runs the kubectl built with the control plane, as a user would. */
export async function kubectl(...args: string[]): Promise<string> {
  const { stdout } = await run(binaries.kubectl, args, { env: process.env });
  return stdout;
}
