/**
 * A namespace's pass, the only path that starts a workflow: it observes the namespace's cached
 * activations (observe.ts snapshot, and a burst's Stages and StageVersions), decides
 * (decide-pass.ts) and carries the decision out: the lock's expectations and a burst's skips in
 * the background, then the starts, then the holds of the Stage limit. Every write is fenced right
 * before it is sent; a failure is said and left to the next pass.
 */
import { expectStageLock } from '../../stage-lock/activities.js';
import { BURST_QUIET_MS, BURST_SETTLE_MS, supersededMessage, type Superseder } from '../../decisions/supersede.js';
import { holdActivation, skipBeforeStart } from '../../k8s/activation-store.js';
import { apiMessage } from '../../k8s/client.js';
import type { CustomObject } from '../../k8s/custom-objects.js';
import { NotLeaderError } from '../../k8s/leader-election.js';
import { activationWorkflowId } from '../../shared/activation.js';
import { refOf, workflowIdOf, type CachedActivation } from '../../shared/cached-activation.js';
import { forEachLimited } from '../../shared/pool.js';
import type { LogFn } from '../../telemetry/log.js';
import type { ActivationActions } from './act.js';
import { decidePass, type PassDecision, type PassSnapshot } from './decide-pass.js';
import { latestRun, readSupersession, snapshot } from './observe.js';
import type { ActivationControllerOptions } from './options.js';
import type { PassStates } from './pass-states.js';

/** How many of a burst's superseded activations are ended Skipped at a time. */
const SKIPS_AT_ONCE = 4;

export interface NamespacePassParts {
  actions: ActivationActions;
  passStates: PassStates;
  activations: () => Iterable<CachedActivation>;
  schedulePass: (namespace: string, delayMs?: number) => void;
  settings: Pick<ActivationControllerOptions, 'stagesPerNamespace' | 'burstSettleMs' | 'burstQuietMs'>;
  log: LogFn;
}

export class NamespacePass {
  private readonly actions: ActivationActions;

  constructor(private readonly parts: NamespacePassParts) {
    this.actions = parts.actions;
  }

  /** One pass over a namespace: observe, decide, act. */
  async run(namespace: string): Promise<void> {
    const { settings, passStates } = this.parts;
    let observed: PassSnapshot = snapshot(this.parts.activations(), namespace, performance.now(), {
      ...(settings.stagesPerNamespace ? { limit: settings.stagesPerNamespace } : {}),
      settleMs: settings.burstSettleMs ?? BURST_SETTLE_MS,
      quietMs: settings.burstQuietMs ?? BURST_QUIET_MS,
    });
    let decision = decidePass(observed, passStates.of(namespace), performance.now());
    if (decision.read.length > 0) {
      // A burst: its Stages and StageVersions tell the losers. Unreadable, everything starts and the lock supersedes.
      const supersession = await readSupersession(this.actions.options.deps.objects, namespace, decision.read).catch(
        (err: unknown) => {
          const message = `superseding a burst in ${namespace}: ${apiMessage(err)}; starting every activation`;
          this.parts.log(message, { level: 'warn', namespace });
          return 'unreadable' as const;
        },
      );
      observed = { ...observed, supersession };
      decision = decidePass(observed, passStates.of(namespace), performance.now());
    }
    passStates.apply(namespace, decision.nextState);
    if (decision.wakeAt !== undefined) {
      this.parts.schedulePass(namespace, Math.max(decision.wakeAt - performance.now(), 0) + 1);
    }
    await this.carryOut(namespace, decision);
  }

