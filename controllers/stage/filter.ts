/**
 * Which watch events cost the Stage controller a pass: a change in what a pass reads of an object
 * (relevantState: not the status writes that change nothing else, the controller's own, an
 * activation's progress, a gateway's on a route), in its namespace and, for a route, in every
 * namespace whose Stages read it. A route's change comes a moment later (ROUTE_PASS_DELAY_MS): an
 * activation's route writes, a step apart, are decided on once with its switch.
 */
import type { CustomObject } from '../../k8s/custom-objects.js';
import { isRoute, relevantState, routeKeyOf } from './cache.js';
import type { RouteReaders } from './route-readers.js';

/**
 * How long after a route's change its namespace's pass starts, unless another change brings it
 * sooner: an activation's route writes, a step apart, are decided and written once with its switch
 * (whose usage and marks start the pass sooner), not once each. Counted from the first route
 * change, so routes that keep changing still get a pass this often.
 */
export const ROUTE_PASS_DELAY_MS = 200;

/**
 * How long after any other change its namespace's pass starts: a switch writes the target's
 * serving mark, the active usage, the previous version's drain and the activation usage's
 * release within milliseconds of one another, and one pass decides on them all (one write of the
 * Stage's status, not one per mark).
 */
export const PASS_DELAY_MS = 50;

/** The passes an event asks for: its namespaces, and in how long. */
export interface PassRequest {
  namespaces: string[];
  delayMs: number;
}

export class StageEventFilter {
  /** What a pass reads of each object (relevantState), by kind/uid: a change costs a pass, nothing else does. */
  private readonly seen = new Map<string, { namespace: string; state: string }>();

  constructor(private readonly routeReaders: RouteReaders) {}

  /** The passes an event asks for; undefined when nothing a pass reads changed. */
  passesFor(type: string, object: CustomObject): PassRequest | undefined {
    const key = `${object.kind}/${object.metadata.uid}`;
    const state = relevantState(object);
    const namespace = object.metadata.namespace!;
    if (type === 'DELETED') this.seen.delete(key);
    else if (this.seen.get(key)?.state === state) return undefined;
    else this.seen.set(key, { namespace, state });
    if (!isRoute(object)) return { namespaces: [namespace], delayMs: PASS_DELAY_MS };
    return { namespaces: [namespace, ...this.routeReaders.of(routeKeyOf(object))], delayMs: ROUTE_PASS_DELAY_MS };
  }

  /** A namespace left: what was seen there goes. */
  forget(namespace: string): void {
    for (const [key, seen] of this.seen) if (seen.namespace === namespace) this.seen.delete(key);
  }
}
