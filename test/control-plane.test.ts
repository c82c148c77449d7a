/** The local control plane that npm run env:up and jest's global setup start. */
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { current, envFilePath, up } from '../scripts/env/control-plane.js';
import { pki } from '../scripts/env/certs.js';
import { kubectl } from './support/cluster.js';

function getAs(user: string, port: number, path: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port,
        path,
        ca: readFileSync(pki.caCert),
        cert: readFileSync(pki.adminCert),
        key: readFileSync(pki.adminKey),
        headers: { 'Impersonate-User': user },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end();
  });
}

describe('local control plane', () => {
  it('reuses the running servers on a second env:up, on the same addresses', async () => {
    const before = current();
    const again = await up(() => {});
    expect(again.started).toBe(false);
    expect(again.ports).toEqual(before?.ports);
  });

  it('writes env.sh with the four variables clients need, pointing at the running servers', () => {
    const env = readFileSync(envFilePath, 'utf8');
    const cp = current()!;
    expect(env).toContain(`export KUBECONFIG=${cp.kubeconfig}`);
    expect(env).toContain(`export TEMPORAL_ADDRESS=${cp.temporalAddress}`);
    expect(env).toContain('export TEMPORAL_NAMESPACE=default');
    expect(env).toContain(`export TEMPORAL_UI_URL=${cp.temporalUiUrl}`);
  });

  it('serves Kubernetes v1.34 over TLS to the admin of the written kubeconfig', async () => {
    const version = JSON.parse(await kubectl('version', '-o', 'json'));
    expect(version.serverVersion.gitVersion).toMatch(/^v1\.34\.\d+$/);
  });

  it('authorizes with RBAC: a user without bindings is forbidden, the admin group is not', async () => {
    const port = current()!.ports.apiserver;
    expect(await getAs('nobody', port, '/api/v1/namespaces/default/configmaps')).toBe(403);
    expect(await kubectl('auth', 'can-i', 'create', 'vectoractivations.landscape.konfidence.cloud')).toMatch(/^yes/);
  });

  it('serves the Temporal UI', async () => {
    const res = await fetch(current()!.temporalUiUrl);
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('<html');
  });
});
