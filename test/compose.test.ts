/**
 * docker-compose.yml runs the whole system, but no Docker engine runs here: its Temporal
 * configuration runs for real as the local postgres profile (npm run test:postgres). These tests
 * keep the two from drifting apart: the same server arguments, config template, dynamic config,
 * schema and namespace scripts, environment variable names and versions; and the compose file's
 * own environment renders a valid server config with the server binary of the pinned version.
 */
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, posix, relative } from 'node:path';
import { promisify } from 'node:util';
import { parse } from 'yaml';
import { deployTemporalDir, postgresProfileBinaries, repoRoot, versions } from '../scripts/env/paths.js';
import {
  databaseEnv,
  searchAttributeArgs,
  serverArgs,
  serverEnv,
  type ServerPorts,
  uiEnv,
} from '../scripts/env/temporal-server.js';

const run = promisify(execFile);

interface Service {
  image?: string;
  build?: string;
  entrypoint?: string[];
  command?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  depends_on?: Record<string, { condition: string }>;
}

const compose = parse(readFileSync(join(repoRoot, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
  services: Record<string, Service>;
};
const services = compose.services;
const service = (name: string): Service => {
  const s = services[name];
  if (!s) throw new Error(`docker-compose.yml has no service ${name}`);
  return s;
};

/** Where a service mounts ./deploy/temporal. */
function deployMount(s: Service): string {
  const mount = s.volumes?.find((v) => v.startsWith('./deploy/temporal:'));
  if (!mount) throw new Error('the service does not mount ./deploy/temporal');
  return mount.split(':')[1]!;
}

const anyPorts: ServerPorts = {
  postgres: 1,
  temporal: 2,
  temporalHttp: 3,
  temporalMetrics: 4,
  temporalUi: 5,
  frontendMembership: 6,
  historyGrpc: 7,
  historyMembership: 8,
  matchingGrpc: 9,
  matchingMembership: 10,
  workerGrpc: 11,
  workerMembership: 12,
};
const sorted = (o: object | undefined) => Object.keys(o ?? {}).sort();
const bare = (v: string) => v.replace(/^v/, '');

describe('docker-compose.yml', () => {
  it('runs PostgreSQL, the schema setup, the Temporal server, the namespace setup, the UI and the five components', () => {
    expect(Object.keys(services).sort()).toEqual(
      [
        'postgresql',
        'temporal-admin-tools',
        'temporal',
        'temporal-namespace',
        'temporal-ui',
        'core',
        'watcher',
        'stage-controller',
        'executor-gateway-api',
        'executor-istio',
        'landscape-executor-gateway-api',
      ].sort(),
    );
    const roles = Object.fromEntries(
      Object.entries(services)
        .filter(([, s]) => s.build === '.')
        .map(([name, s]) => [name, s.command]),
    );
    expect(roles).toEqual({
      core: ['core'],
      watcher: ['watcher'],
      'stage-controller': ['stage-controller'],
      'executor-gateway-api': ['executor', 'gateway-api'],
      'executor-istio': ['executor', 'istio'],
      'landscape-executor-gateway-api': ['executor', 'gateway-api'],
    });
    for (const name of Object.keys(roles)) {
      const s = service(name);
      expect(s.environment?.TEMPORAL_ADDRESS).toBe('temporal:7233');
      // The kubeconfig the component reads is the one mounted from the host.
      const targets = s.volumes?.map((v) =>
        v
          .replace(/:(ro|rw)$/, '')
          .split(':')
          .pop(),
      );
      expect(targets).toContain(s.environment?.KUBECONFIG);
      // Started once the namespace and its search attributes exist.
      expect(s.depends_on?.['temporal-namespace']?.condition).toBe('service_completed_successfully');
    }
  });

  it("runs a landscape's agent with the landscape profile only: its worker names the landscape and holds that cluster's kubeconfig alone", () => {
    const agent = service('landscape-executor-gateway-api') as Service & { profiles?: string[] };
    expect(agent.profiles).toEqual(['landscape']);
    expect(agent.environment?.KONFIDENCE_LANDSCAPE).toBe('${KONFIDENCE_LANDSCAPE:-edge}');
    // Only the landscape's kubeconfig is mounted: not the control plane's (KUBECONFIG of the others).
    expect(agent.volumes).toEqual([
      '${LANDSCAPE_KUBECONFIG:-./.cache/env/landscapes/edge/kubeconfig}:/etc/konfidence/kubeconfig:ro',
    ]);
    expect(agent.environment?.KONFIDENCE_SYSTEM_NAMESPACE).toBeUndefined();
  });

  it('pins the images to the versions the local profile builds and installs (scripts/versions.env)', () => {
    expect(service('temporal').image).toBe(`temporalio/server:${bare(versions.TEMPORAL_SERVER_VERSION!)}`);
    expect(service('temporal-ui').image).toBe(`temporalio/ui:${bare(versions.TEMPORAL_UI_SERVER_VERSION!)}`);
    expect(service('postgresql').image).toBe(`postgres:${versions.POSTGRESQL_MAJOR}`);
    for (const name of ['temporal-admin-tools', 'temporal-namespace']) {
      expect(service(name).image).toBe(`temporalio/admin-tools:${versions.TEMPORAL_ADMIN_TOOLS_TAG}`);
    }
    // The admin tools (temporal-sql-tool, schema files) are the server's own version.
    expect(versions.TEMPORAL_ADMIN_TOOLS_TAG).toMatch(
      new RegExp(`^${bare(versions.TEMPORAL_SERVER_VERSION!).replace(/\./g, '\\.')}-`),
    );
  });

  it('starts temporal-server as the local profile does: same arguments, config template, dynamic config and variables', () => {
    const temporal = service('temporal');
    const root = deployMount(temporal);
    expect([...(temporal.entrypoint ?? []), ...(temporal.command ?? [])]).toEqual([
      'temporal-server',
      ...serverArgs(root),
    ]);
    // The variables config/postgres.yaml reads: the compose file sets exactly those the profile sets.
    expect(sorted(temporal.environment)).toEqual(sorted(serverEnv(anyPorts)));
    const localDynamicConfig = relative(deployTemporalDir, serverEnv(anyPorts).DYNAMIC_CONFIG_FILE_PATH!);
    expect(temporal.environment?.DYNAMIC_CONFIG_FILE_PATH).toBe(posix.join(root, localDynamicConfig));
    expect(localDynamicConfig).toBe('dynamicconfig.yaml');
    expect(temporal.depends_on?.['temporal-admin-tools']?.condition).toBe('service_completed_successfully');
  });

  it('sets up schema and namespace with the scripts the local profile runs, and the UI with the same variables', () => {
    const admin = service('temporal-admin-tools');
    expect(admin.entrypoint).toEqual(['sh', posix.join(deployMount(admin), 'setup-schema.sh')]);
    expect(sorted(admin.environment)).toEqual([...sorted(databaseEnv(anyPorts)), 'TEMPORAL_SCHEMA_DIR'].sort());
    expect(admin.environment?.POSTGRES_SEEDS).toBe('postgresql');

    const namespace = service('temporal-namespace');
    expect(namespace.entrypoint).toEqual(['sh', posix.join(deployMount(namespace), 'setup-namespace.sh')]);
    // The search attributes of shared/search-attributes.ts, as the profile passes them.
    expect(namespace.command).toEqual(searchAttributeArgs);

    expect(sorted(service('temporal-ui').environment)).toEqual(sorted(uiEnv(anyPorts)));
  });

  it('gives temporal-server a config it loads and a dynamic config without unknown keys', async () => {
    const server = postgresProfileBinaries.temporalServer;
    if (!existsSync(server)) throw new Error(`${server} is missing: run npm run env:install`);
    const env = { ...process.env, ...service('temporal').environment };
    const { stdout } = await run(
      server,
      ['--config', join(deployTemporalDir, 'config'), '--env', 'postgres', 'render-config'],
      { env },
    );
    const config = parse(stdout) as {
      persistence: {
        defaultStore: string;
        visibilityStore: string;
        datastores: Record<string, { sql: { pluginName: string; connectAddr: string } }>;
      };
      services: Record<string, { rpc: { grpcPort: number; bindOnIP: string } }>;
      dynamicConfigClient: { filepath: string };
    };
    const { defaultStore, visibilityStore, datastores } = config.persistence;
    for (const store of [defaultStore, visibilityStore]) {
      expect(datastores[store]?.sql).toMatchObject({ pluginName: 'postgres12', connectAddr: 'postgresql:5432' });
    }
    expect(config.services.frontend?.rpc).toMatchObject({ grpcPort: 7233, bindOnIP: '0.0.0.0' });
    expect(config.dynamicConfigClient.filepath).toBe('/etc/konfidence/temporal/dynamicconfig.yaml');

    const validation = await run(server, ['validate-dynamic-config', join(deployTemporalDir, 'dynamicconfig.yaml')]);
    expect(validation.stdout).not.toMatch(/error|warning/);
  });
});
