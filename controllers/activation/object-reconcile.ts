/**
 * What an event of one VectorActivation asks for (decide-object.ts decideObject): its namespace's
 * pass, and the requests of its annotations carried out (requests.ts), each once while it is in
 * flight. Safe to run any number of times for the same object.
 */
import { apiMessage } from '../../k8s/client.js';
import { NotLeaderError } from '../../k8s/leader-election.js';
import type { CachedActivation } from '../../shared/cached-activation.js';
import type { LogFn } from '../../telemetry/log.js';
import type { NamespacedInformers } from '../informers.js';
import type { ActivationActions } from './act.js';
import { decideObject } from './decide-object.js';
import type { PassStates } from './pass-states.js';
import { carryOut } from './requests.js';

export interface ObjectReconcileParts {
  actions: ActivationActions;
  passStates: PassStates;
  informers: Pick<NamespacedInformers, 'acting'>;
  schedulePass: (namespace: string) => void;
  log: LogFn;
}

export class ObjectReconciler {
  /** Requests being carried out (decide-object.ts RequestStep keys): a repeated event does not repeat one. */
  private readonly inFlight = new Set<string>();

  constructor(private readonly parts: ObjectReconcileParts) {}

  async reconcile(activation: CachedActivation): Promise<void> {
    const { actions, passStates, log } = this.parts;
    const ns = activation.metadata!.namespace!;
    if (!this.parts.informers.acting(ns)) return; // a standby only keeps its cache; it decides again when it takes over
    return actions.work.run(ns, async () => {
      const decision = decideObject(activation, passStates.of(ns).running);
      if (decision.pass) this.parts.schedulePass(ns);
      for (const step of decision.requests) {
        if (this.inFlight.has(step.key)) continue;
        this.inFlight.add(step.key);
        try {
          await carryOut(actions, activation, step);
        } catch (err) {
          // Deposed between the decision and a write: the new leader decides again.
          if (!(err instanceof NotLeaderError)) {
            const message = `VectorActivation ${ns}/${activation.metadata!.name}: ${apiMessage(err)}`;
            log(message, { level: 'warn', ...actions.about(activation) });
          }
        } finally {
          this.inFlight.delete(step.key);
        }
      }
    });
  }
}
