/**
 * The one client of a Stage's lock an activation uses: ask the Stage's lock workflow for the
 * Stage and wait for the grant (or to be superseded, or cancelled), take the Stage's Lease and keep
 * it renewed, and give everything back. All lock state of an activation lives here.
 */
import {
  ApplicationFailure,
  CancellationScope,
  condition,
  getExternalWorkflowHandle,
  isCancellation,
  proxyActivities,
  proxyLocalActivities,
  setHandler,
  sleep,
  workflowInfo,
} from '@temporalio/workflow';
import type { ActivationActivities, TakenStage } from '../activities/core.js';
import type { TakeStageInput } from '../activities/take-stage.js';
import { causeOf } from '../workflows/failures.js';
import {
  KEEP_STAGE_LEASE,
  LEASE_WAIT_SECONDS,
  RELEASE_STAGE_LEASE,
  RENEW_STAGE_LEASE,
  stageLockCall,
  TAKE_STAGE_ONCE,
  takeStageWaiting as takeStageWaitingPolicy,
} from '../workflows/policies.js';
import type { LockActivities } from './activities.js';
import {
  lockGrantedSignal,
  lockNewerWaitingSignal,
  lockSupersededSignal,
  releaseLockSignal,
  stageLockWorkflowId,
  STAGE_LEASE_HELD,
  type LockAnswer,
} from './contract.js';

/**
 * Asking the lock is one Update-with-start that the lock answers at once: a local activity, inside
 * the workflow task, instead of a round trip through a task queue on every activation's path.
 */
const { askStageLock } = proxyLocalActivities<LockActivities>(stageLockCall("ask the Stage's lock"));
/** Giving the lock back, a local activity for the same reason; it tells the next holder too. */
const { releaseStageLock } = proxyLocalActivities<LockActivities>(stageLockCall("give the Stage's lock back"));

/** Taking and clearing the Lease are bookkeeping on the handoff's path: local activities (workflows/policies.ts). */
const takeStageWaiting = (seconds: number) =>
  proxyLocalActivities<ActivationActivities>(takeStageWaitingPolicy(seconds)).takeStage;
const { takeStage: takeStageOnce } = proxyLocalActivities<ActivationActivities>(TAKE_STAGE_ONCE);
const { renewStageLease } = proxyLocalActivities<ActivationActivities>(RENEW_STAGE_LEASE);
const { releaseStageLease } = proxyLocalActivities<ActivationActivities>(RELEASE_STAGE_LEASE);

/**
 * One long activity renews the Lease: history stays O(1) however long the activation runs. It starts
 * only when the activation is still running at the first renewal: most activations end sooner, and
 * then nothing runs beside them.
 */
const { keepStageLease } = proxyActivities<ActivationActivities>(KEEP_STAGE_LEASE);

/** When the first renewal is due: well inside the Lease's duration (60 s, activities/lease.ts). */
const FIRST_RENEWAL = '20 seconds';

/**
 * How often a waiting activation asks its lock again. Asking is idempotent; it matters when the lock
 * workflow is gone (terminated by someone): the next ask starts a new one that queues us again.
 */
const ASK_AGAIN_SECONDS = 120;

export type LockOutcome = 'granted' | 'superseded' | 'cancelled';
/** 'givenBack': released with the final status (finishLockRelease), until the next attempt asks again. */
type LockState = 'none' | 'waiting' | 'granted' | 'superseded' | 'givenBack';

export class StageAccess {
  readonly lockId: string;
  private state: LockState = 'none';
  supersededBy = '';
  private keeping?: CancellationScope;
  private leaseHeld = false;
  /** A request for a newer StageVersion waits for the Stage (the lock said so while we hold it). */
  newerWaiting: { by: string; revision: number } | undefined;

  constructor(
    private readonly namespace: string,
    private readonly stage: string,
    /** namespace/name of the activation: the Lease holder and the lock's label for people. */
    readonly holder: string,
    private readonly askAgainSeconds = ASK_AGAIN_SECONDS,
    private readonly leaseWaitSeconds = LEASE_WAIT_SECONDS,
  ) {
    this.lockId = stageLockWorkflowId(namespace, stage);
    setHandler(lockGrantedSignal, () => {
      if (this.state === 'waiting') this.state = 'granted';
    });
    setHandler(lockNewerWaitingSignal, (newer) => {
      if (this.state === 'granted') this.newerWaiting = newer;
    });
    setHandler(lockSupersededSignal, ({ by, revision }) => {
      if (this.state !== 'waiting') return;
      this.state = 'superseded';
      this.supersededBy = `${by} (revision ${revision})`;
    });
  }

  /** The lock's answer to an Update, taken as its signals would be. */
  private heard(answer: LockAnswer): void {
    if (this.state !== 'waiting') return;
    if (answer.outcome === 'granted') this.state = 'granted';
    else if (answer.outcome === 'superseded') {
      this.state = 'superseded';
      this.supersededBy = `${answer.by} (revision ${answer.revision})`;
    }
  }

