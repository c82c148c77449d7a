/**
 * A landscape cluster for a test file (scripts/env/landscape.ts): its own etcd and kube-apiserver
 * on 127.0.0.1, data in a temporary folder, with the route CRDs and none of the project's. The
 * routes of a Stage in a Landscape live here, and the landscape's executor workers hold only this
 * cluster's kubeconfig.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startLandscapeApiserver, startLandscapeServers, stopLandscapeServers } from '../../scripts/env/landscape.js';
import { stopProcess } from '../../scripts/env/process.js';
import { loadKubeConfig, type k8s } from '../../k8s/client.js';

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

export async function startLandscapeCluster(name: string): Promise<LandscapeCluster> {
  const dir = mkdtempSync(join(tmpdir(), `konfidence-landscape-${name}-`));
  const servers = await startLandscapeServers(name, dir).catch((err: unknown) => {
    rmSync(dir, { recursive: true, force: true });
    throw err;
  });
  return {
    name,
    kubeconfig: servers.kubeconfig,
    kc: loadKubeConfig(servers.kubeconfig),
    stopApiserver: () => stopProcess(servers.pids.apiserver),
    startApiserver: () => startLandscapeApiserver(servers),
    async stop() {
      await stopLandscapeServers(servers);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
