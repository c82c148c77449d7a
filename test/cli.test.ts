/**
 * The konfidence CLI as people run it: `node bin/konfidence.mjs ...` (and `kubectl konfidence` through
 * kubectl's plugin discovery) as subprocesses against the real apiserver and Temporal dev server,
 * with this file's own system (watcher, core and executor workers, Stage controller) in-process.
 * One Stage, activated step by step: activate --wait succeeds; status shows the active version and,
 * during a slow activation, the running step's progress from the workflow (and, with Temporal out of
 * reach, says so and shows the status); cancel is accepted on a running activation and refused on a
 * Succeeded one with the reason; retry of the Cancelled one runs it again; history is newest first;
 * watch streams the phases; exit codes 0 to 5 and --help on every command.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, symlinkSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commands } from '../cli/commands/index.js';
import { EXIT } from '../cli/exit-codes.js';
import { pollUntil } from '../scripts/env/process.js';
import { binaries } from '../scripts/env/paths.js';
import { freePort } from '../scripts/env/ports.js';
import { BIN, exec, root } from './support/cli.js';
import { seedSleepyPlan, seedStage } from './support/scenario.js';
import { quickDefaultPlan } from './support/stages.js';
import { phaseIs, startTestSystem, waitFor, type TestSystem } from './support/system.js';

let s: TestSystem;
let succeeded: string;
let slow: string;

/** `konfidence ARGS -n <the test namespace>`, KUBECONFIG and TEMPORAL_* from the global setup. */
const cli = (...args: string[]) => exec(process.execPath, [BIN, ...args, '-n', s.ns]);
const json = async (...args: string[]) => {
  const r = await cli(...args, '-o', 'json');
  if (r.code !== 0) throw new Error(`konfidence ${args.join(' ')} exited ${r.code}: ${r.stderr}`);
  return JSON.parse(r.stdout);
};

beforeAll(async () => {
  s = await startTestSystem('cli');
  await quickDefaultPlan(s);
  // A history limit above the seeded revisions: the Stage controller keeps every StageVersion.
  await seedStage(s, 'shop', [1, 2, 3, 4, 5], { stageVersionHistoryLimit: 10 });
  await seedSleepyPlan(s, 'shop', 60);
});
afterAll(async () => {
  await s?.stop();
});

/** What a test started or made: gone after it, whether it passed or failed half-way. */
const children: ChildProcess[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const child of children.splice(0)) {
    if (child.exitCode !== null || child.signalCode !== null) continue;
    const closed = new Promise((resolve) => child.once('close', resolve));
    child.kill('SIGKILL');
    await closed;
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});
/** A temporary directory, removed after the test. */
function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(dir);
  return dir;
}
/** A long-running CLI process (watch), killed after the test if it is still running. */
function startCli(args: string[]): ChildProcess & { stdout: NonNullable<ChildProcess['stdout']> } {
  const child = spawn(process.execPath, [BIN, ...args], { cwd: root, stdio: ['ignore', 'pipe', 'pipe'] });
  children.push(child);
  return child as ChildProcess & { stdout: NonNullable<ChildProcess['stdout']> };
}

it('--help on the root and on every command exits 0; so does the kubectl plugin', async () => {
  const calls = [['--help'], ['help'], ...commands.map((c) => [c.name, '--help']), ['help', 'activate']];
  for (const args of calls) {
    const r = await exec(process.execPath, [BIN, ...args]);
    expect({ args, code: r.code }).toEqual({ args, code: EXIT.ok });
    expect(r.stdout).toContain('Usage: konfidence');
  }
  // kubectl finds executables named kubectl-* on PATH: the package's bin `kubectl-konfidence`.
  const pluginDir = tempDir('konfidence-plugin-');
  symlinkSync(BIN, join(pluginDir, 'kubectl-konfidence'));
  const env = { ...process.env, PATH: `${pluginDir}:${process.env.PATH}` };
  const help = await exec(binaries.kubectl, ['konfidence', 'status', '--help'], env);
  expect(help.code).toBe(EXIT.ok);
  expect(help.stdout).toContain('Usage: kubectl konfidence status [STAGE]');
  const status = await exec(binaries.kubectl, ['konfidence', 'status', 'shop', '-n', s.ns, '-o', 'json'], env);
  expect(status.code).toBe(EXIT.ok);
  expect(JSON.parse(status.stdout)).toMatchObject({ stage: 'shop', namespace: s.ns });
});

