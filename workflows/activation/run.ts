/**
 * One activation's run, across its attempts: the run-scoped parts (requests, reporter, holdings,
 * steps, the Stage's access) and how an attempt ends. An attempt reads like ADR-0012's sequence
 * (attempt.ts); a run whose workflow closed before it finished is closed out (close-out.ts).
 */
import { ApplicationFailure, CancellationScope, patched } from '@temporalio/workflow';
import type { LoadedActivation } from '../../activities/core.js';
import type { StageVersionInfo } from '../../api/stage-version.js';
import { releasesUsage, type Ending, type StepProgress } from '../../decisions/activation.js';
import { countsOnBreakers } from '../../decisions/breaker.js';
import { holderOf, type ActivationProgress, type ActivationRef } from '../../shared/activation.js';
import { StageAccess } from '../../stage-lock/client.js';
import { causeOf, messageOf } from '../failures.js';
import { Attempt } from './attempt.js';
import { bookkeeping } from './bookkeeping-activities.js';
import { closeOut } from './close-out.js';
import { RunHoldings } from './holdings.js';
import type { RunOptions, RunParts } from './parts.js';
import { ActivationReporter } from './reporter.js';
import type { ActivationRequests } from './requests.js';
import { StepRunner } from './steps.js';
import { unrecordedMessage, type TaskContext } from './tasks.js';

export type { RunOptions };

export class ActivationRun implements RunParts {
  readonly holder: string;
  readonly access: StageAccess;
  readonly reporter: ActivationReporter;
  readonly holdings: RunHoldings;
  readonly steps: StepRunner;

  constructor(
    readonly ref: ActivationRef,
    readonly va: LoadedActivation,
    readonly requests: ActivationRequests,
    readonly progress: ActivationProgress & { steps: StepProgress[] },
    readonly options: RunOptions,
  ) {
    this.holder = holderOf(ref);
    const { lockAskAgainSeconds, leaseWaitSeconds } = options;
    this.access = new StageAccess(ref.namespace, va.stage, this.holder, lockAskAgainSeconds, leaseWaitSeconds);
    this.reporter = new ActivationReporter(ref, va, requests, progress, options.uiUrl);
    this.holdings = new RunHoldings(ref, va.stage, this.holder);
    this.steps = new StepRunner(this);
  }

  /** One attempt, from the Stage's lock to a final phase. */
  attempt(retry: boolean): Promise<Ending> {
    return new Attempt(this).run(retry);
  }

  /** The run before closed without finishing: put back what it changed, end Failed saying why. */
  closeOut(why: { reason: string; message: string }): Promise<Ending> {
    return closeOut(this, why);
  }

  /** The workflow itself was cancelled (Temporal UI/CLI) outside a step: end as Cancelled, let the Stage go. */
  async cancelledInTemporal(): Promise<void> {
    await CancellationScope.nonCancellable(async () => {
      await this.finish({
        phase: 'Cancelled',
        reason: 'WorkflowCancelled',
        message: 'the workflow was cancelled in Temporal',
      });
      await this.letGo();
    });
  }

  /** Writes the ending, after every execution is final and the usage, breakers, mark and Lease are settled. */
  async finish(ending: Ending): Promise<Ending> {
    const { ref, va, holder, progress, reporter, holdings, steps } = this;
    await CancellationScope.nonCancellable(async () => {
      // Every execution reaches a final state before the activation does (ADR-0012).
      const unrecorded = await steps.unrecorded();
      if (unrecorded) reporter.noteError(unrecordedMessage(unrecorded));
      // A Failed or Cancelled activation keeps its usage while a step left applied may still send
      // traffic to it.
      if (releasesUsage(ending.phase, progress.steps)) await bookkeeping.releaseActivationUsage(ref);
      // A failed attempt that changed, or tried to change, routing counts on the CircuitBreakers
      // before anyone reads Failed; a breaker that cannot be written must not keep the activation
      // from ending.
      if (countsOnBreakers(ending.phase, steps.changedRouting)) {
        await bookkeeping.recordActivationFailure(ref, progress.attempt).catch(() => undefined);
      }
      // Whoever reads the final phase finds the StageVersion free to change again and the Lease
      // free: one local activity lets both go, then writes it.
      const marked = holdings.takeMark();
      const status = reporter.statusOf(ending.phase, ending.reason, ending.message);
      const { over, settle } = reporter.writing(status);
      const lease = this.access.handOverLease();
      const finishing = {
        ref,
        stage: va.stage,
        holder,
        lease,
        ...(marked ? { marked } : {}),
        status,
        ...(over ? { over } : {}),
      };
      if (patched('finish-lets-go')) {
        // The same local activity then gives the lock back and takes the finalizer away: one
        // workflow round less, and the next activation hears of the Stage at once. What it could
        // not let go, letGo lets go after it.
        const lock = this.access.lockToGiveBack();
        const finalizer = holdings.finalizerHeld;
        const letting = bookkeeping.finishAndLetGo({
          ...finishing,
          ...(lock ? { lock } : {}),
          ...(finalizer ? { finalizer } : {}),
        });
        const outcome = await settle(letting, (result) => result.written);
        if (outcome.lock !== 'toWorkflow') await this.access.finishLockRelease(outcome.lock);
        if (outcome.finalizerRemoved) holdings.noteFinalizerRemoved();
      } else {
        await settle(bookkeeping.finishRun(finishing), (written) => written);
      }
      // The query and the search attribute say the ending once it is written, the Lease free.
      reporter.show(ending.phase, ending.reason, ending.message);
    });
    return ending;
  }

  /** Ends Failed with what failed: its type as the reason, its message kept as the first error. */
  fail(err: unknown): Promise<Ending> {
    const cause = causeOf(err);
    const reason = cause instanceof ApplicationFailure && cause.type ? cause.type : 'Error';
    const message = messageOf(err);
    this.reporter.noteError(message);
    return this.finish({ phase: 'Failed', reason, message });
  }

  /** After the final status: the mark, the Stage's lock and the close-out finalizer go, if its write did not let them go. */
  letGo(): Promise<void> {
    return this.holdings.letGo(this.access);
  }

  /** What every task of this attempt is told: the activation, the Stage's StageVersions, the previous one. */
  taskContext(
    stage: { target: StageVersionInfo; stageVersions: StageVersionInfo[] },
    extra: Pick<TaskContext, 'earlier' | 'unmovedOnly' | 'unmovedAlso' | 'round'>,
  ): TaskContext {
    const { ref, va } = this;
    const { previous } = this.reporter;
    return {
      ref,
      stage: va.stage,
      ...(va.vectorDeployment ? { vectorDeployment: va.vectorDeployment } : {}),
      target: stage.target,
      ...(previous ? { previous } : {}),
      stageVersions: stage.stageVersions,
      attempt: this.progress.attempt,
      ...extra,
      ...(this.options.queueSuffix ? { queueSuffix: this.options.queueSuffix } : {}),
    };
  }
}
