import { installProject } from '../../k8s/crds.js';
import { loadKubeConfig } from '../../k8s/client.js';

export async function installCrds(kubeconfig: string): Promise<void> {
  await installProject(loadKubeConfig(kubeconfig));
}
