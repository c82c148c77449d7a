/**
 * npm run env:up — starts (or reuses) the local control plane and prints how to reach it.
 * With --json the last line is the control plane as JSON (jest's global setup reads it).
 */
import { up } from './env/control-plane.js';

const json = process.argv.includes('--json');
const cp = await up(json ? (line) => console.error(line) : console.log);
if (json) {
  console.log(JSON.stringify(cp));
} else {
  console.log(`control plane ${cp.started ? 'started' : 'already running'}:
  Kubernetes API   https://127.0.0.1:${cp.ports.apiserver}   (KUBECONFIG=${cp.kubeconfig})
  Temporal         ${cp.temporalAddress}   namespace ${cp.temporalNamespace}
  Temporal UI      ${cp.temporalUiUrl}
  source ${cp.envFile}   # exports KUBECONFIG, TEMPORAL_* and puts kubectl and temporal on PATH`);
}
