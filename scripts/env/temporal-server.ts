/**
 * The Temporal half of the postgres profile: Temporal server (built from go.temporal.io/server) on
 * the private PostgreSQL, its schema set up by Temporal's SQL tool, the namespace and search
 * attributes made with the Temporal CLI, and the UI server. Everything runs from deploy/temporal,
 * the files docker-compose.yml runs too: the server config template (config/postgres.yaml), the
 * dynamic config, setup-schema.sh and setup-namespace.sh. Only addresses differ, through the
 * environment variables below (test/compose.test.ts keeps both sides in step).
 */
import { execFile } from 'node:child_process';
import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Connection } from '@temporalio/client';
import { searchAttributes } from '../../shared/search-attributes.js';
import {
  binaries,
  deployTemporalDir,
  postgresProfileBinaries as bin,
  temporalSchemaDir,
  temporalUiRoot,
} from './paths.js';
import { POSTGRES_PASSWORD, POSTGRES_USER } from './postgres.js';
import { logDir, logFile, startDetached } from './process.js';

/** The ports of the postgres profile beyond the frontend's (Ports.temporal, temporalHttp, ...). */
export interface ServerPorts {
  postgres: number;
  temporal: number;
  temporalHttp: number;
  temporalMetrics: number;
  temporalUi: number;
  frontendMembership: number;
  historyGrpc: number;
  historyMembership: number;
  matchingGrpc: number;
  matchingMembership: number;
  workerGrpc: number;
  workerMembership: number;
}

/** temporal-server's arguments after the binary; the config folder is relative to --root. */
export function serverArgs(root: string): string[] {
  return ['--root', root, '--config', 'config', '--env', 'postgres', '--allow-no-auth', 'start'];
}

/** Where the server finds PostgreSQL, shared by the server and setup-schema.sh. */
export function databaseEnv(p: Pick<ServerPorts, 'postgres'>): Record<string, string> {
  return {
    POSTGRES_SEEDS: '127.0.0.1',
    DB_PORT: String(p.postgres),
    POSTGRES_USER,
    POSTGRES_PWD: POSTGRES_PASSWORD,
  };
}

/** The environment config/postgres.yaml is rendered from (docker-compose.yml sets the same names). */
export function serverEnv(p: ServerPorts): Record<string, string> {
  return {
    ...databaseEnv(p),
    BIND_ON_IP: '127.0.0.1',
    TEMPORAL_BROADCAST_ADDRESS: '127.0.0.1',
    FRONTEND_GRPC_PORT: String(p.temporal),
    FRONTEND_HTTP_PORT: String(p.temporalHttp),
    FRONTEND_MEMBERSHIP_PORT: String(p.frontendMembership),
    HISTORY_GRPC_PORT: String(p.historyGrpc),
    HISTORY_MEMBERSHIP_PORT: String(p.historyMembership),
    MATCHING_GRPC_PORT: String(p.matchingGrpc),
    MATCHING_MEMBERSHIP_PORT: String(p.matchingMembership),
    WORKER_GRPC_PORT: String(p.workerGrpc),
    WORKER_MEMBERSHIP_PORT: String(p.workerMembership),
    PROMETHEUS_ENDPOINT: `127.0.0.1:${p.temporalMetrics}`,
    DYNAMIC_CONFIG_FILE_PATH: join(deployTemporalDir, 'dynamicconfig.yaml'),
  };
}

/** The UI server's environment: the variables the temporalio/ui image reads. */
export function uiEnv(p: Pick<ServerPorts, 'temporal' | 'temporalUi'>): Record<string, string> {
  return { TEMPORAL_ADDRESS: `127.0.0.1:${p.temporal}`, TEMPORAL_UI_PORT: String(p.temporalUi) };
}

const cliType: Record<string, string> = { KEYWORD: 'Keyword', TEXT: 'Text', INT: 'Int', BOOL: 'Bool' };

/** setup-namespace.sh's arguments: the project's search attributes as NAME=Type. */
export const searchAttributeArgs = searchAttributes.map((a) => `${a.name}=${cliType[a.type]}`);

/** Runs a deploy/temporal script with sh (the admin-tools image's shell is POSIX sh too), logging to logs/NAME.log. */
function runScript(
  name: string,
  script: string,
  args: string[],
  env: Record<string, string>,
  pathDirs: string[],
): Promise<void> {
  const log = logFile(name);
  return new Promise((resolve, reject) => {
    execFile(
      'sh',
      [join(deployTemporalDir, script), ...args],
      {
        env: { ...process.env, ...env, PATH: [...pathDirs, process.env.PATH].join(':') },
        maxBuffer: 64 * 1024 * 1024,
        timeout: 120_000,
      },
      (err, stdout, stderr) => {
        // The SQL tool logs every statement: that goes to the log file, not to the console.
        mkdirSync(logDir, { recursive: true });
        appendFileSync(log, stdout + stderr);
        if (err)
          reject(
            new Error(
              `${script} failed (${err.message.split('\n')[0]}); see ${log}:\n${(stdout + stderr).trimEnd().split('\n').slice(-15).join('\n')}`,
            ),
          );
        else resolve();
      },
    );
  });
}

/** Creates both databases and brings their schema to the server version's (idempotent). */
export function setupSchema(p: Pick<ServerPorts, 'postgres'>): Promise<void> {
  return runScript(
    'temporal-setup-schema',
    'setup-schema.sh',
    [],
    { ...databaseEnv(p), TEMPORAL_SCHEMA_DIR: temporalSchemaDir },
    [dirname(bin.temporalSqlTool)],
  );
}

export function startTemporalServer(p: ServerPorts): number {
  return startDetached('temporal-server', bin.temporalServer, serverArgs(deployTemporalDir), {
    ...process.env,
    ...serverEnv(p),
  });
}

/** The namespace and the search attributes, with the Temporal CLI (idempotent). */
export function setupNamespace(p: Pick<ServerPorts, 'temporal'>, namespace: string): Promise<void> {
  return runScript(
    'temporal-setup-namespace',
    'setup-namespace.sh',
    searchAttributeArgs,
    { TEMPORAL_ADDRESS: `127.0.0.1:${p.temporal}`, TEMPORAL_NAMESPACE: namespace },
    [dirname(binaries.temporal)],
  );
}

export async function temporalServerReady(p: Pick<ServerPorts, 'temporal'>): Promise<boolean> {
  const connection = await Connection.connect({ address: `127.0.0.1:${p.temporal}`, connectTimeout: 2_000 });
  try {
    const info = await connection.workflowService.getSystemInfo({});
    return Boolean(info.serverVersion);
  } finally {
    await connection.close();
  }
}

export function startTemporalUi(p: ServerPorts): number {
  return startDetached(
    'temporal-ui',
    bin.temporalUiServer,
    ['--root', temporalUiRoot, '--config', 'config', '--env', 'docker', 'start'],
    {
      ...process.env,
      ...uiEnv(p),
    },
  );
}

export async function temporalUiReady(p: Pick<ServerPorts, 'temporalUi'>): Promise<boolean> {
  return (await fetch(`http://127.0.0.1:${p.temporalUi}/`)).ok;
}
