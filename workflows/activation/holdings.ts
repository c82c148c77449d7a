/**
 * What the run holds beside the Stage's lock, from its first step to its end: the mark on the
 * StageVersion in activation (admission refuses changes to it), the activation usage (ADR-0013)
 * and the close-out finalizer, which a deletion of the VectorActivation waits for.
 */
import { CancellationScope } from '@temporalio/workflow';
import type { ResolvedPlan } from '../../activities/core.js';
import type { StageVersionInfo } from '../../api/stage-version.js';
import { startedStep, type StepProgress } from '../../decisions/activation.js';
import { weightOf } from '../../decisions/traffic.js';
import type { ActivationRef } from '../../shared/activation.js';
import type { StageAccess } from '../../stage-lock/client.js';
import { bookkeeping } from './bookkeeping-activities.js';
import type { ActivationReporter } from './reporter.js';

export type RunStart = 'started' | 'terminating' | 'gone' | { refused: string };

export class RunHoldings {
  /** Whether this run may have set the close-out finalizer (startRun, or a close-out run). */
  private finalizerSet = false;
  /** The StageVersion this run marked as in activation. */
  private marked: string | undefined;
  /** The activation usage as this run created it (its uid), for a release without a read. */
  private usageUid: string | undefined;
  /** What the active usage pointed at when read under the Lease (null: none). */
  private active: string | null = null;

  constructor(
    private readonly ref: ActivationRef,
    private readonly stage: string,
    private readonly holder: string,
  ) {}

  /** The active usage as the attempt read it under the Lease. */
  noteActive(name: string | undefined): void {
    this.active = name ?? null;
  }

  /** A close-out takes over what the run before held: its finalizer and, if it set one, its mark. */
  takeOverRunBefore(stageVersion: string): void {
    this.finalizerSet = true;
    this.marked = stageVersion;
  }

  /**
   * ADR-0012 step 4 and requirement 4, together: one local activity holds the usage, marks the
   * StageVersion in activation and only then writes the first step's InProgress. Never beside
   * them: that would tell a step started (Events, metrics) that then never runs.
   */
  async startRun(
    plan: ResolvedPlan,
    first: number,
    target: string,
    progress: { steps: StepProgress[] },
    reporter: ActivationReporter,
    message: string,
  ): Promise<RunStart> {
    this.marked = target;
    const steps: StepProgress[] = [...progress.steps];
    steps[first] = startedStep(plan.steps[first]!, steps[first]!);
    const begun = reporter.startTime();
    const status = reporter.statusOf('InProgress', 'RunningPlan', message, steps, begun);
    this.finalizerSet = true;
    const { over, settle } = reporter.writing(status);
    const { ref, stage, holder } = this;
    const starting = CancellationScope.nonCancellable(() =>
      bookkeeping.startRun({ ref, stage, target, holder, status, ...(over ? { over } : {}) }),
    );
    const run = await settle(starting, (result) => !result.terminating && !result.refused && !result.gone);
    if (run.terminating) return 'terminating';
    if (run.gone) return 'gone';
    if (run.refused) return { refused: run.refused };
    this.usageUid = run.usageUid;
    progress.steps = steps;
    reporter.noteStart(begun);
    reporter.show('InProgress', 'RunningPlan', message);
    return 'started';
  }

  /**
   * ADR-0012 step 9, in one local activity: the new version is marked serving and the active usage
   * moves to it before anything is taken from the old one, so the serving version is never unheld.
   * The previous StageVersion stays marked serving: with a share left by a registration's weight
   * until no managed route sends it traffic; with none, it drains (a gateway may still send it
   * requests) and the Stage controller takes the mark once the Stage's drain has passed.
   */
  async switchServing(
    plan: ResolvedPlan,
    stage: { stageUid: string; target: StageVersionInfo; stageVersions: StageVersionInfo[] },
    previous: StageVersionInfo | undefined,
  ): Promise<{ stageLost?: string }> {
    const { stageUid, stageVersions } = stage;
    const target = stage.target.name;
    const previousKeeps =
      !plan.progression && plan.steps.some((step) => step.tasks.some((task) => weightOf(task.config) < 100));
    // The previous one keeps its mark either way; with no share left it starts to drain.
    const old = previous ? (previousKeeps ? { stillServing: previous.name } : { previous: previous.name }) : {};
    const uids = Object.fromEntries(stageVersions.flatMap((sv) => (sv.uid ? [[sv.name, sv.uid]] : [])));
    const revisions = Object.fromEntries(stageVersions.map((sv) => [sv.name, sv.revision]));
    const known = { active: this.active, uids, revisions, ...(this.usageUid ? { usageUid: this.usageUid } : {}) };
    const { ref, holder } = this;
    // A switch recorded before it could find the Stage gone returned nothing: it switched.
    const switched =
      (await bookkeeping.switchServing({ ref, stage: this.stage, stageUid, target, ...old, holder, ...known })) ?? {};
    if (!switched.stageLost) this.marked = undefined; // the active usage holds the target now
    return switched;
  }

  /** Whether the close-out finalizer may still be set: the final write's activity may take it away. */
  get finalizerHeld(): boolean {
    return this.finalizerSet;
  }

  /** The final write's activity took the finalizer away: letGo leaves it. */
  noteFinalizerRemoved(): void {
    this.finalizerSet = false;
  }

  /** The mark still set, taken away by the final write (finishRun) that lets it go. */
  takeMark(): string | undefined {
    const name = this.marked;
    this.marked = undefined;
    return name;
  }

  /**
   * After the final status: the mark (if still set), the Stage's lock, and then, beside the lock,
   * the close-out finalizer, which a deletion waits for: off the handoff's path (the next
   * activation waits for the lock, not for the finalizer). Left behind by a crash, the watcher
   * takes it away from a final object being deleted. What the final write's activity let go
   * already (finishAndLetGo) is not let go again.
   */
  async letGo(access: StageAccess): Promise<void> {
    const finalizer = () => (this.finalizerSet ? bookkeeping.removeCloseOutFinalizer(this.ref) : undefined);
    // In this order: the commands a workflow issues must stay as its recorded histories have them.
    await CancellationScope.nonCancellable(() => Promise.all([this.unmark(), access.release(), finalizer()]));
    this.finalizerSet = false;
  }

  private async unmark(): Promise<void> {
    const name = this.takeMark();
    if (name)
      await CancellationScope.nonCancellable(() =>
        bookkeeping.unmarkStageVersion(this.ref.namespace, name, this.holder),
      );
  }
}
