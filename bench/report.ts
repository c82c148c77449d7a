/**
 * What every benchmark shares: percentiles, and its figures written as JSON under bench/results/
 * (git-ignored), where `npm run bench` (bench/all.ts) collects them into one table.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import {
  closeSync,
  fstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type { Pids } from '../scripts/env/control-plane.js';
import { auditLogPath } from '../scripts/env/components.js';
import { k8s, withUserAgent } from '../k8s/client.js';
import { pollUntil } from '../scripts/env/process.js';
import { binaries, repoRoot } from '../scripts/env/paths.js';
import { metricSamples } from './prometheus-text.js';

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
  return {
    runs: xs.length,
    median: Math.round(quantile(xs, 0.5)),
    p95: Math.round(quantile(xs, 0.95)),
    p99: Math.round(quantile(xs, 0.99)),
    min: Math.round(Math.min(...xs)),
    max: Math.round(Math.max(...xs)),
  };
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

/**
 * CPU seconds of a process and every process below it, the ended ones included (their time is in
 * their parent's cutime and cstime): PostgreSQL serves each connection in a child process.
 */
export function treeCpuSeconds(pid: number | undefined): number {
  if (!pid) return NaN;
  const parentOf = new Map<number, number>();
  const own = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(') ') + 2).split(' ');
      parentOf.set(Number(entry), Number(f[1]));
      own.set(Number(entry), (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100); // utime, stime, cutime, cstime
    } catch {
      // ended meanwhile
    }
  }
  const inTree = (p: number): boolean => p === pid || (p > 1 && parentOf.has(p) && inTree(parentOf.get(p)!));
  if (!own.has(pid)) return NaN;
  return [...own].filter(([p]) => inTree(p)).reduce((sum, [, seconds]) => sum + seconds, 0);
}

/** The servers whose CPU is their process tree's. */
const COUNTED_WITH_CHILDREN = new Set(['postgres']);

/** CPU seconds all processes of the machine used so far (every user's), from /proc/stat. */
export function machineCpuSeconds(): number {
  const [, ...ticks] = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).map(Number);
  // user nice system idle iowait irq softirq steal: all but idle and iowait are busy.
  return (
    ticks
      .slice(0, 8)
      .filter((_, i) => i !== 3 && i !== 4)
      .reduce((a, b) => a + b, 0) / 100
  );
}

/** Every local server's process and this one (which runs the system), for CPU figures. */
export const cpuProcesses = (
  pids: Pids,
  thisProcess = 'konfidence (this process)',
): Record<string, number | undefined> => ({
  ...Object.fromEntries(Object.entries(pids).filter(([, pid]) => pid !== undefined)),
  [thisProcess]: process.pid,
});

/** CPU seconds used so far by each of `processes`. */
export const cpuNow = (processes: Record<string, number | undefined>) =>
  Object.fromEntries(
    Object.entries(processes).map(([k, pid]) => [
      k,
      COUNTED_WITH_CHILDREN.has(k) ? treeCpuSeconds(pid) : cpuSeconds(pid),
    ]),
  );

/** How a request is counted: `VERB group/resource[/subresource]` (the core group has no prefix). */
const requestKey = (verb: string, group?: string, resource?: string, subresource?: string) =>
  `${verb} ${group ? `${group}/` : ''}${resource ?? ''}${subresource ? `/${subresource}` : ''}`;

/** kube-apiserver's request counters, `VERB group/resource[/subresource]` → count (WATCH apart: long-running). */
export function apiserverRequests(kubeconfig: string): Map<string, number> {
  const text = execFileSync(binaries.kubectl, ['--kubeconfig', kubeconfig, 'get', '--raw', '/metrics'], {
    encoding: 'utf8',
    maxBuffer: 64 << 20,
  });
  const counts = new Map<string, number>();
  for (const { name, labels, value } of metricSamples(text)) {
    if (name !== 'apiserver_request_total' || labels.verb === 'WATCH' || labels.dry_run) continue;
    const key = requestKey(labels.verb!, labels.group, labels.resource, labels.subresource);
    counts.set(key, (counts.get(key) ?? 0) + value);
  }
  return counts;
}

/** The counters that grew from `before` to `after`, by how much. */
export const diff = (after: Map<string, number>, before: Map<string, number>) =>
  new Map([...after].map(([k, v]) => [k, v - (before.get(k) ?? 0)] as const).filter(([, v]) => v > 0));

