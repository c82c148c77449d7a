/**
 * A private PostgreSQL for the postgres profile: Debian's server binaries, a cluster in the state
 * folder (initdb once), listening on loopback on a port of ours, its socket in the state folder. No
 * system service. It stores Temporal's data only: fsync is off, like etcd's.
 */
import { execFile, execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { postgresProfileBinaries as bin, stateDir } from './paths.js';
import { startDetached } from './process.js';

/** The role Temporal connects as: the same names and password as docker-compose.yml's. */
export const POSTGRES_USER = 'temporal';
export const POSTGRES_PASSWORD = 'temporal';

const clusterDir = join(stateDir, 'data', 'postgresql');
/** Short: a socket path may not exceed 107 bytes. */
const socketDir = join(stateDir, 'pg');

/**
 * PostgreSQL refuses to run as root; then every command runs as the `postgres` user that Debian's
 * package creates, and the folders it writes belong to that user.
 */
function asServerUser(command: string, args: string[]): [string, string[]] {
  if (process.getuid?.() !== 0) return [command, args];
  return ['setpriv', ['--reuid=postgres', '--regid=postgres', '--init-groups', command, ...args]];
}

function ownedByServerUser(dir: string): void {
  // Parents as usual (the server user must pass through them), the folder itself private.
  mkdirSync(dirname(dir), { recursive: true });
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  if (process.getuid?.() !== 0) return;
  const id = (flag: string) => Number(execFileSync('id', [flag, 'postgres'], { encoding: 'utf8' }).trim());
  chownSync(dir, id('-u'), id('-g'));
}

/**
 * Creates the cluster unless it exists. initdb writes into a scratch folder that is renamed into
 * place when complete, so a run interrupted here leaves no half-made cluster behind.
 */
export function ensureCluster(): void {
  if (existsSync(join(clusterDir, 'PG_VERSION'))) return;
  const scratch = `${clusterDir}.init`;
  rmSync(scratch, { recursive: true, force: true });
  ownedByServerUser(scratch);
  const passwordFile = join(stateDir, 'pg-password');
  writeFileSync(passwordFile, POSTGRES_PASSWORD, { mode: 0o644 });
  try {
    const [command, args] = asServerUser(bin.initdb, [
      `--pgdata=${scratch}`,
      `--username=${POSTGRES_USER}`,
      `--pwfile=${passwordFile}`,
      '--auth=scram-sha-256',
      '--encoding=UTF8',
      '--locale=C.UTF-8',
      '--no-sync',
    ]);
    execFileSync(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  } catch (err) {
    const stderr = (err as { stderr?: Buffer }).stderr?.toString().trim();
    throw new Error(`initdb failed in ${scratch}${stderr ? `: ${stderr}` : ''}`);
  } finally {
    rmSync(passwordFile, { force: true });
  }
  renameSync(scratch, clusterDir);
}

export function startPostgres(port: number): number {
  ownedByServerUser(socketDir);
  const [command, args] = asServerUser(bin.postgres, [
    '-D',
    clusterDir,
    '-p',
    String(port),
    '-c',
    'listen_addresses=127.0.0.1',
    '-c',
    `unix_socket_directories=${socketDir}`,
    // A local development store: durability across power loss is not worth the latency.
    '-c',
    'fsync=off',
    '-c',
    'synchronous_commit=off',
    '-c',
    'full_page_writes=off',
    '-c',
    'max_connections=200',
  ]);
  return startDetached('postgresql', command, args);
}

export function postgresReady(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(bin.pgIsready, ['-h', '127.0.0.1', '-p', String(port), '-U', POSTGRES_USER, '-t', '2'], (err) =>
      resolve(!err),
    );
  });
}