  /** Carries out a pass's decision: expectations and skips in the background, then the starts, then the holds. */
  private async carryOut(namespace: string, decision: PassDecision): Promise<void> {
    const attempt = (activation: CachedActivation, what: string, work: () => Promise<unknown>) =>
      Promise.resolve()
        .then(work)
        .catch(
          (err: unknown) =>
            err instanceof NotLeaderError ||
            this.actions.options.log(
              `VectorActivation ${namespace}/${activation.metadata!.name}: ${what}: ${apiMessage(err)}`,
              { level: 'warn', ...this.actions.about(activation) },
            ),
        );
    for (const superseder of decision.expectations)
      void this.actions.work.run(namespace, () => this.expect(namespace, superseder));
    const start = (activation: CachedActivation) => attempt(activation, 'start', () => this.actions.ensure(activation));
    // A loser that could not be ended starts, and the Stage's lock supersedes it. The pass does not
    // wait for the skips: a burst's newest held for the rest of its burst starts when its time comes.
    if (decision.skips.length > 0)
      void this.actions.work.run(namespace, () =>
        this.skip(namespace, decision.skips).then((unended) => Promise.all(unended.map(start))),
      );
    await Promise.all(decision.starts.map(start));
    for (const activation of decision.holds) {
      await attempt(activation, 'marking it held', () => {
        this.actions.options.gate.fence(`holding ${namespace}/${activation.metadata!.name}`, namespace);
        return holdActivation(this.actions.options.deps, refOf(activation), decision.heldMessage);
      });
    }
  }

  /**
   * Tells the Stage's lock that a burst's newest is on its way: an older activation started before
   * the burst was seen whole then waits at the lock to be superseded by it, instead of taking the
   * free Stage and running first (bench/burst). Without it (the signal failed) that one runs first.
   */
  private async expect(namespace: string, superseder: Superseder): Promise<void> {
    const activation = `${namespace}/${superseder.name}`;
    try {
      this.actions.options.gate.fence(`expecting ${activation} at its Stage's lock`, namespace);
      await expectStageLock(this.actions.options.client, this.actions.options.taskQueue, namespace, superseder.stage, {
        requester: activationWorkflowId({ namespace, name: superseder.name, uid: superseder.uid }),
        revision: superseder.revision,
        activation,
      });
    } catch (err) {
      if (err instanceof NotLeaderError) this.actions.options.passStates.unexpect(namespace, superseder.uid);
      else
        this.actions.options.log(
          `telling the lock of ${namespace}/${superseder.stage} to expect ${superseder.name}: ${apiMessage(err)}`,
          { level: 'warn', namespace, activation: superseder.name, stage: superseder.stage },
        );
    }
  }

  /** Ends a burst's losers Skipped, a few at a time; returns those it did not end (they start). */
  private async skip(namespace: string, skips: PassDecision['skips']): Promise<CachedActivation[]> {
    const unended: CachedActivation[] = [];
    // A few at a time: all of a burst's skips at once (a read, a status write and an Event each)
    // would queue the Stage's running activation behind them at the apiserver (bench/burst).
    await forEachLimited(skips, SKIPS_AT_ONCE, async ({ activation: cachedActivation, by }) => {
      const ref = refOf(cachedActivation);
      try {
        // A previous leader may have started it, and its workflow not written a status yet.
        if ((await latestRun(this.actions.options.client, workflowIdOf(cachedActivation))) === undefined) {
          this.actions.options.gate.fence(`superseding ${namespace}/${ref.name}`, namespace);
          // Ended: it stays among those being skipped until the watch brings the write back (a
          // stale event may come first), so that no pass starts it meanwhile.
          if (
            await skipBeforeStart(
              this.actions.options.deps,
              ref,
              supersededMessage(namespace, by),
              cachedActivation as CustomObject,
            )
          )
            return;
        }
      } catch (err) {
        if (!(err instanceof NotLeaderError))
          this.actions.options.log(`superseding ${namespace}/${ref.name}: ${apiMessage(err)}; starting it`, {
            level: 'warn',
            ...this.actions.about(cachedActivation),
          });
      }
      this.actions.options.passStates.skipping(namespace, ref.uid, false);
      unended.push(cachedActivation);
    });
    return unended;
  }
}
