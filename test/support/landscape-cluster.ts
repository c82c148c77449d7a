/**
 * A landscape cluster for a test file: its own etcd and kube-apiserver on 127.0.0.1 (free ports,
 * data in a temporary folder), with the route CRDs (Gateway API, Istio) and none of the project's.
 * The routes of a Stage in a Landscape live here, and the landscape's executor workers hold only
 * this cluster's kubeconfig. It signs with the local control plane's CA (scripts/env/certs.ts):
 * its serving certificate is the same 127.0.0.1 one.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pki } from '../../scripts/env/certs.js';
import { binaries } from '../../scripts/env/paths.js';
import { adminGet } from '../../scripts/env/components.js';
import { writeAdminKubeconfig } from '../../scripts/env/control-plane.js';
import { isAlive, pollUntil, startDetached } from '../../scripts/env/process.js';
import { freeLowPort } from '../../scripts/env/ports.js';
import { applyCrds } from '../../k8s/crds.js';
import { loadKubeConfig, type k8s } from '../../k8s/client.js';
import { routeCrds } from '../../scripts/route-crds.js';

export interface LandscapeCluster {
  name: string;
  kubeconfig: string;
  kc: k8s.KubeConfig;
  /** Stops the apiserver (its etcd and data stay): the landscape's outage. */
  stopApiserver(): Promise<void>;
  /** Starts it again on the same port, and waits until it answers. */
  startApiserver(): Promise<void>;
  stop(): Promise<void>;
}

/** SIGTERM, then SIGKILL after 10 s; resolves once the process is gone. */
async function stopProcess(pid: number | undefined): Promise<void> {
  if (!pid || !isAlive(pid)) return;
  process.kill(pid, 'SIGTERM');
  await pollUntil(() => !isAlive(pid) || undefined, 10_000, `process ${pid} to stop`, 50).catch(() => {
    if (isAlive(pid)) process.kill(pid, 'SIGKILL');
  });
}

export async function startLandscapeCluster(name: string): Promise<LandscapeCluster> {
  const dir = mkdtempSync(join(tmpdir(), `konfidence-landscape-${name}-`));
  // Below the ephemeral range: the apiserver restarted after an outage gets its port back.
  const [etcdClient, etcdPeer, apiserverPort] = [await freeLowPort(), await freeLowPort(), await freeLowPort()];
  const peer = `http://127.0.0.1:${etcdPeer}`;
  const client = `http://127.0.0.1:${etcdClient}`;
  const etcd = startDetached(`landscape-${name}-etcd`, binaries.etcd, [
    `--name=${name}`,
    `--data-dir=${join(dir, 'etcd')}`,
    `--listen-client-urls=${client}`,
    `--advertise-client-urls=${client}`,
    `--listen-peer-urls=${peer}`,
    `--initial-advertise-peer-urls=${peer}`,
    `--initial-cluster=${name}=${peer}`,
    '--unsafe-no-fsync=true',
    '--log-level=warn',
  ]);
  let apiserver: number | undefined;
  const startApiserver = async () => {
    apiserver = startDetached(`landscape-${name}-apiserver`, binaries.kubeApiserver, [
      `--etcd-servers=${client}`,
      '--bind-address=127.0.0.1',
      '--advertise-address=127.0.0.1',
      `--secure-port=${apiserverPort}`,
      `--cert-dir=${join(dir, 'certs')}`,
      `--tls-cert-file=${pki.serverCert}`,
      `--tls-private-key-file=${pki.serverKey}`,
      `--client-ca-file=${pki.caCert}`,
      '--authorization-mode=RBAC',
      '--service-cluster-ip-range=127.201.0.0/16',
      '--service-account-issuer=https://kubernetes.default.svc',
      `--service-account-key-file=${pki.saPub}`,
      `--service-account-signing-key-file=${pki.saKey}`,
      '--disable-admission-plugins=ServiceAccount',
      '--profiling=false',
      '--v=0',
    ]);
    await pollUntil(
      async () =>
        ((await adminGet(apiserverPort, '/readyz')) === 200 &&
          (await adminGet(apiserverPort, '/api/v1/namespaces/default')) === 200) ||
        undefined,
      120_000,
      `the landscape ${name}'s kube-apiserver`,
      200,
    );
  };
  const stop = async () => {
    await stopProcess(apiserver);
    await stopProcess(etcd);
    rmSync(dir, { recursive: true, force: true });
  };
  try {
    await startApiserver();
    const kubeconfig = join(dir, 'kubeconfig');
    writeAdminKubeconfig(kubeconfig, name, apiserverPort);
    const kc = loadKubeConfig(kubeconfig);
    await applyCrds(kc, routeCrds());
    return {
      name,
      kubeconfig,
      kc,
      stopApiserver: () => stopProcess(apiserver),
      startApiserver,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
