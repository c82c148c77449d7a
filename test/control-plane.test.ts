/** The local control plane that npm run env:up and jest's global setup start. */
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { current, envFilePath, up } from '../scripts/env/control-plane.js';
import { GATEWAY_NAME, GATEWAY_NAMESPACE } from '../scripts/env/gateway.js';
import { versions } from '../scripts/env/paths.js';
import { pollUntil } from '../scripts/env/process.js';
import { pki } from '../scripts/env/certs.js';
import { k8s } from '../k8s/client.js';
import { kubeConfig, kubectl } from './support/cluster.js';

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

  it('writes env.sh with the variables clients need, pointing at the running servers', () => {
    const env = readFileSync(envFilePath, 'utf8');
    const cp = current()!;
    expect(env).toContain(`export KUBECONFIG=${cp.kubeconfig}`);
    expect(env).toContain(`export TEMPORAL_ADDRESS=${cp.temporalAddress}`);
    expect(env).toContain('export TEMPORAL_NAMESPACE=default');
    expect(env).toContain(`export TEMPORAL_UI_URL=${cp.temporalUiUrl}`);
    expect(env).toContain(`export KONFIDENCE_GATEWAY_URL=http://127.0.0.1:${cp.ports.gateway}`);
  });

  it('runs a gateway on loopback: its Gateway accepted and programmed on the upstream standard CRDs, Services on a loopback range, its metrics scraped', async () => {
    const cp = current()!;
    expect(cp.gatewayUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const gateway = JSON.parse(await kubectl('get', 'gateway', GATEWAY_NAME, '-n', GATEWAY_NAMESPACE, '-o', 'json'));
    expect(gateway.spec.listeners).toEqual([expect.objectContaining({ port: cp.ports.gateway, protocol: 'HTTP' })]);
    expect(
      gateway.status.conditions
        .filter((c: { status: string }) => c.status === 'True')
        .map((c: { type: string }) => c.type),
    ).toEqual(expect.arrayContaining(['Accepted', 'Programmed']));
    // The Gateway API's standard channel, as published at the pinned version.
    const crds = (await kubeConfig().makeApiClient(k8s.ApiextensionsV1Api).listCustomResourceDefinition()).items
      .filter((c) => c.metadata!.name!.endsWith('.gateway.networking.k8s.io'))
      .map(
        (c) =>
          `${c.metadata!.name} ${c.metadata!.annotations?.['gateway.networking.k8s.io/channel']} ${c.metadata!.annotations?.['gateway.networking.k8s.io/bundle-version']}`,
      );
    expect(crds.sort()).toEqual(
      ['backendtlspolicies', 'gatewayclasses', 'gateways', 'grpcroutes', 'httproutes', 'referencegrants'].map(
        (p) => `${p}.gateway.networking.k8s.io standard ${versions.GATEWAY_API_VERSION}`,
      ),
    );
    expect(await kubectl('get', 'service', 'kubernetes', '-n', 'default', '-o', 'jsonpath={.spec.clusterIP}')).toBe(
      '127.200.0.1',
    );
    // Prometheus scrapes it (every second): the query answers 1.
    await pollUntil(
      async () => {
        const res = await fetch(
          `${cp.prometheusUrl}/api/v1/query?query=${encodeURIComponent('up{component="gateway"}')}`,
        );
        return (
          ((await res.json()) as { data: { result: { value: [number, string] }[] } }).data.result[0]?.value[1] === '1'
        );
      },
      30_000,
      'Prometheus to scrape the gateway',
      250,
    );
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
