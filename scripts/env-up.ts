/**
 * npm run env:up — starts (or reuses) the local control plane and prints how to reach it.
 *   --temporal=postgres   Temporal server on PostgreSQL, as docker-compose.yml runs it (default:
 *                         KONFIDENCE_TEMPORAL, else what the state folder runs, else the dev server)
 *   --temporal=cluster    the same server with each service its own process, history twice
 *   --landscape NAME      also a landscape cluster NAME: its own etcd, kube-apiserver and
 *                         kube-controller-manager, with the route CRDs, for the Stages that name
 *                         Landscape NAME (docs/landscapes.md); repeatable
 * With --json the last line is the control plane as JSON (jest's global setup reads it).
 */
import { up } from './env/control-plane.js';
import { upLandscape } from './env/landscape.js';

const PROFILE_NAMES = {
  dev: 'dev server',
  postgres: 'server on PostgreSQL',
  cluster: 'server on PostgreSQL, one process per service',
} as const;
const json = process.argv.includes('--json');
const args = process.argv.slice(2);
const flag = args.indexOf('--temporal');
const temporal =
  flag >= 0 ? args[flag + 1] : args.find((a) => a.startsWith('--temporal='))?.slice('--temporal='.length);
const landscapes = args.flatMap((arg, i) =>
  arg === '--landscape'
    ? [args[i + 1] ?? '']
    : arg.startsWith('--landscape=')
      ? [arg.slice('--landscape='.length)]
      : [],
);
const invalid = landscapes.find((name) => !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(name));
if (invalid !== undefined) {
  console.error(`env:up: --landscape takes a Landscape's name (a DNS label), not "${invalid}"`);
  process.exit(2);
}
// The message says what failed and shows the server's log; a stack trace adds nothing to act on.
const fail = (err: Error) => {
  console.error(`env:up: ${err.message}`);
  process.exit(1);
};
const cp = await up(json ? (line) => console.error(line) : console.log, { temporal }).catch(fail);
const landscapeLines: string[] = [];
for (const name of landscapes) {
  const landscape = await upLandscape(name).catch(fail);
  landscapeLines.push(
    `  Landscape ${name}   https://127.0.0.1:${landscape.ports.apiserver}   (${landscape.started ? 'started' : 'already running'}; KUBECONFIG=${landscape.kubeconfig})`,
  );
}
if (json) {
  console.log(JSON.stringify(cp));
} else {
  console.log(`control plane ${cp.started ? 'started' : 'already running'} (Temporal: ${PROFILE_NAMES[cp.temporalProfile]}):
  Kubernetes API   https://127.0.0.1:${cp.ports.apiserver}   (KUBECONFIG=${cp.kubeconfig})
  Temporal         ${cp.temporalAddress}   namespace ${cp.temporalNamespace}
  Temporal UI      ${cp.temporalUiUrl}
  source ${cp.envFile}   # exports KUBECONFIG, TEMPORAL_* and puts kubectl and temporal on PATH`);
  for (const line of landscapeLines) console.log(line);
}