/** A memory field of /proc/<pid>/status (VmHWM, VmRSS), MiB. */
const statusMiB = (pid: number | 'self', field: string) =>
  +(
    Number(new RegExp(`${field}:\\s+(\\d+) kB`).exec(readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? NaN) / 1024
  ).toFixed(1);

/** Peak resident memory of a process over its life so far (VmHWM), MiB. */
export const peakRssMiB = (pid: number | 'self') => statusMiB(pid, 'VmHWM');

/** Resident memory of a process now (VmRSS), MiB. */
export const rssMiB = (pid: number | 'self') => statusMiB(pid, 'VmRSS');

/** HTTP's name of an audit event's verb, as apiserver_request_total counts it. */
const HTTP_VERB: Record<string, string> = {
  get: 'GET',
  list: 'LIST',
  create: 'POST',
  update: 'PUT',
  patch: 'PATCH',
  delete: 'DELETE',
  deletecollection: 'DELETE',
};

interface AuditEvent {
  verb: string;
  userAgent?: string;
  requestReceivedTimestamp: string;
  objectRef?: { resource?: string; subresource?: string; apiGroup?: string; namespace?: string };
}

/** The user agent of the request that tells the audit log has been written up to a moment. */
const MARK_AGENT = 'konfidence-bench/audit-mark';

/**
 * The requests kube-apiserver's audit log (scripts/env/components.ts) records from now on, each with
 * its user agent: `count(from, to, agents)` is how many requests of those agents it received in
 * [from, to] (ms since the epoch), by `VERB group/resource[/subresource]` as apiserverRequests keys
 * them. The log is written in batches: before counting, a request of its own, sent after `to`,
 * must show in it (what was answered before it is written no later).
 */
export function auditLog(kc: k8s.KubeConfig) {
  const fd = openSync(auditLogPath, 'r');
  const core = withUserAgent(kc, MARK_AGENT).makeApiClient(k8s.CoreV1Api);
  let offset = fstatSync(fd).size;
  let partial = '';
  /** When the latest mark this reader saw was received. */
  let marked = 0;
  const events: { at: number; event: AuditEvent }[] = [];
  const readMore = () => {
    const size = fstatSync(fd).size;
    if (size < offset) offset = 0; // rotated
    if (size === offset) return;
    const buffer = Buffer.alloc(size - offset);
    readSync(fd, buffer, 0, buffer.length, offset);
    offset = size;
    const lines = (partial + buffer.toString('utf8')).split('\n');
    partial = lines.pop()!;
    for (const line of lines) {
      if (!line) continue;
      const e = JSON.parse(line) as AuditEvent;
      const at = Date.parse(e.requestReceivedTimestamp);
      if (e.userAgent === MARK_AGENT) marked = Math.max(marked, at);
      else events.push({ at, event: e });
    }
  };
  const writtenUpTo = async (to: number) => {
    readMore();
    if (marked > to) return;
    await core.readNamespace({ name: 'default' });
    await pollUntil(
      () => (readMore(), marked > to || undefined),
      10_000,
      "the audit log to be written up to the window's end",
      50,
    );
  };
  return {
    async count(from: number, to: number, agents: (userAgent: string) => boolean): Promise<Map<string, number>> {
      await writtenUpTo(to);
      const counts = new Map<string, number>();
      for (const { at, event: e } of events) {
        if (at < from || at > to || !agents(e.userAgent ?? '')) continue;
        const o = e.objectRef ?? {};
        const key = requestKey(HTTP_VERB[e.verb] ?? e.verb.toUpperCase(), o.apiGroup, o.resource, o.subresource);
        counts.set(key, (counts.get(key) ?? 0) + 1);
      }
      return counts;
    },
    close: () => closeSync(fd),
  };
}

/** Our processes' requests (user agent konfidence-activation/<role>). */
export const ours = (userAgent: string) => userAgent.startsWith('konfidence-activation/');

/** The newest bench/results/<name>-*.json written after `since` (ms since the epoch), parsed. */
export function newestResult(name: string, since: number): any {
  const files = readdirSync(resultsDir)
    .filter((f) => f.startsWith(`${name}-`) && f.endsWith('.json'))
    .map((f) => join(resultsDir, f))
    .filter((f) => statSync(f).mtimeMs >= since)
    .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
  return files[0] ? JSON.parse(readFileSync(files[0], 'utf8')) : undefined;
}

/**
 * Runs bench/<name>.ts in a process of its own (its stdout passed through, its stderr kept): its
 * exit status, its stderr and the result it wrote, undefined when it wrote none.
 */
export function runBench(name: string, args: readonly string[]) {
  const since = Date.now();
  const run = spawnSync(
    process.execPath,
    [join(repoRoot, 'node_modules', 'tsx', 'dist', 'cli.mjs'), join(repoRoot, 'bench', `${name}.ts`), ...args],
    { stdio: ['ignore', 'inherit', 'pipe'], encoding: 'utf8' },
  );
  return { status: run.status, signal: run.signal, stderr: run.stderr, result: newestResult(name, since) };
}