  /** Queues at the lock and waits for its answer, asking again now and then, until `stop()` is true. */
  async acquire(revision: number, stop: () => boolean, onQueued: () => Promise<void>): Promise<LockOutcome> {
    this.state = 'waiting';
    // What the lock said while an attempt before held the Stage is no news to this one.
    this.newerWaiting = undefined;
    const request = { requester: workflowInfo().workflowId, revision, activation: this.holder };
    const ask = async () => this.heard(await askStageLock(this.namespace, this.stage, request));
    await ask();
    // Granted (or superseded) in the answer: nothing was waited for, so nothing says Waiting.
    if (this.state === 'waiting') await onQueued();
    while (!(await condition(() => this.state !== 'waiting' || stop(), `${this.askAgainSeconds} seconds`))) {
      await ask();
    }
    // Signal handlers changed the state meanwhile; TypeScript cannot know.
    const state = this.state as LockState;
    // A cancel that came while the answer was on its way wins over a grant: nothing ran yet.
    if (state === 'granted' && !stop()) return 'granted';
    if (state === 'superseded') return 'superseded';
    await this.releaseLock();
    return 'cancelled';
  }

  /**
   * Takes the Lease (after the grant) and reads the Stage under it, in one local activity; then
   * renews the Lease in the background until `release()`.
   */
  async takeStage(
    stageUid: string,
    read: Pick<TakeStageInput, 'stageVersion' | 'executionPlan' | 'created' | 'puttingBack'>,
    onLeaseHeld: (message: string) => Promise<void>,
  ): Promise<TakenStage> {
    // The activity may fail after the Lease was taken: release() then clears it (only if ours).
    this.leaseHeld = true;
    const input = { namespace: this.namespace, stage: this.stage, stageUid, holder: this.holder, ...read };
    let taken: TakenStage;
    try {
      taken = await takeStageOnce(input);
    } catch (err) {
      if (isCancellation(err)) throw err;
      const cause = causeOf(err);
      if (cause instanceof ApplicationFailure && cause.nonRetryable) throw err;
      // Held by another holder (a second installation, a stale activation): say so, then wait
      // within the bounded retries. Anything else is retried the same way, without a word.
      if (cause instanceof ApplicationFailure && cause.type === STAGE_LEASE_HELD) await onLeaseHeld(cause.message);
      taken = await takeStageWaiting(this.leaseWaitSeconds)(input);
    }
    this.keepLease();
    return taken;
  }

  private keepLease(): void {
    this.keeping = new CancellationScope();
    void this.keeping
      .run(async () => {
        await sleep(FIRST_RENEWAL);
        return keepStageLease(this.namespace, this.stage, this.holder);
      })
      .catch((err: unknown) => {
        if (!isCancellation(err)) throw err;
      })
      .catch(() => undefined); // renewal problems are reported by the activity itself (log, Event)
  }

  /**
   * Over a long gate the Lease is taken once for the gate's length (no renewal runs while nothing
   * happens: a thousand activations waiting at gates cost nothing); `undefined` goes back to
   * renewing it as usual.
   */
  async holdLease(seconds: number | undefined): Promise<void> {
    if (!this.leaseHeld) return;
    if (seconds === undefined) {
      if (!this.keeping) this.keepLease();
      return;
    }
    this.stopKeeping();
    await renewStageLease(this.namespace, this.stage, this.holder, seconds);
  }

  private stopKeeping(): void {
    this.keeping?.cancel();
    this.keeping = undefined;
  }

  /**
   * Stops renewing; whether the Lease is still to be cleared, which the caller does (finishRun),
   * before the final status, as releaseLease does.
   */
  handOverLease(): boolean {
    this.stopKeeping();
    const held = this.leaseHeld;
    this.leaseHeld = false;
    return held;
  }

  /**
   * Stops renewing and clears the Lease if ours. Done before the final status is written, so that
   * whoever reads the final phase finds the Lease free; the lock is left after it (release()), so
   * that the next activation cannot be InProgress while this one still says it is.
   */
  async releaseLease(): Promise<void> {
    if (!this.handOverLease()) return;
    await CancellationScope.nonCancellable(() => releaseStageLease(this.namespace, this.stage, this.holder));
  }

  /**
   * The lock to give back with the final status (finishAndLetGo), when this attempt holds it: the
   * activity makes releaseLock's Update; its signal, if needed, comes from finishLockRelease.
   */
  lockToGiveBack(): { requester: string } | undefined {
    return this.state === 'granted' ? { requester: workflowInfo().workflowId } : undefined;
  }

  /**
   * Finishes the release finishAndLetGo began: nothing more when the lock answered; a release by
   * signal now when it did not answer in time, as releaseLock sends. Either way release() has
   * nothing more to give back.
   */
  async finishLockRelease(outcome: 'givenBack' | 'unanswered'): Promise<void> {
    this.state = 'givenBack';
    if (outcome === 'unanswered') await this.releaseBySignal();
  }

  /** Gives the Stage back: the Lease (if still held), then the lock (unless given back already). */
  async release(): Promise<void> {
    await this.releaseLease();
    if (this.state === 'givenBack') return;
    await CancellationScope.nonCancellable(() => this.releaseLock());
  }

  private async releaseLock(): Promise<void> {
    this.state = 'none';
    // Released by Update from a local activity, the next holder hears of it straight from us, not
    // through two signals sent by workflows; a release the activity could not make goes by signal,
    // which the server delivers whenever the lock runs again.
    await releaseStageLock(this.namespace, this.stage, workflowInfo().workflowId).catch(() => this.releaseBySignal());
  }

  private releaseBySignal(): Promise<void> {
    return getExternalWorkflowHandle(this.lockId)
      .signal(releaseLockSignal, { requester: workflowInfo().workflowId })
      .catch(() => undefined); // no lock workflow: nothing is held
  }
}