it.each([
  ['no command', [], /Usage: konfidence/],
  ['an unknown command', ['statsu'], /unknown command "statsu"/],
  ['an unknown flag', ['status', '--verbose'], /unknown flag --verbose/],
  ['a missing argument', ['activate', 'shop'], /missing STAGEVERSION/],
  ['an extra argument', ['cancel', 'a', 'b'], /unexpected argument "b"/],
  ['an output format that does not exist', ['status', '-o', 'yaml'], /"yaml" is not one of table, json/],
  ['an invalid name', ['activate', 'Shop!', 'shop-2'], /STAGE "Shop!" is not a valid object name/],
  ['--timeout without --wait', ['activate', 'shop', 'shop-2', '--timeout', '5m'], /--timeout applies to --wait only/],
  ['a bad duration', ['cancel', 'x', '--timeout', 'soon'], /"soon" is not a duration/],
])('bad usage exits 2: %s', async (_n, args, message) => {
  const r = await cli(...args);
  expect(r.code).toBe(EXIT.usage);
  expect(r.stderr).toMatch(message);
});

it.each([
  [
    'status of a Stage',
    ['status', 'nosuch'],
    'Stage nosuch not found in namespace NS: list them with "kubectl get stages -n NS"',
  ],
  ['history of a Stage', ['history', 'nosuch'], 'Stage nosuch not found in namespace NS'],
  ['cancel', ['cancel', 'nosuch'], 'VectorActivation nosuch not found in namespace NS'],
  [
    'activate of a StageVersion',
    ['activate', 'shop', 'shop-99'],
    'StageVersion shop-99 not found in namespace NS: list them with "kubectl get stageversions -n NS"',
  ],
])('an unknown object exits 3 and is named: %s', async (_n, args, message) => {
  const r = await cli(...args);
  expect(r.code).toBe(EXIT.notFound);
  expect(r.stderr).toContain(`error: ${message.replaceAll('NS', s.ns)}`);
  expect((await s.objects.list('VectorActivation', s.ns)).length).toBe(0); // nothing created
});

it('an apiserver out of reach exits 4 and says what to check', async () => {
  const port = await freePort(); // free: nobody listens there
  const kubeconfig = join(tempDir('konfidence-kc-'), 'config');
  writeFileSync(
    kubeconfig,
    readFileSync(process.env.KUBECONFIG!, 'utf8').replace(/server: .*/g, `server: https://127.0.0.1:${port}`),
  );
  const r = await cli('status', '--kubeconfig', kubeconfig);
  expect(r.code).toBe(EXIT.unreachable);
  expect(r.stderr).toContain(
    `cannot reach the Kubernetes API server https://127.0.0.1:${port} (ECONNREFUSED): check --kubeconfig / KUBECONFIG`,
  );
});

it('activate --wait succeeds and exits 0; status shows the active StageVersion (table and json)', async () => {
  const r = await cli('activate', 'shop', 'shop-2', '--wait', '--timeout', '2m');
  expect(r).toMatchObject({ code: EXIT.ok, stderr: '' });
  succeeded = r.stdout.match(/^vectoractivation\/(shop-2-[0-9a-f]{6}) created: Stage \S+\/shop → shop-2$/m)![1]!;
  expect(r.stdout).toMatch(new RegExp(`${succeeded}  Succeeded \\(Activated\\)`));
  expect(r.stdout.trim().split('\n').pop()).toBe(`${succeeded}: the StageVersion serves the traffic`);

  expect(await json('status', 'shop')).toMatchObject({
    stage: 'shop',
    active: 'shop-2',
    waiting: [],
    last: { name: succeeded, phase: 'Succeeded' },
  });
  expect((await json('status')).map((v: { stage: string }) => v.stage)).toEqual(['shop']);
  const text = await cli('status', 'shop');
  expect(text.stdout).toContain('  active:   shop-2\n');
  expect(text.stdout).toContain('  running:  (none)\n');
});

it('during a slow activation status shows the running step from the workflow, or from Kubernetes without Temporal; cancel is accepted', async () => {
  // --wait with a deadline shorter than the task: exit 5, and the activation goes on.
  const started = await cli('activate', 'shop', 'shop-3', '--plan', 'shop-plan', '--wait', '--timeout', '3s');
  expect(started.code).toBe(EXIT.timeout);
  slow = started.stdout.match(/^vectoractivation\/(shop-3-[0-9a-f]{6}) created/m)![1]!;
  expect(started.stderr).toMatch(
    new RegExp(`^error: VectorActivation ${s.ns}/${slow} is still \\w+ after 3s; it goes on`),
  );

  // The sleepy task takes 60 s: its step is InProgress for that long.
  const view = await pollUntil(
    async () => {
      const v = await json('status', 'shop');
      return v.running?.progressFrom === 'workflow' && v.running.steps[0]?.tasks[0]?.phase === 'InProgress'
        ? v
        : undefined;
    },
    60_000,
    'status to show the running step',
    500,
  );
  expect(view.running).toMatchObject({
    name: slow,
    stageVersion: 'shop-3',
    phase: 'InProgress',
    steps: [{ name: 'wait', phase: 'InProgress', tasks: [{ registration: 'shop-sleepy', phase: 'InProgress' }] }],
  });
  expect(view.active).toBe('shop-2');
  const text = (await cli('status', 'shop')).stdout;
  expect(text).toContain(`  running:  ${slow} → shop-3 (InProgress`);
  expect(text).toContain(
    "    steps (from the workflow's progress query):\n      1. wait: InProgress\n         - shop-sleepy: InProgress",
  );

  const closed = await freePort();
  const offline = await cli('status', 'shop', '--temporal-address', `127.0.0.1:${closed}`);
  expect(offline.code).toBe(EXIT.ok);
  expect(offline.stdout).toContain(`    note: Temporal at 127.0.0.1:${closed} is unreachable`);
  expect(offline.stdout).toContain('; showing what Kubernetes has\n');
  expect(offline.stdout).toContain('    steps (from the VectorActivation status):\n      1. wait: InProgress');

  const cancel = await cli('cancel', slow);
  expect(cancel.code).toBe(EXIT.ok);
  expect(cancel.stdout).toMatch(/^Accepted: /);
  await waitFor(s, 'VectorActivation', slow, phaseIs('Cancelled'));
});

