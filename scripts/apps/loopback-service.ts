/**
 * A Service the local gateway resolves to a loopback address: the apiserver allocates its ClusterIP
 * from the local control plane's loopback Service range, and whatever serves it listens there
 * (docs/data-plane.md). The test apps and `npm run expose` make theirs here.
 */
import { apiStatus, k8s } from '../../k8s/client.js';

/** The Service, made if missing (owned by `owner` when given, so that it goes with it); its ClusterIP. */
export async function loopbackService(
  core: k8s.CoreV1Api,
  namespace: string,
  name: string,
  port: number,
  owner?: k8s.V1OwnerReference,
): Promise<string> {
  const read = () => core.readNamespacedService({ name, namespace });
  let svc: k8s.V1Service;
  try {
    svc = await read();
  } catch (err) {
    if (apiStatus(err) !== 404) throw err;
    const body: k8s.V1Service = {
      metadata: { name, namespace, ...(owner ? { ownerReferences: [owner] } : {}) },
      spec: { type: 'ClusterIP', ports: [{ name: 'http', port, targetPort: port, protocol: 'TCP' }] },
    };
    svc = await core.createNamespacedService({ namespace, body }).catch(async (e: unknown) => {
      if (apiStatus(e) === 409) return read();
      throw e;
    });
  }
  const ip = svc.spec?.clusterIP;
  if (!ip?.startsWith('127.'))
    throw new Error(
      `Service ${namespace}/${name} has ClusterIP ${ip}, not one on loopback: is the apiserver's Service range the local one?`,
    );
  if (!svc.spec?.ports?.some((p) => p.port === port))
    throw new Error(`Service ${namespace}/${name} exists without port ${port}: delete it, or use its port`);
  return ip;
}
