/**
 * A progressive activation's run, once its Stage is held and its first step may start: the plan's
 * steps, each run by its kind's handler (kinds/), the gates between them (timers, not polling:
 * exact however long they wait), inline and background analyses (analyses.ts), HTTP checks, and
 * the answers people give (approve, promote, abort, as Updates, signals or relayed annotations).
 * Every decision is a function of decisions/progression.ts, decisions/step-kinds/ and
 * decisions/analysis.ts; this class holds where the progression is and acts. The host (the
 * activation's attempt) runs the routing rounds, puts traffic back and writes the status.
 */
import { MAX_PROGRESSION_LOG } from '../../api/progression-defaults.js';
import type { Ending, ProgressionReport } from '../../decisions/activation.js';
import type { AnalysisRules } from '../../decisions/analysis.js';
import {
  abortWeights,
  gateReason,
  inconclusiveGate,
  stepKind,
  stepLabel,
  type Gate,
  type ProgressionSpec,
  type ProgressionView,
} from '../../decisions/progression.js';
import type { ActionRequest } from '../../shared/activation.js';
import { kubeTime } from '../../shared/format.js';
import { ProgressionAnalyses } from './analyses.js';
import { waitAtGate } from './gate-wait.js';
import {
  byWhom,
  type LoggedAction,
  type Outcome,
  type ProgressionContext,
  type ProgressionHost,
  type Stop,
} from './host.js';
import { runStepOfKind } from './kinds/index.js';
import { goBack } from './go-back.js';

export type { ProgressionHost };

export class Progression implements ProgressionContext {
  readonly report: ProgressionReport;
  readonly analyses: ProgressionAnalyses;
  /** The weight the round running now sets. */
  setting: number | undefined;
  private currentWeight = 0;
  private currentGate: (Gate & { since: number }) | undefined;
  private ending: ProgressionView['ending'];
  private rounds = 0;

  /**
   * Made before the attempt's first step starts: from its first InProgress on, it answers approve,
   * promote and abort.
   */
  constructor(
    readonly spec: ProgressionSpec,
    analyses: readonly AnalysisRules[],
    readonly host: ProgressionHost,
  ) {
    this.report = { step: 0, steps: spec.steps.length, weight: 0 };
    this.analyses = new ProgressionAnalyses(spec, analyses, this.report, host, {
      reasonNow: () => (this.currentGate ? gateReason(this.currentGate.type) : 'Analyzing'),
      writeStatus: (reason, message) => this.writeStatus(reason, message),
      aborting: () => this.ending === 'aborting',
    });
    host.requests.followProgression(() => this.view());
  }

  get weight(): number {
    return this.currentWeight;
  }

  get gate(): Gate | undefined {
    return this.currentGate;
  }

  /** Runs every step; 'switch' when the target now has all the traffic and the activation may succeed. */
  async run(): Promise<Ending | 'switch'> {
    try {
      const stop = await this.runSteps();
      if (stop !== 'promote' && stop !== undefined) return stop.ending;
      this.analyses.stopBackground();
      this.ending = 'switching';
      this.enterStep(this.spec.steps.length);
      if (this.currentWeight < 100) {
        const failed = await this.setWeight(100);
        if (failed) return failed;
      }
      // An abort asked while the last weight was set still counts: the switch has not happened yet.
      const late = this.host.requests.take();
      if (late?.action === 'abort')
        return await this.abort('Aborted', `aborted at the switch${byWhom(late.request)}`, late.request);
      return 'switch';
    } finally {
      // Past the progression an answer is refused as the switch or the ending runs, not as if there were none.
      this.ending ??= 'aborting';
      this.analyses.stopBackground();
      await this.analyses.allEnded();
    }
  }

  label(): string {
    return stepLabel(this.spec, this.report.step);
  }

  interrupted(): boolean {
    const { requests } = this.host;
    return (
      requests.answerWaiting ||
      requests.cancelled ||
      this.host.newerWaiting() !== undefined ||
      this.analyses.abortingBackground()
    );
  }

  /** One round of the plan's steps at `weight`: each step's own status write says it (no write of its own). */
  async setWeight(weight: number, followed = false): Promise<Ending | undefined> {
    this.currentGate = undefined;
    this.report.gate = null;
    this.setting = weight;
    const failed = await this.roundAt(weight, false, followed);
    this.setting = undefined;
    return failed;
  }

  showGate(gate: Gate | undefined, since = Date.now()): void {
    this.currentGate = gate ? { ...gate, since } : undefined;
  }

  /** The status says where the progression is and the gate it waits at, then the host writes it. */
  async writeStatus(reason: string, message: string): Promise<void> {
    const gate = this.currentGate;
    const until = gate?.until ? { until: kubeTime(new Date(gate.until)) } : {};
    this.report.gate = gate
      ? { type: gate.type, since: kubeTime(new Date(gate.since)), ...until, message: gate.message }
      : null;
    await this.host.report(reason, message);
  }

