/**
 * The konfidence CLI as people run it, `node bin/konfidence.mjs ...`, in a process of its own, with
 * KUBECONFIG and TEMPORAL_* from the global setup; and any other command the same way.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = fileURLToPath(new URL('../..', import.meta.url));
export const BIN = join(root, 'bin', 'konfidence.mjs');
/** A call that hangs is a failure, not a stuck test. */
const CALL_DEADLINE_MS = 90_000;

export interface Result {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a command to its end, as a shell would; never rejects on a non-zero exit. */
export function exec(command: string, args: string[], env: NodeJS.ProcessEnv = process.env): Promise<Result> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), CALL_DEADLINE_MS);
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/** `konfidence ARGS`. */
export const konfidence = (...args: string[]) => exec(process.execPath, [BIN, ...args]);
