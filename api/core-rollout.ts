/**
 * The canary of a core worker build (docs/scale.md, "Controller versions"): which namespaces start
 * their activations pinned to which build. A ConfigMap in the system namespace rather than a kind of
 * its own: it is a handful of strings that `konfidence rollout` writes and the watcher reads, needs
 * no CRD, and `kubectl edit configmap` fixes it by hand. Its shape is written once, here.
 */
import { z } from 'zod';
import { describeIssues } from './issues.js';

export const CORE_ROLLOUT_CONFIGMAP = 'konfidence-core-rollout';

/** A build id as Temporal Worker Versioning and KONFIDENCE_BUILD_ID accept it. */
export const buildIdSchema = z
  .string()
  .regex(/^[A-Za-z0-9._-]{1,64}$/, 'a build id: letters, digits, ".", "_" or "-", at most 64');

/** The ConfigMap's data: plain keys, so that `kubectl get configmap -o yaml` reads like the config. */
export const coreRolloutData = z.object({
  /** Worker Deployment of the core worker: konfidence-core plus the queue suffix. */
  deploymentName: z.string().min(1).max(255),
  /** The build on canary; absent: no canary, every namespace follows the deployment's routing. */
  canaryBuildId: buildIdSchema.optional(),
  /** Comma-separated namespaces whose new activations start pinned to canaryBuildId. */
  canaryNamespaces: z.string().default(''),
});
export type CoreRolloutData = z.infer<typeof coreRolloutData>;

export interface CoreRollout {
  deploymentName: string;
  canary?: { buildId: string; namespaces: string[] };
}

/** The ConfigMap's data as a CoreRollout; an invalid one is an error naming the ConfigMap. */
export function parseCoreRollout(data: Record<string, string> | undefined): CoreRollout {
  const parsed = coreRolloutData.safeParse(data ?? {});
  if (!parsed.success) {
    throw new Error(`ConfigMap ${CORE_ROLLOUT_CONFIGMAP} is invalid: ${describeIssues(parsed.error)}`);
  }
  const namespaces = parsed.data.canaryNamespaces
    .split(',')
    .map((n) => n.trim())
    .filter(Boolean);
  return {
    deploymentName: parsed.data.deploymentName,
    ...(parsed.data.canaryBuildId && namespaces.length
      ? { canary: { buildId: parsed.data.canaryBuildId, namespaces } }
      : {}),
  };
}

export function coreRolloutConfigMapData(r: CoreRollout): Record<string, string> {
  return {
    deploymentName: r.deploymentName,
    ...(r.canary ? { canaryBuildId: r.canary.buildId, canaryNamespaces: r.canary.namespaces.join(',') } : {}),
  };
}
