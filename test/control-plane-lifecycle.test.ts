/**
 * env:up / env:down on a control plane of its own (a separate state folder), so the servers the
 * other tests use are never restarted: data survives a restart, and a server that died is
 * replaced by the next env:up.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { ControlPlane } from '../scripts/env/control-plane.js';

const stateDir = mkdtempSync(join(tmpdir(), 'konfidence-env-'));
process.env.KONFIDENCE_ENV_DIR = stateDir;
// Imported after the variable is set: paths.ts reads it once.
const controlPlane = await import('../scripts/env/control-plane.js');
const { kubectl } = await import('./support/cluster.js');
const { isAlive } = await import('../scripts/env/process.js');

const kubectlOn = (cp: ControlPlane, ...args: string[]) => kubectl('--kubeconfig', cp.kubeconfig, ...args);

afterAll(async () => {
  await controlPlane.down();
  rmSync(stateDir, { recursive: true, force: true });
});

describe('control plane lifecycle', () => {
  it('keeps objects across down and up, and replaces a server that was killed', async () => {
    const first = await controlPlane.up(() => {});
    expect(first.started).toBe(true);
    await kubectlOn(first, 'create', 'configmap', 'survivor', '-n', 'default', '--from-literal=k=v');

    expect(await controlPlane.down()).toBe(true);
    const second = await controlPlane.up(() => {});
    expect(second.started).toBe(true);
    expect(second.ports).toEqual(first.ports);
    expect(await kubectlOn(second, 'get', 'configmap', 'survivor', '-n', 'default', '-o', 'jsonpath={.data.k}')).toBe(
      'v',
    );

    // down stopped the gateway too; up started it again, on its port.
    expect(isAlive(first.pids.gateway)).toBe(false);
    expect((await fetch(`${second.gatewayUrl}/`)).status).toBe(404);

    process.kill(second.pids.apiserver!, 'SIGKILL');
    const third = await controlPlane.up(() => {});
    expect(third.started).toBe(true);
    expect(third.pids.apiserver).not.toBe(second.pids.apiserver);
    // The gateway reads the apiserver through the kubeconfig: it starts again with it.
    expect(third.pids.gateway).not.toBe(second.pids.gateway);
    // Only what died was restarted: Temporal (and its workflows) kept running.
    expect(third.pids.temporal).toBe(second.pids.temporal);
    expect(third.pids.etcd).toBe(second.pids.etcd);
    expect(
      await kubectlOn(third, 'get', 'crd', 'vectoractivations.landscape.konfidence.cloud', '-o', 'name'),
    ).toContain('vectoractivations');
  });

  it("env:up --landscape NAME starts a landscape cluster of its own, with the route CRDs and none of the project's, reuses it while it runs, and env:down stops it", async () => {
    const run = async (script: string, ...args: string[]) =>
      (
        await promisify(execFile)(process.execPath, ['--import', 'tsx', script, ...args], {
          env: { ...process.env, KONFIDENCE_ENV_DIR: stateDir },
        })
      ).stdout;
    const started = await run('scripts/env-up.ts', '--landscape', 'lab');
    const line = started.split('\n').find((l) => l.trim().startsWith('Landscape lab'));
    expect(line).toContain('(started; KUBECONFIG=');
    const kubeconfig = line!.match(/KUBECONFIG=(\S+)\)/)![1]!;
    expect(kubeconfig).toBe(join(stateDir, 'landscapes', 'lab', 'kubeconfig'));
    // Its own cluster: the routes' kinds, none of the control plane's.
    const crds = await kubectl('--kubeconfig', kubeconfig, 'get', 'crd', '-o', 'name');
    expect(crds).toContain('httproutes.gateway.networking.k8s.io');
    expect(crds).toContain('virtualservices.networking.istio.io');
    expect(crds).not.toContain('konfidence');

    expect(await run('scripts/env-up.ts', '--landscape=lab')).toContain('(already running;');
    expect(await run('scripts/env-down.ts')).toContain('landscapes stopped: lab');
    await expect(kubectl('--kubeconfig', kubeconfig, 'get', 'ns', '--request-timeout=5s')).rejects.toThrow();
  });
});
