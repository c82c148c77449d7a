/** Where the local control plane keeps its binaries and its state, and which versions it runs. */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** Per-checkout state: ports, certificates, data, logs, env.sh. */
export const stateDir = process.env.KONFIDENCE_ENV_DIR ?? join(repoRoot, '.cache', 'env');

/** Built binaries, shared by every checkout on the machine (see scripts/install-binaries.sh). */
export const binCache =
  process.env.KONFIDENCE_BIN_CACHE ??
  join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'konfidence-activation', 'bin');

function readVersions(): Record<string, string> {
  const text = readFileSync(join(repoRoot, 'scripts', 'versions.env'), 'utf8');
  const entries = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => line.split('=', 2) as [string, string]);
  return Object.fromEntries(entries);
}

export const versions = readVersions();

function version(key: string): string {
  const v = versions[key];
  if (!v) throw new Error(`scripts/versions.env lacks ${key}`);
  return v;
}

export const binaries = {
  temporal: join(binCache, `temporal-${version('TEMPORAL_CLI_VERSION')}`, 'temporal'),
  etcd: join(binCache, `etcd-${version('ETCD_VERSION')}`, 'etcd'),
  kubeApiserver: join(binCache, `kubernetes-${version('KUBERNETES_VERSION')}`, 'kube-apiserver'),
  kubectl: join(binCache, `kubernetes-${version('KUBERNETES_VERSION')}`, 'kubectl'),
  kubeControllerManager: join(binCache, `kubernetes-${version('KUBERNETES_VERSION')}`, 'kube-controller-manager'),
};