it('cancel and retry of a Succeeded activation are refused with the reason and exit 1; retry of the Cancelled one runs it again', async () => {
  const cancel = await cli('cancel', succeeded);
  expect(cancel).toMatchObject({
    code: EXIT.failed,
    stdout: 'Refused: the activation is Succeeded; nothing to cancel\n',
  });
  const retry = await json('retry', slow).catch((err: Error) => err);
  expect(retry).toMatchObject({
    name: slow,
    action: 'retry',
    outcome: 'Accepted',
    token: expect.stringMatching(/^konfidence\.cloud\/retry=cli-/),
  });
  await waitFor(s, 'VectorActivation', slow, (o) => o.status?.attempt === 2 && o.status?.phase === 'InProgress');
  const refused = await cli('retry', succeeded, '-o', 'json');
  expect(refused.code).toBe(EXIT.failed);
  expect(JSON.parse(refused.stdout)).toMatchObject({
    outcome: 'Refused',
    message: 'refused: the activation is Succeeded; only a Failed or Cancelled activation can be retried',
  });
  // The running retry is cancelled again: each call is a new request (a new token), answered anew.
  expect((await cli('cancel', slow)).code).toBe(EXIT.ok);
  await waitFor(s, 'VectorActivation', slow, phaseIs('Cancelled'));
});

it("history lists the Stage's activations newest first with phase, reason, attempt and times", async () => {
  const rows = await json('history', 'shop');
  expect(rows.map((r: { name: string }) => r.name)).toEqual([slow, succeeded]);
  expect(rows[0]).toMatchObject({
    stageVersion: 'shop-3',
    phase: 'Cancelled',
    attempt: 2,
    startTime: expect.any(String),
    completionTime: expect.any(String),
  });
  expect(rows[1]).toMatchObject({
    stageVersion: 'shop-2',
    phase: 'Succeeded',
    reason: 'Activated',
    attempt: 1,
    durationSeconds: expect.any(Number),
  });
  const lines = (await cli('history', 'shop')).stdout.trim().split('\n');
  expect(lines[0]).toMatch(/^NAME\s+STAGEVERSION\s+PHASE\s+REASON\s+ATTEMPT\s+STARTED\s+FINISHED\s+DURATION$/);
  expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual([slow, succeeded]);
});

it('watch streams the phases of a new activation and stops at --until-final with its exit code; SIGINT stops it with 0', async () => {
  const name = 'shop-4-watched';
  const watcher = startCli(['watch', 'shop', '--until-final', name, '-o', 'json', '-n', s.ns]);
  const lines: string[] = [];
  watcher.stdout.setEncoding('utf8').on('data', (d: string) => lines.push(...d.split('\n').filter(Boolean)));
  const exited = new Promise<number | null>((resolve) => watcher.on('close', resolve));
  // It prints the activations as they are now first: then it is watching.
  await pollUntil(
    () => lines.some((l) => JSON.parse(l).name === succeeded),
    30_000,
    'watch to list the existing activations',
  );
  expect((await cli('activate', 'shop', 'shop-4', '--name', name)).code).toBe(EXIT.ok);
  expect(await exited).toBe(EXIT.ok);
  const phases = lines
    .map((l) => JSON.parse(l))
    .filter((e) => e.name === name)
    .map((e) => e.phase);
  expect(phases[phases.length - 1]).toBe('Succeeded');
  expect(phases).toContain('InProgress');
  const order = ['Pending', 'Waiting', 'InProgress', 'Succeeded'];
  expect(phases.map((p) => order.indexOf(p))).toEqual([...phases.map((p) => order.indexOf(p))].sort());

  const endless = startCli(['watch', '-n', s.ns]);
  let out = '';
  endless.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  const ended = new Promise<number | null>((resolve) => endless.on('close', resolve));
  await pollUntil(
    () => out.includes(`  ${name}  shop → shop-4  Succeeded`),
    30_000,
    'watch to print the current phases',
  );
  endless.kill('SIGINT');
  expect(await ended).toBe(EXIT.ok);
});
