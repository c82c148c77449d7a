/** Where the local control plane keeps its binaries and its state, and which versions it runs. */
import { readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** Per-checkout state: ports, certificates, data, logs, env.sh. */
export const stateDir = process.env.KONFIDENCE_ENV_DIR
  ? resolve(process.env.KONFIDENCE_ENV_DIR)
  : join(repoRoot, '.cache', 'env');

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
  prometheus: join(binCache, `prometheus-${version('PROMETHEUS_DEB_VERSION')}`, 'prometheus'),
  traefik: join(binCache, `traefik-${version('TRAEFIK_VERSION')}`, 'traefik'),
};

/** The postgres profile's binaries: Temporal server, its SQL tool and schema files, the UI server, PostgreSQL. */
const serverDir = join(binCache, `temporal-server-${version('TEMPORAL_SERVER_VERSION')}`);
const uiDir = join(binCache, `temporal-ui-server-${version('TEMPORAL_UI_SERVER_VERSION')}`);
const postgresBinDir =
  process.env.KONFIDENCE_POSTGRES_BIN ?? join('/usr/lib/postgresql', version('POSTGRESQL_MAJOR'), 'bin');
export const postgresProfileBinaries = {
  temporalServer: join(serverDir, 'temporal-server'),
  temporalSqlTool: join(serverDir, 'temporal-sql-tool'),
  temporalUiServer: join(uiDir, 'temporal-ui-server'),
  postgres: join(postgresBinDir, 'postgres'),
  initdb: join(postgresBinDir, 'initdb'),
  pgIsready: join(postgresBinDir, 'pg_isready'),
};
/** The server's PostgreSQL schema files (install-binaries.sh copies them from the server module). */
export const temporalSchemaDir = join(serverDir, 'schema');
/** The UI server's root: config/docker.yaml is the template the temporalio/ui image renders. */
export const temporalUiRoot = uiDir;
/** deploy/temporal: the server config, dynamic config and setup scripts docker-compose.yml uses too. */
export const deployTemporalDir = join(repoRoot, 'deploy', 'temporal');
