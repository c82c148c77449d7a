import { applyCrds, installProject } from '../../k8s/crds.js';
import { loadKubeConfig } from '../../k8s/client.js';
import { routeCrds } from '../route-crds.js';

/** The project's CRDs and admission policies, and the route CRDs as their projects publish them (the gateway watches the Gateway API's). */
export async function installCrds(kubeconfig: string): Promise<void> {
  const kc = loadKubeConfig(kubeconfig);
  await installProject(kc);
  await applyCrds(kc, routeCrds());
}
