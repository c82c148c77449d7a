/**
 * bench/cpu-profile — where a profiled role spent its time, from the `.cpuprofile` files Node writes
 * under `--cpu-prof` (one per thread: the main thread, then the workflow thread; see
 * `bench:throughput --deployed --profile-core DIR`). For each file: the time sampled, how much of it
 * the thread was busy (not idle), the garbage collector's share, and the busy time by package and by
 * function (self time: the frame on top of the stack when sampled). The profiler samples wall time:
 * a thread blocked in a system call counts as busy in the frame that made it.
 * Run: npx tsx bench/cpu-profile.ts FILE.cpuprofile... [--top 15]
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { pathToFileURL } from 'node:url';
import { repoRoot } from '../scripts/env/paths.js';
import { numberArg } from './report.js';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
  endTime: number;
}

const TOP = numberArg('top', 15);
/** How a frame names a file of ours: an ES module by its URL, a CommonJS one by its path. */
const REPO_PREFIXES = [pathToFileURL(repoRoot).href, repoRoot];
const files = process.argv.slice(2).filter((a, i, all) => !a.startsWith('--') && all[i - 1] !== '--top');
if (files.length === 0) {
  console.error('usage: npx tsx bench/cpu-profile.ts FILE.cpuprofile... [--top 15]');
  process.exit(2);
}

/**
 * The package a frame's code belongs to: a node_modules package, a folder of ours, Node's own, the
 * workflow sandbox, V8's pseudo-frames ((garbage collector), (program)), or native code.
 */
function packageOf(url: string, functionName: string): string {
  const inModules = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (inModules) return inModules[1]!;
  if (url.startsWith('node:')) return 'node';
  if (/workflow-bundle-|evalmachine/.test(url)) return 'workflow sandbox';
  // Our code, compiled (dist/) or not: its folder.
  const prefix = REPO_PREFIXES.find((p) => url.startsWith(p));
  if (prefix)
    return url
      .slice(prefix.length)
      .replace(/^dist\//, '')
      .split('/')[0]!;
  if (url !== '') return url;
  if (functionName.startsWith('(')) return functionName;
  return functionName.startsWith('RegExp:') ? '(regular expressions)' : `(native) ${functionName || '(anonymous)'}`;
}

function summarize(file: string): void {
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const frames = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const byPackage = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let sampled = 0;
  let idle = 0;
  // The last sample lasts until the profile's end.
  const lastSampleMicros = Math.max(
    profile.endTime - profile.startTime - profile.timeDeltas.reduce((sum, d) => sum + d, 0),
    0,
  );
  // As DevTools reads a profile: a sample lasts until the next one (timeDeltas[i] is the gap before sample i).
  for (const [i, id] of profile.samples.entries()) {
    const micros = profile.timeDeltas[i + 1] ?? lastSampleMicros;
    const frame = frames.get(id)!;
    sampled += micros;
    if (frame.functionName === '(idle)') {
      idle += micros;
      continue;
    }
    const pkg = packageOf(frame.url, frame.functionName);
    byPackage.set(pkg, (byPackage.get(pkg) ?? 0) + micros);
    const name = (frame.functionName || '(anonymous)').slice(0, 80);
    const fn = frame.url ? `${name} ${basename(frame.url)}:${frame.lineNumber + 1}` : name;
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + micros);
  }
  const busy = sampled - idle;
  if (busy <= 0) {
    console.log(`${basename(file)}: ${(sampled / 1e6).toFixed(1)} s sampled, never busy`);
    return;
  }
  const share = (micros: number) => `${((micros / busy) * 100).toFixed(1)} %`;
  const top = (m: Map<string, number>) =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, TOP)
      .map(([k, v]) => `    ${share(v).padStart(7)}  ${k}`)
      .join('\n');
  console.log(
    `${basename(file)}: ${(sampled / 1e6).toFixed(1)} s sampled, busy ${(busy / 1e6).toFixed(1)} s; garbage collector ${share(byPackage.get('(garbage collector)') ?? 0)} of busy`,
  );
  console.log(`  busy time by package:\n${top(byPackage)}`);
  console.log(`  busy time by function (self):\n${top(byFunction)}`);
}

for (const file of files) summarize(file);
