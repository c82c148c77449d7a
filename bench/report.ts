/**
 * What every benchmark shares: percentiles, and its figures written as JSON under bench/results/
 * (git-ignored), where `npm run bench` (bench/all.ts) collects them into one table.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Pids } from '../scripts/env/control-plane.js';
import { repoRoot } from '../scripts/env/paths.js';

export const resultsDir = join(repoRoot, 'bench', 'results');

/** Writes bench/results/<name>-<time>.json; returns its path. */
export function writeResult(name: string, figures: object): string {
  mkdirSync(resultsDir, { recursive: true });
  const path = join(resultsDir, `${name}-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(path, `${JSON.stringify({ bench: name, at: new Date().toISOString(), ...figures }, null, 2)}\n`);
  return path;
}

/** The q-quantile (0..1) of xs by the nearest-rank method. */
export function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil(q * s.length) - 1))]!;
}

export function stats(xs: readonly number[]) {
  return { runs: xs.length, median: Math.round(quantile(xs, 0.5)), p95: Math.round(quantile(xs, 0.95)), p99: Math.round(quantile(xs, 0.99)), min: Math.round(Math.min(...xs)), max: Math.round(Math.max(...xs)) };
}

/** Reads `--name N` (a positive number) from the command line. */
export function numberArg(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const value = i > 0 ? Number(process.argv[i + 1]) : fallback;
  if (!Number.isFinite(value) || value < 0) throw new Error(`--${name} wants a number ≥ 0`);
  return value;
}

/** Reads `--name VALUE` from the command line; undefined when absent. */
export function stringArg(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return undefined;
  const value = process.argv[i + 1];
  if (!value || value.startsWith('--')) throw new Error(`--${name} wants a value`);
  return value;
}

/** CPU seconds (user + system) a process used so far, from /proc; NaN when it cannot be read. */
export function cpuSeconds(pid: number | undefined): number {
  if (!pid) return NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(') ') + 2).split(' '); // after the command name, which may hold ') '
    return (Number(fields[11]) + Number(fields[12])) / 100; // utime, stime in clock ticks (100/s)
  } catch {
    return NaN;
  }
}

/** Every local server's process and this one (which runs the system), for CPU figures. */
export const cpuProcesses = (pids: Pids): Record<string, number | undefined> => ({
  ...Object.fromEntries(Object.entries(pids).filter(([, pid]) => pid !== undefined)),
  'konfidence (this process)': process.pid,
});

/** CPU seconds used so far by each of `processes`. */
export const cpuNow = (processes: Record<string, number | undefined>) => Object.fromEntries(Object.entries(processes).map(([k, pid]) => [k, cpuSeconds(pid)]));
