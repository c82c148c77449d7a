/**
 * One attempt, reading like ADR-0012's sequence: acquire the Stage → take it (the Lease, and its
 * state read after the grant) → the order verdict → the plan's steps, or its progression → the
 * switch → the ending. Every decision is a pure function of decisions/; this class observes, asks
 * and acts, and holds what only this attempt knows (the Stage's uid, its progression).
 */
import { isCancellation, patched } from '@temporalio/workflow';
import type { ResolvedPlan } from '../../activities/core.js';
import {
  initialProgress,
  lastRanStep,
  orderVerdict,
  stageReadDue,
  stepsToRun,
  stoppedEnding,
  type Ending,
} from '../../decisions/activation.js';
import { SUPERSEDED_REASON } from '../../decisions/supersede.js';
import { stageLossOf } from '../failures.js';
import type { Progression } from '../progression/progression.js';
import { bookkeeping } from './bookkeeping-activities.js';
import { BREAKER_ASK_AGAIN_SECONDS, passBreakers } from './breakers.js';
import { progressionOf } from './progression-host.js';
import type { ActivationRun } from './run.js';
import { ranExecutions } from './steps.js';

export class Attempt {
  /** The uid of the Stage this attempt validated: every later read of the Stage must find this one. */
  private stageUid: string | undefined;
  /** When the Stage was last read as ours (workflow time): a later step's check may stand on it. */
  private stageReadAt: number | undefined;
  /** The progression, while one runs. */
  private progression: Progression | undefined;

  constructor(private readonly parts: ActivationRun) {}

  async run(retry: boolean): Promise<Ending> {
    const { va, access, requests, reporter } = this.parts;
    // A progression of an attempt before is no more: answers wait for this attempt's own.
    reporter.showProgression(undefined);
    this.parts.steps.startAttempt();
    requests.startAttempt();
    // The check reads while Pending is written; a failed check is written after it, as Failed. A
    // new activation's first write waits for its first news instead: InProgress when the Stage is
    // free, Waiting when it is not, or why it ends.
    const checking = `checking Stage ${va.stage} and StageVersion ${va.stageVersion}`;
    const quiet = !retry && va.status.phase === undefined && patched('first-write-taken');
    const validating = quiet
      ? Promise.resolve(reporter.show('Pending', 'Validating', checking))
      : reporter.report('Pending', 'Validating', checking);
    const describing = bookkeeping.describeStage(this.parts.ref.namespace, va.stage, va.stageVersion);
    const [written, described] = await Promise.allSettled([validating, describing]);
    if (written.status === 'rejected') throw written.reason;
    if (described.status === 'rejected') return this.parts.fail(described.reason);
    const before = described.value;
    this.stageUid = before.stageUid;
    requests.knowStage(before.stageUid);
    const lock = await access.acquire(
      before.target.revision,
      () => requests.cancelled,
      () => reporter.report('Waiting', 'WaitingForStage', `waiting for Stage ${va.stage} (lock ${access.lockId})`),
    );
    if (lock === 'superseded') {
      const message = `superseded while waiting by the newer activation ${access.supersededBy}`;
      return this.parts.finish({ phase: 'Skipped', reason: SUPERSEDED_REASON, message });
    }
    if (lock === 'cancelled') return this.parts.finish(this.stopped(`while waiting for Stage ${va.stage}`));
    try {
      return await this.withStage(retry, before.stageUid);
    } catch (err) {
      // Bookkeeping that failed for good (a refused write, retries exhausted): say so and let go.
      if (isCancellation(err)) throw err;
      return this.parts.fail(err);
    } finally {
      await this.parts.letGo();
    }
  }

