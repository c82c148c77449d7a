/**
 * bench/step-shape — what one more step costs Temporal when nothing of ours runs in it: the shape of
 * an activation's steps (bench/step-shape/workflow.ts: a local activity phase, then the executor's
 * activity on another worker's task queue) on the local Temporal server, the workflow worker and the
 * executor's worker each a process of its own, as the core and an executor run. Three modes:
 *   bare: every activity returns at once (Temporal and the SDK alone);
 *   writes: each local activity makes one apiserver write, the executor reads the route, writes its
 *     record and then the route (the requests ADR-0012 asks of a step), on ConfigMaps;
 *   executor only: bare, without the local activity phase (what that phase adds to a step).
 * In interleaved pairs, a workflow of 2 steps (a plain switch's) and one of 6 (the canary's three
 * weights of the same two steps): per step = (6-step median − 2-step median) / 4, and the ratio of
 * the two medians printed beside it. bench/progressive.ts measures the same shape with ours in it.
 * The dev server has one history shard, whose new tasks are read at most 20 times a second
 * (history.transferProcessorMaxPollRPS): a workflow whose tasks come faster than that waits up to
 * 50 ms for each (docs/performance.md, The canary). Not part of npm run bench: a diagnosis.
 * Run: npx tsx bench/step-shape.ts [--pairs 10]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { Client, Connection } from '@temporalio/client';
import { DefaultLogger, NativeConnection, Runtime, Worker } from '@temporalio/worker';
import { k8s, loadKubeConfig } from '../k8s/client.js';
import { repoRoot } from '../scripts/env/paths.js';
import { removeNamespaces } from '../test/support/namespaces.js';
import { CONFIG_MAPS, shapeActivities } from './step-shape/activities.js';
import { killOnExit, stopRole } from './fixture.js';
import { numberArg, stats, stringArg, writeResult } from './report.js';

const role = stringArg('role');
// Its default shutdown signals stop a role's worker on SIGTERM.
Runtime.install({ logger: new DefaultLogger('ERROR') });

/** A role's process: the worker on `queue`; "ready" on stdout once it runs. */
async function runRole(which: string): Promise<void> {
  const kc = loadKubeConfig(stringArg('kubeconfig'));
  const connection = await NativeConnection.connect({ address: stringArg('address')! });
  const worker = await Worker.create({
    connection,
    namespace: stringArg('namespace')!,
    taskQueue: stringArg('queue')!,
    activities: shapeActivities(kc, stringArg('ns')!),
    ...(which === 'workflows' ? { workflowsPath: join(repoRoot, 'bench', 'step-shape', 'workflow.ts') } : {}),
  });
  const running = worker.run();
  console.log('ready');
  await running;
  await connection.close();
}

/** A role as its own process group (tsx runs the script in a child of its own), ready within a minute. */
function startRole(which: string, args: string[], started: ChildProcess[]): Promise<void> {
  const child = spawn(
    process.execPath,
    [
      join(repoRoot, 'node_modules', 'tsx', 'dist', 'cli.mjs'),
      join(repoRoot, 'bench', 'step-shape.ts'),
      '--role',
      which,
      ...args,
    ],
    {
      cwd: repoRoot,
      stdio: ['ignore', 'pipe', 'inherit'],
      detached: true,
    },
  );
  started.push(child);
  killOnExit(child);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the ${which} worker was not ready within 60 s`)), 60_000);
    child.once('exit', (code) => reject(new Error(`the ${which} worker exited with ${code}`)));
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line === 'ready') (clearTimeout(timer), resolve());
    });
  });
}

async function measure(): Promise<void> {
  const PAIRS = numberArg('pairs', 10);
  if (!Number.isInteger(PAIRS) || PAIRS < 1) throw new Error('--pairs wants a whole number ≥ 1');
  const { up } = await import('../scripts/env/control-plane.js');
  const cp = await up(() => undefined);
  const kc = loadKubeConfig(cp.kubeconfig);
  const id = randomBytes(3).toString('hex');
  const ns = `shape-${id}`;
  const core = kc.makeApiClient(k8s.CoreV1Api);
  const roles: ChildProcess[] = [];
  let connection: Connection | undefined;
  try {
    await core.createNamespace({ body: { metadata: { name: ns } } });
    for (const name of CONFIG_MAPS)
      await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name }, data: {} } });
    const common = [
      '--address',
      cp.temporalAddress,
      '--namespace',
      cp.testTemporalNamespace,
      '--kubeconfig',
      cp.kubeconfig,
      '--ns',
      ns,
    ];
    await Promise.all([
      startRole('workflows', [...common, '--queue', `shape-core-${id}`], roles),
      startRole('executor', [...common, '--queue', `shape-executor-${id}`], roles),
    ]);
    connection = await Connection.connect({ address: cp.temporalAddress });
    const client = new Client({ connection, namespace: cp.testTemporalNamespace });
    let n = 0;
    const modes = [
      { mode: 'bare', says: 'Temporal and the SDK alone', writes: false, locals: true },
      { mode: 'writes', says: "with a step's requests", writes: true, locals: true },
      { mode: 'executorOnly', says: 'bare, no local activity phase', writes: false, locals: false },
    ];
    const run = async (steps: number, m: (typeof modes)[number]) => {
      const started = performance.now();
      await client.workflow.execute('shapeSteps', {
        taskQueue: `shape-core-${id}`,
        workflowId: `shape-${id}-${n++}`,
        args: [steps, `shape-executor-${id}`, m.writes, m.locals],
        workflowExecutionTimeout: '1 minute',
      });
      return performance.now() - started;
    };
    // The modes interleaved, pair by pair: each sees the server as the others do (a fresh one lets
    // its first tasks through before the read limit below binds).
    for (const m of modes) await run(2, m); // unmeasured: the first run of each mode pays for its code's first use
    const times = modes.map(() => ({ plain: [] as number[], canary: [] as number[] }));
    for (let i = 0; i < PAIRS; i++) {
      for (const [k, m] of modes.entries()) {
        // Each side first in turn.
        if (i % 2) times[k]!.canary.push(await run(6, m));
        times[k]!.plain.push(await run(2, m));
        if (!(i % 2)) times[k]!.canary.push(await run(6, m));
      }
    }
    const figures: Record<string, object> = {};
    for (const [k, m] of modes.entries()) {
      const { plain, canary } = times[k]!;
      const p = stats(plain).median;
      const c = stats(canary).median;
      const perStepMs = Math.round((c - p) / 4);
      const ratio = +(c / p).toFixed(2);
      figures[m.mode] = {
        plainMs: p,
        canaryMs: c,
        perStepMs,
        ratio,
        plain: plain.map(Math.round),
        canary: canary.map(Math.round),
      };
      console.log(
        `${m.says}: 2 steps ${p} ms, 6 steps ${c} ms (medians of ${PAIRS}): ${perStepMs} ms a step, ${ratio} ×`,
      );
    }
    console.log(`wrote ${writeResult('step-shape', { pairs: PAIRS, ...figures })}`);
  } finally {
    await connection?.close();
    await Promise.all(roles.map((r) => stopRole(r)));
    await removeNamespaces(kc, [ns]);
  }
}

if (role) await runRole(role);
else await measure();
