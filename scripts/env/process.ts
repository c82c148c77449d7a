/** Background processes that outlive the command which started them, and waiting with deadlines. */
import { spawn } from 'node:child_process';
import { mkdirSync, openSync, readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { stateDir } from './paths.js';

export const logDir = join(stateDir, 'logs');

export function logFile(name: string): string {
  return join(logDir, `${name}.log`);
}

/** Starts a detached process (its own process group) logging to .cache/env/logs/NAME.log. */
export function startDetached(name: string, command: string, args: string[], env?: NodeJS.ProcessEnv): number {
  mkdirSync(logDir, { recursive: true });
  const out = openSync(logFile(name), 'a');
  const child = spawn(command, args, { detached: true, stdio: ['ignore', out, out], env: env ?? process.env });
  if (child.pid === undefined) throw new Error(`could not start ${name} (${command})`);
  child.unref();
  return child.pid;
}

export function isAlive(pid: number | undefined): boolean {
  if (!pid) return false;
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  // A process that died but was not reaped yet still answers signal 0.
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return !/^\d+ \(.*\) Z/.test(stat);
  } catch {
    return existsSync(`/proc/${pid}`);
  }
}

/**
 * Stops a process group started by startDetached: `signal` (SIGTERM; PostgreSQL's fast shutdown is
 * SIGINT), then SIGKILL past the grace period.
 */
export async function stopProcess(
  pid: number | undefined,
  graceMs = 10_000,
  stopSignal: NodeJS.Signals = 'SIGTERM',
): Promise<void> {
  if (!isAlive(pid)) return;
  const signal = (s: NodeJS.Signals) => {
    try {
      process.kill(-pid!, s);
    } catch {
      try {
        process.kill(pid!, s);
      } catch {
        // already gone
      }
    }
  };
  signal(stopSignal);
  const stopped = await pollUntil(() => !isAlive(pid), graceMs).then(
    () => true,
    () => false,
  );
  if (!stopped) {
    signal('SIGKILL');
    await pollUntil(() => !isAlive(pid), 5_000);
  }
}

/** Thrown from a pollUntil check to stop waiting at once: the condition can no longer come true. */
export class GiveUp extends Error {}

/** Calls `check` until it returns a truthy value (or resolves to one) or the deadline passes. */
export async function pollUntil<T>(
  check: () => T | Promise<T>,
  timeoutMs: number,
  what = 'condition',
  intervalMs = 100,
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      if (err instanceof GiveUp) throw err;
      lastError = err;
    }
    if (Date.now() > deadline) {
      const cause = lastError instanceof Error ? `: ${lastError.message}` : '';
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${cause}`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}

/** The last lines of a component's log, to put into an error that says why it did not start. */
export function logTail(name: string, lines = 15): string {
  try {
    return readFileSync(logFile(name), 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}