  private async withStage(retry: boolean, stageUid: string): Promise<Ending> {
    const { va, requests, reporter, holdings, progress, steps } = this.parts;
    const finish = (ending: Ending) => this.parts.finish(ending);
    // ADR-0012 steps 2–3: the Lease, then the Stage's state read now, after the grant; never what
    // was read while waiting (a newer version may have become active meanwhile).
    let taken;
    try {
      const read = {
        stageVersion: va.stageVersion,
        ...(va.executionPlan ? { executionPlan: va.executionPlan } : {}),
        ...(va.created ? { created: va.created } : {}),
      };
      taken = await this.parts.access.takeStage(stageUid, read, (message) =>
        reporter.report('Waiting', 'WaitingForLease', message),
      );
    } catch (err) {
      // Validated before the wait, the Stage is gone now (read here, or told while the Lease was
      // waited for): the activation stops, as when the watcher says so.
      if (!patched('stage-checks')) return this.parts.fail(err);
      const lost = stageLossOf(err);
      // The Lease waited for in vain (a foreign holder, or a Lease its Stage took along) may be the
      // Stage's loss too: a signal cannot reach the run inside that wait, so the Stage is read.
      if (lost) requests.stageGone(lost);
      else await this.stageStillOurs();
      if (requests.stageLost === undefined) return this.parts.fail(err);
      return finish(this.stopped('before its first step'));
    }
    this.stageReadAt = Date.now();
    const { plan, stage, activeName, guarded } = taken;
    holdings.noteActive(activeName);
    // A retry starts from the truth: "previous" is what is active now, and every step runs again
    // (one whose routes hold its assignment already changes nothing).
    const verdict = orderVerdict({
      stage: va.stage,
      target: stage.target,
      activeName,
      stageVersions: stage.stageVersions,
      retry,
    });
    if (!verdict.run) return finish(verdict);
    reporter.notePrevious(verdict.previous);
    const toRun = stepsToRun(plan, progress.steps);
    if ('error' in toRun) return finish({ phase: 'Failed', reason: 'PlanChanged', message: toRun.error });
    /** What ran in earlier attempts, before this one starts its steps anew: a retried task may keep their record. */
    const earlier = ranExecutions(progress.steps);
    if (progress.steps.length === 0) progress.steps = initialProgress(plan);

    // CircuitBreakers (docs/scale.md): the first routing change of this attempt waits while one is
    // Open or out of tokens, holding the Stage; later steps ask again only under a rate limit.
    let limited = false;
    if (toRun.run.length > 0 && guarded) {
      const gate = await this.passBreakers(toRun.run[0]!, true);
      // A breaker may have held it for long: the Stage is read again before the first route write.
      if (!gate.admitted || !(await this.stageStillOurs()))
        return finish(this.stopped('while waiting at a CircuitBreaker'));
      limited = gate.limited;
    }

    // A cancel (or the Stage's loss) heard while the Stage was taken: nothing is held or marked for it.
    if (requests.cancelled && patched('stage-checks')) return finish(this.stopped('before its first step'));
    if (plan.progression) {
      this.progression = progressionOf(this.parts, this.attemptHooks(), plan, stage, limited);
      reporter.showProgression(this.progression);
    }
    const first = toRun.run[0];
    const started = first !== undefined && (await this.startRun(plan, first, stage.target.name));
    if (started === 'terminating') {
      return finish({
        phase: 'Failed',
        reason: 'StageVersionTerminating',
        message: `StageVersion ${stage.target.name} is being deleted`,
      });
    }
    if (typeof started === 'object')
      return finish({ phase: 'Failed', reason: 'NameTaken', message: `${started.refused}; no route was changed` });
    if (started === 'gone') {
      requests.deleted();
      const message = 'the VectorActivation was deleted before its first step; no route was changed';
      return finish({ phase: 'Cancelled', reason: 'Cancelled', message });
    }

    const ctx = this.parts.taskContext(stage, Object.keys(earlier).length ? { earlier } : {});
    if (this.progression) {
      const outcome = await this.progression.run();
      if (outcome !== 'switch') return finish(outcome);
    } else {
      for (const [n, i] of toRun.run.entries()) {
        // Cancelled between steps, or the Stage gone: what ran is reverted as after a cancelled step.
        if (limited && n > 0 && !(await this.passBreakers(i, false)).admitted)
          return finish(await steps.failure(plan, ctx, i));
        if (n > 0 && !(await this.stageStillOurs({ unlessJustRead: true }))) {
          return finish(await steps.failure(plan, ctx, i, { where: `before step ${plan.steps[i]!.name}` }));
        }
        if (await steps.runStep(plan, ctx, i, n === 0, n < toRun.run.length - 1))
          return finish(await steps.failure(plan, ctx, i));
      }
    }
    const { previous } = reporter;
    const switched = await holdings.switchServing(plan, stage, previous);
    if (switched.stageLost) {
      requests.stageGone(switched.stageLost);
      const last = Math.max(lastRanStep(progress.steps), 0);
      return finish(await steps.failure(plan, ctx, last, { where: 'before the switch' }));
    }
    const was = previous ? ` (was ${previous.name})` : '';
    return finish({
      phase: 'Succeeded',
      reason: 'Activated',
      message: `Stage ${va.stage} now serves ${stage.target.name}${was}`,
    });
  }

  private startRun(plan: ResolvedPlan, first: number, target: string) {
    const { holdings, progress, reporter } = this.parts;
    return holdings.startRun(plan, first, target, progress, reporter, reporter.stepMessage(plan, first));
  }

  /** What the progression asks of this attempt beside the run's parts. */
  private attemptHooks() {
    return {
      passBreakers: (step: number) => this.passBreakers(step, false),
      stageStillOurs: () => this.stageStillOurs(),
      stageUid: this.stageUid!,
    };
  }

  private passBreakers(step: number, first: boolean) {
    const { ref, progress, reporter, requests, options } = this.parts;
    const wait = Math.min(BREAKER_ASK_AGAIN_SECONDS, options.lockAskAgainSeconds ?? BREAKER_ASK_AGAIN_SECONDS);
    const phase = first ? 'Waiting' : 'InProgress';
    const onWait = (told: { reason: string; message: string }) => reporter.report(phase, told.reason, told.message);
    return passBreakers(ref, progress.attempt, step, first, onWait, () => requests.cancelled, wait);
  }

  /**
   * Whether the Stage this attempt validated is still there, read now (before a route write, or
   * when a gate or an analysis wakes the run); gone or being deleted, the run is stopped as by a
   * cancel and ends StageDeleted. The watcher usually says so sooner (stageDeletedSignal).
   */
  private async stageStillOurs(o: { unlessJustRead?: boolean } = {}): Promise<boolean> {
    const { ref, va, requests } = this.parts;
    if (requests.stageLost === undefined && this.stageUid !== undefined && patched('stage-checks')) {
      const standing = o.unlessJustRead && !stageReadDue(this.stageReadAt, Date.now()) && patched('stage-read-stands');
      if (!standing) {
        const lost = await bookkeeping.checkStage(ref.namespace, va.stage, this.stageUid);
        this.stageReadAt = Date.now();
        if (lost) requests.stageGone(lost.message);
      }
    }
    return requests.stageLost === undefined;
  }

  /** How the attempt ends when it stops `where` before a step ran: cancelled, or its Stage gone. */
  private stopped(where: string): Ending {
    return stoppedEnding(where, this.parts.requests.stopCause() ?? {});
  }
}
