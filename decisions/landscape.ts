/**
 * Where a Stage's routes live (docs/landscapes.md): the control plane's own cluster, or the
 * Landscape its spec names, which the platform team allows per namespace. Pure: the core asks it
 * once per activation, under the Lease, with the Landscapes of the system namespace.
 */

/** A Landscape as the decision reads it. */
export interface LandscapeAllowance {
  name: string;
  allowedNamespaces: readonly string[];
}

/** The landscape the Stage's tasks go to (undefined: the control plane's own cluster), or why none may. */
export type Placement = { landscape?: string } | { refused: string };

export function placementOf(
  stage: { namespace: string; name: string; landscape?: string | undefined },
  landscapes: readonly LandscapeAllowance[],
  systemNamespace: string,
  /**
   * A close-out puts back what a run changed there: allowed once, a change is always put back,
   * also when the Landscape was deleted or stopped allowing the namespace since.
   */
  puttingBack = false,
): Placement {
  if (stage.landscape === undefined) return {};
  if (puttingBack) return { landscape: stage.landscape };
  const where = `Stage ${stage.namespace}/${stage.name} names Landscape ${stage.landscape}`;
  const landscape = landscapes.find((l) => l.name === stage.landscape);
  if (!landscape)
    return {
      refused: `${where}, which does not exist in ${systemNamespace}; the platform team creates it (docs/landscapes.md), or the Stage leaves spec.landscape out to route in the control plane's own cluster`,
    };
  const allowed = landscape.allowedNamespaces;
  if (!allowed.includes('*') && !allowed.includes(stage.namespace))
    return {
      refused: `${where}, which does not allow namespace ${stage.namespace}; the platform team adds "${stage.namespace}" to its spec.allowedNamespaces`,
    };
  return { landscape: landscape.name };
}

/** A landscape's task queue of one executor type, as the pollers metric names it. */
export interface LandscapeQueue {
  landscape: string;
  type: string;
}

/** Every task queue a Landscape's workers should poll: each Landscape × each Worker registration's type. */
export function landscapeQueues(
  landscapes: readonly { name: string }[],
  registrations: readonly { executor: string; type: string }[],
): LandscapeQueue[] {
  const types = [...new Set(registrations.filter((r) => r.executor === 'Worker').map((r) => r.type))].sort();
  return landscapes.flatMap((landscape) => types.map((type) => ({ landscape: landscape.name, type })));
}

/** How long after its last poll a worker still counts as polling (Temporal keeps pollers for minutes). */
export const POLLED_WITHIN_MS = 60_000;

/** The pollers that polled within POLLED_WITHIN_MS of `now`, by their last poll (epoch ms). */
export const recentPollers = (lastPolls: readonly number[], now: number) =>
  lastPolls.filter((at) => now - at <= POLLED_WITHIN_MS).length;

/**
 * A revert's message when its Apply recorded nothing, so changed no route: said by the executor
 * of the control plane's cluster and by the core for a landscape's worker alike.
 */
export const nothingRecordedMessage = (revertOf: string) =>
  `nothing to restore: ActivationExecution ${revertOf} recorded nothing, so it changed no route`;