  logAction(action: LoggedAction, message: string, by?: string): void {
    const log = (this.report.log ??= []);
    log.push({ time: kubeTime(), step: this.report.step, action, ...(by ? { by } : {}), message });
    if (log.length > MAX_PROGRESSION_LOG) log.shift();
  }

  /** Where the progression is, for the answers' validators. */
  private view(): ProgressionView {
    const gate = this.currentGate ? { gate: this.currentGate.type } : {};
    return { phase: this.host.phase(), progressive: true, ...gate, ...(this.ending ? { ending: this.ending } : {}) };
  }

  private async runSteps(): Promise<Stop | undefined> {
    for (let step = 0; step < this.spec.steps.length; step++) {
      this.enterStep(step);
      this.analyses.syncBackground(step);
      const interrupted = await this.interruption();
      if (interrupted) return interrupted;
      const result = await runStepOfKind(this, stepKind(this.spec.steps[step]!), step);
      if (result && 'ending' in result) return result;
      if (result && result.next !== 'next') return this.proceed(result);
    }
    return this.interruption();
  }

  /** Whatever stops the run between steps: an answer, a cancel, a newer activation, a background verdict. */
  private async interruption(): Promise<Stop | undefined> {
    const answer = this.host.requests.take();
    if (answer?.action === 'promote') return this.promoted(answer.request);
    if (answer?.action === 'abort') {
      return {
        ending: await this.abort('Aborted', `aborted at ${this.label()}${byWhom(answer.request)}`, answer.request),
      };
    }
    if (this.host.requests.cancelled) return { ending: await this.host.cancelled(`at ${this.label()}`) };
    if (this.host.newerWaiting()) return this.proceed({ next: 'supersede' });
    const { ended } = this.analyses;
    if (ended && this.analyses.abortingBackground()) return this.proceed(this.analyses.failedOutcome());
    if (ended) {
      this.analyses.takeEnded();
      const outcome = await waitAtGate(
        this,
        inconclusiveGate(Date.now(), this.label(), ended.message ?? `analysis ${ended.name} is inconclusive`),
      );
      if (outcome.next !== 'next') return this.proceed(outcome);
    }
    return undefined;
  }

  private promoted(request: ActionRequest): Stop {
    this.logAction('Promoted', `promoted at ${this.label()}: the remaining steps and gates are skipped`, request.by);
    return 'promote';
  }

  /** Acts on where a step led: promote, cancel, supersede or abort. */
  private async proceed(outcome: Outcome): Promise<Stop> {
    switch (outcome.next) {
      case 'next': // callers go on by themselves; never asked
      case 'promote':
        return 'promote';
      case 'cancel':
        return { ending: await this.host.cancelled(`at ${this.label()}`) };
      case 'supersede': {
        const newer = this.host.newerWaiting()!;
        const newerOne = `the newer activation ${newer.by} (revision ${newer.revision})`;
        const message = `superseded at ${this.label()} by ${newerOne}, which waits for the Stage`;
        this.logAction('Superseded', message);
        const ending = await this.abort('Superseded', message, undefined, true);
        return { ending: ending.phase === 'Failed' ? { ...ending, phase: 'Cancelled' } : ending };
      }
      case 'abort':
        return { ending: await this.abort(outcome.reason ?? 'Aborted', outcome.why ?? 'aborted') };
    }
  }

  /**
   * Puts the traffic back as recorded before the activation: down through the plan's abort weights
   * first (each for its interval), at once when superseded. Ends Failed saying why and what was put back.
   */
  private async abort(reason: string, why: string, request?: ActionRequest, atOnce = false): Promise<Ending> {
    this.ending = 'aborting';
    this.currentGate = undefined;
    if (request) this.logAction('Aborted', why, request.by);
    this.analyses.stopBackground();
    return goBack(this, reason, why, atOnce ? [] : abortWeights(this.currentWeight, this.spec.abort?.weights));
  }

  /**
   * One round of the plan's steps at `weight` (down: in reverse, going back); the weight is the
   * target's once it ran.
   */
  async roundAt(weight: number, down: boolean, followed: boolean): Promise<Ending | undefined> {
    const failed = await this.host.round(weight, this.rounds++, down, followed);
    if (failed) return failed;
    this.currentWeight = weight;
    this.report.weight = weight;
    return undefined;
  }

  /** The traffic went back as recorded before the activation (done), or not all of it. */
  wentBack(restored: 'done' | 'partial'): void {
    if (restored === 'done') this.currentWeight = 0;
    this.report.weight = this.currentWeight;
  }

  /** The progression is at step `step` (the step count: the switch). */
  private enterStep(step: number): void {
    this.report.step = step;
    this.report.stepName = this.spec.steps[step]?.name ?? null;
  }
}
