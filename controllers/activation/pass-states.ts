/**
 * What the activation controller remembers between passes, per namespace (decide-pass.ts NamespacePassState):
 * the pass replaces the part it decides (apply), and the acts and the watch record what they find
 * (a workflow known to run, a skip that did not land, an arrival). Nothing here is the truth: a new
 * leader starts with none of it and decides from the statuses (takeover).
 */
import type { BurstWait } from '../../decisions/supersede.js';
import { emptyPassState, type NamespacePassState, type NextPassState } from './decide-pass.js';

interface Mutable {
  running: Set<string>;
  settling: Map<string, BurstWait>;
  lastArrival: Map<string, number>;
  skipping: Set<string>;
  expectSent: Set<string>;
}

export class PassStates {
  private readonly byNamespace = new Map<string, Mutable>();

  /** What is remembered of a namespace (live: read it where the pass decides). */
  of(namespace: string): NamespacePassState {
    return this.mutable(namespace);
  }

  private mutable(namespace: string): Mutable {
    let state = this.byNamespace.get(namespace);
    if (!state) this.byNamespace.set(namespace, (state = emptyPassState() as Mutable));
    return state;
  }

  /** A pass's decisions; applied in the same tick as the decision that made them. */
  apply(namespace: string, next: NextPassState): void {
    Object.assign(this.mutable(namespace), next);
  }

  arrived(namespace: string, stage: string, at: number): void {
    this.mutable(namespace).lastArrival.set(stage, at);
  }

  running(namespace: string, workflowId: string, runs: boolean): void {
    if (runs) this.mutable(namespace).running.add(workflowId);
    else this.byNamespace.get(namespace)?.running.delete(workflowId);
  }

  /** An ending before the start is on its way (skipping) or did not land (not). */
  skipping(namespace: string, uid: string, skipping: boolean): void {
    if (skipping) this.mutable(namespace).skipping.add(uid);
    else this.byNamespace.get(namespace)?.skipping.delete(uid);
  }

  /** An expectation that was never sent (a deposed leader's): the next pass sends it again. */
  unexpect(namespace: string, uid: string): void {
    this.byNamespace.get(namespace)?.expectSent.delete(uid);
  }

  /** An activation deleted: nothing of it is remembered. */
  deleted(namespace: string, uid: string, workflowId: string): void {
    const state = this.byNamespace.get(namespace);
    state?.running.delete(workflowId);
    state?.skipping.delete(uid);
    state?.expectSent.delete(uid);
  }

  /**
   * Leadership taken over: what the previous term knew to run is asked again, and a wait's timer
   * that fired while standby ran no pass (its entry would cut the next burst's wait short).
   * Arrivals stay: a burst may be arriving.
   */
  takeover(): void {
    for (const namespace of this.byNamespace.keys()) this.dropped(namespace);
  }

  /** The namespace dropped: whoever serves it next asks Temporal again (a start finds a running workflow by its id). */
  dropped(namespace: string): void {
    const state = this.byNamespace.get(namespace);
    state?.running.clear();
    state?.settling.clear();
  }

  /** The namespace left (no longer watched): its bursts' waits and arrivals go with its cache. */
  forget(namespace: string): void {
    this.byNamespace.delete(namespace);
  }
}
