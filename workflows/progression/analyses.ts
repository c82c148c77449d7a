/**
 * A progression's analyses: an inline one a step runs (kinds/analysis.ts), and the background ones
 * that run beside the steps from one step to another, each in a scope of its own; the report keeps
 * every run's measurements. A background run that ends other than Successful is kept until the
 * progression acts on it between steps or at a gate.
 */
import { CancellationScope } from '@temporalio/workflow';
import { MAX_ANALYSES, MAX_BACKGROUND_ANALYSES } from '../../api/progression-defaults.js';
import type { ProgressionReport } from '../../decisions/activation.js';
import {
  aborts,
  analysisQuery,
  measured,
  startRun,
  stopped,
  type AnalysisRules,
  type AnalysisRun,
} from '../../decisions/analysis.js';
import { backgroundAt, type ProgressionSpec } from '../../decisions/progression.js';
import { kubeTime } from '../../shared/format.js';
import { runAnalysis } from './analysis-run.js';
import type { Outcome, ProgressionHost } from './host.js';

interface BackgroundRun {
  run: AnalysisRun;
  done: Promise<void>;
  stop: boolean;
}

/** What the analyses need of the progression beside its host. */
export interface AnalysesOwner {
  /** The status reason now: the gate's while one waits, else Analyzing. */
  reasonNow(): string;
  writeStatus(reason: string, message: string): Promise<void>;
  /** The progression aborts: background runs stop. */
  aborting(): boolean;
}

export class ProgressionAnalyses {
  private readonly background = new Map<string, BackgroundRun>();
  /** A background run that ended Failed, Error or Inconclusive, and not yet acted on. */
  private backgroundEnded: AnalysisRun | undefined;

  constructor(
    private readonly spec: ProgressionSpec,
    private readonly rules: readonly AnalysisRules[],
    private readonly report: ProgressionReport,
    private readonly host: ProgressionHost,
    private readonly owner: AnalysesOwner,
  ) {}

  /** The background run that ended other than Successful, not yet acted on. */
  get ended(): AnalysisRun | undefined {
    return this.backgroundEnded;
  }

  /** An inconclusive background run is acted on (a person is asked): it is no longer pending. */
  takeEnded(): void {
    this.backgroundEnded = undefined;
  }

  /** A background run failed: the progression aborts. */
  abortingBackground(): boolean {
    return this.backgroundEnded !== undefined && aborts(this.backgroundEnded.phase);
  }

  /** The abort a failed analysis (or HTTP check) leads to, with its query, values and condition. */
  failedOutcome(): Outcome {
    const ended = this.backgroundEnded;
    return {
      next: 'abort',
      reason: 'AnalysisFailed',
      why: ended?.message ?? `analysis ${ended?.name ?? ''} ended ${ended?.phase ?? 'Failed'}`,
    };
  }

  /** The rules of the plan's analysis `name`. */
  rulesOf(name: string): AnalysisRules {
    const rules = this.rules.find((candidate) => candidate.name === name);
    if (!rules) throw new Error(`analysis ${name} is not defined in the plan's spec.analyses`);
    return rules;
  }

  /**
   * A new run of analysis `name` at `step`, in the report from now on (Error at once when its query
   * cannot be made).
   */
  start(name: string, step: number, background: boolean): { rules: AnalysisRules; run: AnalysisRun } {
    const rules = this.rulesOf(name);
    const query = analysisQuery(rules, this.host.vars);
    const started = startRun(rules, 'query' in query ? query.query : '', step, background);
    const run =
      'error' in query
        ? measured(rules, started, { time: kubeTime(), verdict: 'Error', message: query.error }, true)
        : started;
    const runs = (this.report.analysisRuns ??= []);
    runs.push(run);
    if (runs.length > MAX_ANALYSES + MAX_BACKGROUND_ANALYSES) runs.shift();
    return { rules, run };
  }

  /** The report shows `run` where it showed `old`. */
  replace(old: AnalysisRun, run: AnalysisRun): void {
    const runs = this.report.analysisRuns ?? [];
    const index = runs.indexOf(old);
    if (index >= 0) runs[index] = run;
  }

  /** Starts the background analyses that begin at step `step`, stops those that end there. */
  syncBackground(step: number): void {
    const wanted = new Set(backgroundAt(this.spec, step));
    for (const [name, entry] of this.background) if (!wanted.has(name)) entry.stop = true;
    for (const name of wanted) {
      if (this.background.has(name)) continue;
      const { rules, run } = this.start(name, step, true);
      const entry: BackgroundRun = { run, stop: false, done: Promise.resolve() };
      entry.done = CancellationScope.nonCancellable(async () => {
        const end = await runAnalysis(rules, run, {
          measured: async (next) => {
            this.replace(entry.run, next);
            entry.run = next;
            await this.owner.writeStatus(this.owner.reasonNow(), next.message ?? `analysis ${name}`);
          },
          stop: () => entry.stop || this.owner.aborting(),
          ...this.stageHooks(),
        });
        const final = end.phase === 'Running' ? stopped(end) : end;
        this.replace(entry.run, final);
        entry.run = final;
        if (final.phase !== 'Successful') this.backgroundEnded ??= final;
      });
      this.background.set(name, entry);
    }
  }

  stopBackground(): void {
    for (const entry of this.background.values()) entry.stop = true;
  }

  /** Resolves once every background run has ended. */
  async allEnded(): Promise<void> {
    await Promise.all([...this.background.values()].map((entry) => entry.done));
  }

  /**
   * Each measurement reads the Stage beside it: one that is gone cancels the run, which a gate's
   * wait (interrupted) and the next step's start then see.
   */
  stageHooks() {
    return { stage: this.host.stage, stageLost: (message: string) => this.host.requests.stageGone(message) };
  }
}
