/**
 * The periodic sweep of unfinished activations: an object whose workflow closed without finishing
 * it is closed out (act.ts checkClosed), one whose pass or requests wait are decided again
 * (decide-object.ts sweepStep). Most sweeps look only at the workflows Temporal's visibility says
 * closed since the sweep before; a full one looks at every workflow now and then (fullSweep).
 */
import type { Client } from '@temporalio/client';
import { apiMessage } from '../../k8s/client.js';
import { NotLeaderError } from '../../k8s/leader-election.js';
import type { CachedActivation } from '../../shared/cached-activation.js';
import type { LogFn } from '../../telemetry/log.js';
import type { NamespacedInformers } from '../informers.js';
import type { ActivationActions } from './act.js';
import { fullSweep, sweepStep } from './decide-object.js';
import { closedSince } from './observe.js';
import type { PassStates } from './pass-states.js';

/** The visibility query looks back this much further than the sweep before: its records may lag. */
const CLOSED_LOOKBACK_MS = 60_000;

export interface SweepParts {
  client: Client;
  informers: NamespacedInformers;
  actions: ActivationActions;
  passStates: PassStates;
  activations: () => Iterable<CachedActivation>;
  /** Before the activations: every Stage being deleted is decided again. */
  beforeSweep: () => void;
  reconcile: (activation: CachedActivation) => Promise<void>;
  schedulePass: (namespace: string) => void;
  stopped: () => boolean;
  log: LogFn;
}

export class ClosedRunSweep {
  /** How many sweeps ran, and when the last began. */
  private sweeps = 0;
  private sweeping = false;
  private lastSweep: number | undefined;

  constructor(private readonly parts: SweepParts) {}

  /** One sweep, unless one runs: a sweep that outlasts the interval (thousands of describes) does not start again beside itself. */
  async run(): Promise<void> {
    if (this.sweeping) return;
    this.sweeping = true;
    try {
      await this.sweepOnce();
    } finally {
      this.sweeping = false;
    }
  }

  private async sweepOnce(): Promise<void> {
    const { informers, actions, passStates, log } = this.parts;
    if (informers.gate.acting()) this.parts.beforeSweep();
    const since = this.lastSweep;
    this.lastSweep = Date.now();
    const full = fullSweep(this.sweeps++, since);
    // undefined: every workflow is looked at (a full sweep, or the query failed).
    const closed = full
      ? undefined
      : await closedSince(this.parts.client, since! - CLOSED_LOOKBACK_MS).catch(() => undefined);
    for (const activation of this.parts.activations()) {
      if (this.parts.stopped() || !informers.gate.acting()) return;
      const ns = activation.metadata!.namespace!;
      if (!informers.acting(ns)) continue;
      const step = sweepStep(activation, passStates.of(ns).running, closed);
      if (step === 'reconcile') void this.parts.reconcile(activation);
      if (step === 'pass') this.parts.schedulePass(ns);
      if (step !== 'check') continue;
      const warn = (err: unknown) =>
        err instanceof NotLeaderError ||
        log(`check of ${ns}/${activation.metadata?.name}: ${apiMessage(err)}`, {
          level: 'warn',
          ...actions.about(activation),
        });
      await actions.work.run(ns, () => actions.checkClosed(activation)).catch(warn);
    }
  }
}
