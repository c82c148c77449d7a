/**
 * The cluster profile's Temporal server: the postgres profile's server (the same config template,
 * dynamic config, schema and namespace setup from deploy/temporal) with each service in a process
 * of its own and history twice, as a production deployment runs it. Every process gets the
 * postgres profile's environment with its own ports; the services find each other through
 * PostgreSQL's cluster_membership table (ringpop), so clients know the frontend's address alone.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { deployTemporalDir, postgresProfileBinaries as bin } from './paths.js';
import { POSTGRES_PASSWORD, POSTGRES_USER } from './postgres.js';
import { startDetached } from './process.js';
import { serverArgs, serverEnv, type ServerPorts } from './temporal-server.js';

/** The postgres profile's ports, and what a second history process and the separate metrics listeners need. */
export interface ClusterPorts extends ServerPorts {
  history2Grpc: number;
  history2Membership: number;
  historyMetrics: number;
  history2Metrics: number;
  matchingMetrics: number;
  workerMetrics: number;
}

/** The frontend keeps the component name `temporal`: it is what clients and readiness talk to. */
export type ClusterComponent =
  'temporal' | 'temporalHistory' | 'temporalHistory2' | 'temporalMatching' | 'temporalWorker';

export interface ClusterService {
  component: ClusterComponent;
  service: 'frontend' | 'history' | 'matching' | 'worker';
  /** Its log file's name (logs/NAME.log). */
  name: string;
  ports: (keyof ClusterPorts)[];
  /** The variables that differ from serverEnv: each process has its own metrics listener. */
  env: (p: ClusterPorts) => Record<string, string>;
}

const metrics = (port: number) => ({ PROMETHEUS_ENDPOINT: `127.0.0.1:${port}` });

export const CLUSTER_SERVICES: readonly ClusterService[] = [
  {
    component: 'temporal',
    service: 'frontend',
    name: 'temporal-frontend',
    ports: ['temporal', 'temporalHttp', 'temporalMetrics', 'frontendMembership'],
    env: (p) => metrics(p.temporalMetrics),
  },
  {
    component: 'temporalHistory',
    service: 'history',
    name: 'temporal-history-1',
    ports: ['historyGrpc', 'historyMembership', 'historyMetrics'],
    env: (p) => metrics(p.historyMetrics),
  },
  {
    component: 'temporalHistory2',
    service: 'history',
    name: 'temporal-history-2',
    ports: ['history2Grpc', 'history2Membership', 'history2Metrics'],
    env: (p) => ({
      HISTORY_GRPC_PORT: String(p.history2Grpc),
      HISTORY_MEMBERSHIP_PORT: String(p.history2Membership),
      ...metrics(p.history2Metrics),
    }),
  },
  {
    component: 'temporalMatching',
    service: 'matching',
    name: 'temporal-matching',
    ports: ['matchingGrpc', 'matchingMembership', 'matchingMetrics'],
    env: (p) => metrics(p.matchingMetrics),
  },
  {
    component: 'temporalWorker',
    service: 'worker',
    name: 'temporal-worker',
    ports: ['workerGrpc', 'workerMembership', 'workerMetrics'],
    env: (p) => metrics(p.workerMetrics),
  },
];

export const clusterService = (component: string) => CLUSTER_SERVICES.find((s) => s.component === component);

export function startClusterService(s: ClusterService, p: ClusterPorts): number {
  return startDetached(s.name, bin.temporalServer, [...serverArgs(deployTemporalDir), '--service', s.service], {
    ...process.env,
    ...serverEnv(p),
    ...s.env(p),
  });
}

/** Its membership port: the one cluster_membership records for a host. */
export function membershipPort(s: ClusterService, p: ClusterPorts): number {
  const key = s.ports.find((k) => /[mM]embership$/.test(k))!;
  return p[key];
}

/**
 * The membership ports of the hosts that heartbeat in cluster_membership (the ring each service
 * reads), with their session's start. A row outlives its process by two days; a host that stopped
 * is known by its old last heartbeat (the server renews it every 10 to 15 s and itself counts a
 * host silent for 20 s as gone).
 */
export function liveMembers(
  p: Pick<ServerPorts, 'postgres'>,
  freshSeconds = 20,
): Promise<{ port: number; role: number; sessionStart: Date }[]> {
  const sql =
    `SELECT rpc_port, role, extract(epoch FROM session_start) FROM cluster_membership ` +
    `WHERE last_heartbeat > (now() AT TIME ZONE 'UTC') - interval '${freshSeconds} seconds'`;
  return new Promise((resolve, reject) => {
    execFile(
      join(bin.postgres, '..', 'psql'),
      ['-h', '127.0.0.1', '-p', String(p.postgres), '-U', POSTGRES_USER, '-d', 'temporal', '-At', '-F', ' ', '-c', sql],
      { env: { ...process.env, PGPASSWORD: POSTGRES_PASSWORD, PGCONNECT_TIMEOUT: '2', TZ: 'UTC' }, timeout: 10_000 },
      (err, stdout) => {
        if (err) return reject(err);
        const rows = stdout
          .trim()
          .split('\n')
          .filter(Boolean)
          .map((line) => line.split(' ').map(Number) as [number, number, number]);
        resolve(rows.map(([port, role, start]) => ({ port, role, sessionStart: new Date(start * 1000) })));
      },
    );
  });
}

/**
 * A service process has joined: its host heartbeats in cluster_membership, in a session that began
 * after `since` when given (a restarted process reuses its ports, and its predecessor's row stays fresh a while).
 */
export async function serviceJoined(s: ClusterService, p: ClusterPorts, since?: Date): Promise<boolean> {
  const port = membershipPort(s, p);
  return (await liveMembers(p)).some(
    (m) => m.port === port && (!since || m.sessionStart.getTime() >= since.getTime() - 1_000),
  );
}
