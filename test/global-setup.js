/**
 * Starts the real local control plane once per jest run (or reuses the one `npm run env:up` left
 * running) and hands its addresses to the test workers through the environment. jest loads this
 * file with Node's own loader, which cannot run the TypeScript sources: it runs them through tsx,
 * the same way `npm run env:up` does.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

/** `npx tsx ARGS` to its end: its stdout, its stderr shown as it comes; rejects on a non-zero exit. */
function tsx(...args) {
  return new Promise((resolve, reject) => {
    const child = spawn('npx', ['tsx', ...args], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) =>
      code === 0 ? resolve(out) : reject(new Error(`tsx ${args.join(' ')} exited ${code}`)),
    );
  });
}

export default async function globalSetup() {
  // KONFIDENCE_TEMPORAL=postgres (npm run test:postgres) runs the tests against the Temporal server
  // on PostgreSQL, as docker-compose.yml runs it, instead of the dev server.
  const profile = process.env.KONFIDENCE_TEMPORAL ? [`--temporal=${process.env.KONFIDENCE_TEMPORAL}`] : [];
  // One workflow bundle for the whole run, made while the servers start: every test file's core
  // worker and every core worker process a test starts loads it (KONFIDENCE_WORKFLOW_BUNDLE)
  // instead of bundling the sources for seconds each. Removed by the global teardown.
  const bundle = join(root, '.cache', `workflow-bundle-${process.pid}.js`);
  const [out] = await Promise.all([
    tsx('scripts/env-up.ts', '--json', ...profile),
    tsx('worker/workflow-bundle.ts', bundle),
  ]);
  process.env.KONFIDENCE_WORKFLOW_BUNDLE = bundle;
  const cp = JSON.parse(out.trim().split('\n').pop());
  process.env.KUBECONFIG = cp.kubeconfig;
  process.env.TEMPORAL_ADDRESS = cp.temporalAddress;
  // The tests' own Temporal namespace: what a person looks at (default, npm start) stays theirs.
  process.env.TEMPORAL_NAMESPACE = cp.testTemporalNamespace;
  process.env.TEMPORAL_UI_URL = cp.temporalUiUrl;
  process.env.KONFIDENCE_PROMETHEUS_URL = cp.prometheusUrl;
  process.env.KONFIDENCE_GATEWAY_URL = cp.gatewayUrl;
  // Stop at the end only what this run started; a developer's running env stays up.
  process.env.KONFIDENCE_TEST_STARTED_ENV = cp.started && !process.env.KONFIDENCE_KEEP_ENV ? '1' : '';
}
