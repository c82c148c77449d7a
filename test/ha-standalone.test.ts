/**
 * Standalone mode leaves status.activeController absent (docs/ha-publishing.md, "Not in standalone
 * mode"): `tsx worker/main.ts watcher` as a process, without KONFIDENCE_LEADER_ELECTION, with a
 * valid KONFIDENCE_ENDPOINT (so a publisher, were one started, would not refuse) and a fresh system
 * namespace; once it is ready, and for a bounded while after, no ControllerStatus exists there and
 * none was ever created (a watch on the namespace from before the start sees no event).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { GROUP, VERSION } from '../api/group.js';
import { DEFAULT_LEADERSHIP_CHECK_MS } from '../decisions/publish.js';
import { resumingWatch, type ResumingWatch } from './support/watch.js';
import { CustomObjects } from '../k8s/custom-objects.js';
import { pollUntil } from '../scripts/env/process.js';
import { freshNamespace, kubeConfig } from './support/cluster.js';

const root = fileURLToPath(new URL('..', import.meta.url));
const kc = kubeConfig();
const objects = new CustomObjects(kc);

let child: ChildProcess | undefined;
let watch: ResumingWatch | undefined;

afterAll(async () => {
  watch?.stop();
  if (child && child.exitCode === null && child.signalCode === null) {
    const exited = once(child, 'exit');
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // gone
    }
    await exited;
  }
});

it('a watcher without leader election publishes no ControllerStatus', async () => {
  const systemNs = await freshNamespace('ha-standalone');
  // Watched: an empty namespace of its own, so this watcher acts on no other test's activations.
  const watchedNs = await freshNamespace('ha-standalone-watched');

  // Every event on ControllerStatus objects in the system namespace, from before the start: an
  // object created and deleted again between two reads would still show here.
  const events: string[] = [];
  watch = await resumingWatch(kc, `/apis/${GROUP}/${VERSION}/namespaces/${systemNs}/controllerstatuses`, (type, o) =>
    events.push(`${type} ${o?.metadata?.name}`),
  );

  const env: NodeJS.ProcessEnv = {
    ...process.env,
    KONFIDENCE_SYSTEM_NAMESPACE: systemNs,
    KONFIDENCE_WATCH_NAMESPACES: watchedNs,
    KONFIDENCE_QUEUE_SUFFIX: `-${watchedNs}`,
    KONFIDENCE_IDENTITY: 'standalone-a',
    KONFIDENCE_ENDPOINT: 'http://127.0.0.1:8081',
    KONFIDENCE_HEALTH_PORT: '0',
  };
  delete env.KONFIDENCE_LEADER_ELECTION; // standalone: the point of this test
  const lines: string[] = [];
  let port: number | undefined;
  child = spawn('npx', ['tsx', 'worker/main.ts', 'watcher'], {
    cwd: root,
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true, // its own process group: the signal reaches tsx's node child too
  });
  for (const stream of [child.stdout!, child.stderr!]) {
    createInterface({ input: stream }).on('line', (line) => {
      lines.push(line);
      const logged = /health server listening on port (\d+)/.exec(line)?.[1];
      if (logged) port = Number(logged);
    });
  }

  await pollUntil(
    async () => port !== undefined && (await fetch(`http://127.0.0.1:${port}/readyz`)).status === 200,
    90_000,
    `the standalone watcher to be ready (log: ${lines.slice(-5).join(' | ')})`,
    250,
  );

  // Proving an absence takes a bounded wait: there is no event to wait for when nothing happens.
  // A publisher, had one been started, makes its first pass at once (before readiness) and then
  // one every leadership check (2 s); readiness plus one check and a margin covers both.
  const observeMs = DEFAULT_LEADERSHIP_CHECK_MS + 1_000;
  await new Promise((resolve) => setTimeout(resolve, observeMs));

  expect(child.exitCode).toBeNull(); // still running: the absence is not that of a dead process
  expect(await objects.list('ControllerStatus', systemNs)).toEqual([]);
  expect({ events, watchEnded: watch.ended }).toEqual({ events: [], watchEnded: undefined }); // a dead watch would see no event either
  // Log records are JSON lines (stdout is no terminal): none may come from those components.
  const components = lines.flatMap((l) => {
    try {
      return [JSON.parse(l).component as string | undefined];
    } catch {
      return [];
    }
  });
  expect(components.length).toBeGreaterThan(0); // the log is read: records of the process are there
  expect(components.filter((c) => c === 'publisher' || c === 'leader-election')).toEqual([]);

  // A clean stop on SIGTERM, as in a cluster.
  const exited = once(child, 'exit');
  process.kill(-child.pid!, 'SIGTERM');
  await exited;
});
