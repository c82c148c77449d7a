/**
 * Starts the real local control plane once per jest run (or reuses the one `npm run env:up` left
 * running) and hands its addresses to the test workers through the environment. jest loads this
 * file with Node's own loader, which cannot run the TypeScript sources: it runs them through tsx,
 * the same way `npm run env:up` does.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

export default function globalSetup() {
  // KONFIDENCE_TEMPORAL=postgres (npm run test:postgres) runs the tests against the Temporal server
  // on PostgreSQL, as docker-compose.yml runs it, instead of the dev server.
  const profile = process.env.KONFIDENCE_TEMPORAL ? [`--temporal=${process.env.KONFIDENCE_TEMPORAL}`] : [];
  const out = execFileSync('npx', ['tsx', 'scripts/env-up.ts', '--json', ...profile], {
    cwd: root,
    stdio: ['ignore', 'pipe', 'inherit'],
    encoding: 'utf8',
  });
  const cp = JSON.parse(out.trim().split('\n').pop());
  process.env.KUBECONFIG = cp.kubeconfig;
  process.env.TEMPORAL_ADDRESS = cp.temporalAddress;
  // The tests' own Temporal namespace: what a person looks at (default, npm start) stays theirs.
  process.env.TEMPORAL_NAMESPACE = cp.testTemporalNamespace;
  process.env.TEMPORAL_UI_URL = cp.temporalUiUrl;
  process.env.KONFIDENCE_PROMETHEUS_URL = cp.prometheusUrl;
  // Stop at the end only what this run started; a developer's running env stays up.
  process.env.KONFIDENCE_TEST_STARTED_ENV = cp.started && !process.env.KONFIDENCE_KEEP_ENV ? '1' : '';
}
