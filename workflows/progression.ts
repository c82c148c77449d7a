/**
 * A progressive activation's run, once its Stage is held and its first step may start: the plan's
 * steps at each weight, the gates between them (timers, not polling: exact however long they
 * wait), inline and background analyses, HTTP checks, and the answers people give (approve,
 * promote, abort, as Updates, signals or relayed annotations). Every decision is a function of
 * decisions/progression.ts and decisions/analysis.ts; this class holds where the progression is and
 * acts. The host (ActivationRun) runs the routing rounds, puts traffic back and writes the status.
 */
import { CancellationScope, condition, proxyLocalActivities } from '@temporalio/workflow';
import type { ActivationActivities } from '../activities/core.js';
import type { WebhookBody } from '../activities/analysis.js';
import { ABORT_RAMP_INTERVAL_SECONDS, MAX_ANALYSES, MAX_BACKGROUND_ANALYSES, MAX_PROGRESSION_LOG } from '../api/progression-defaults.js';
import { stoppedEnding, type Ending, type ProgressionReport } from '../decisions/activation.js';
import type { StageRef } from '../activities/measure.js';
import { aborts, analysisQuery, measured, startRun, stopped, type AnalysisRules, type AnalysisRun, type QueryVars } from '../decisions/analysis.js';
import {
  abortWeights,
  afterGate,
  backgroundAt,
  gateOf,
  gateReason,
  inconclusiveGate,
  leaseSecondsOver,
  stepKind,
  stepLabel,
  type Gate,
  type GateEnd,
  type Next,
  type ProgressionSpec,
  type ProgressionView,
} from '../decisions/progression.js';
import { kubeTime } from '../shared/format.js';
import type { ActionRequest } from '../shared/activation.js';
import type { ActivationRequests } from './activation/requests.js';
import { runAnalysis } from './analysis-run.js';
import { causeOf, messageOf } from './failures.js';
import { httpCheck } from './policies.js';

/** What the progression needs of the activation's run. */
export interface ProgressionHost {
  readonly requests: ActivationRequests;
  /** The activation's phase now (its answers are refused once it ended). */
  phase(): string;
  /**
   * Runs the plan's steps with `weight` to the target, as round `index`; an Ending when a step
   * failed (handled already). `followed`: another round comes at once, and the records of this
   * round's last step are written while it runs (it checks them as its own).
   */
  round(weight: number, index: number, down: boolean, followed: boolean): Promise<Ending | undefined>;
  /** Puts back every rule a task of this attempt changed, as recorded before it. */
  restore(): Promise<'done' | 'partial'>;
  /** Ends as a cancel in the middle of the progression does (stopped `where`): reverted if the plan says Revert. */
  cancelled(where: string): Promise<Ending>;
  /** Writes the status (InProgress) with the progression's report. */
  report(reason: string, message: string): Promise<void>;
  /**
   * Reads the Stage when a gate wakes the run or before the traffic goes back a step: false when
   * it is gone or being deleted (the run is then cancelled, and ends StageDeleted).
   */
  stageStillOurs(): Promise<boolean>;
  /** The Stage the activation validated: each measurement reads it too (activities/measure.ts). */
  readonly stage: StageRef;
  /** A newer activation waits for the Stage. */
  newerWaiting(): { by: string; revision: number } | undefined;
  /** The Stage's Lease over a long gate: taken for that long instead of renewed (undefined: renewed again). */
  holdLease(seconds: number | undefined): Promise<void>;
  readonly vars: QueryVars;
  readonly webhookBody: (step: number, stepName: string | undefined, weight: number) => WebhookBody;
}

const webhookOf = (timeoutSeconds: number, retries: number) => proxyLocalActivities<ActivationActivities>(httpCheck(timeoutSeconds, retries)).callWebhook;

/** What an answer at a gate ends it with, and how the log and the messages say it. */
const ANSWERED = {
  approve: { end: 'approved', logged: 'Approved', verb: 'approved', more: '' },
  promote: { end: 'promoted', logged: 'Promoted', verb: 'promoted', more: ': the remaining steps and gates are skipped' },
  abort: { end: 'aborted', logged: 'Aborted', verb: 'aborted', more: '' },
} as const satisfies Record<string, { end: GateEnd; logged: string; verb: string; more: string }>;

/** What ended the progression before the switch. */
type Stop = { ending: Ending } | 'promote';
/** Where a step leads, and why when it aborts. */
type Outcome = { next: Next; reason?: string; why?: string };

export class Progression {
  readonly report: ProgressionReport;
  private weight: number;
  private gate: (Gate & { since: number }) | undefined;
  private ending: ProgressionView['ending'];
  private background = new Map<string, { run: AnalysisRun; done: Promise<void>; stop: boolean }>();
  /** A background run that ended Failed, Error or Inconclusive, and not yet acted on. */
  private backgroundEnded: AnalysisRun | undefined;
  private rounds = 0;
  /** The weight the round running now sets. */
  setting: number | undefined;

  /** Made before the attempt's first step starts: from its first InProgress on, it answers approve, promote and abort. */
  constructor(
    private readonly spec: ProgressionSpec,
    private readonly analyses: readonly AnalysisRules[],
    private readonly host: ProgressionHost,
  ) {
    this.weight = 0;
    this.report = { step: 0, steps: spec.steps.length, weight: 0 };
    host.requests.followProgression(() => this.view());
  }

  /** Where the progression is, for the answers' validators. */
  private view(): ProgressionView {
    return { phase: this.host.phase(), progressive: true, ...(this.gate ? { gate: this.gate.type } : {}), ...(this.ending ? { ending: this.ending } : {}) };
  }

  /** Runs every step; 'switch' when the target now has all the traffic and the activation may succeed. */
  async run(): Promise<Ending | 'switch'> {
    try {
      const stop = await this.steps();
      if (stop !== 'promote' && stop !== undefined) return stop.ending;
      this.stopBackground();
      this.ending = 'switching';
      this.at(this.spec.steps.length);
      if (this.weight < 100) {
        const failed = await this.setWeight(100);
        if (failed) return failed;
      }
      // An abort asked while the last weight was set still counts: the switch has not happened yet.
      const late = this.host.requests.take();
      if (late?.action === 'abort') return await this.abort('Aborted', `aborted at the switch${this.byWhom(late.request)}`, late.request);
      return 'switch';
    } finally {
      // Past the progression an answer is refused as the switch or the ending runs, not as if there were none.
      this.ending ??= 'aborting';
      this.stopBackground();
      await Promise.all([...this.background.values()].map((b) => b.done));
    }
  }

  /** Whether something stops a wait or an analysis: an answer, a cancel, a newer activation, a failed background run. */
  private interrupted(): boolean {
    return this.host.requests.answerWaiting || this.host.requests.cancelled || this.host.newerWaiting() !== undefined || this.abortingBackground();
  }

  private async steps(): Promise<Stop | undefined> {
    for (let i = 0; i < this.spec.steps.length; i++) {
      this.at(i);
      this.syncBackground(i);
      const interrupted = await this.interruption();
      if (interrupted) return interrupted;
      const kind = stepKind(this.spec.steps[i]!);
      const label = stepLabel(this.spec, i);
      let outcome: Outcome | undefined;
      if (kind.kind === 'weight') {
        // Followed at once by another round: the next step sets a weight, or this is the last step
        // and the switch's round at 100 % comes next.
        const next = this.spec.steps[i + 1];
        const failed = await this.setWeight(kind.weight, next ? stepKind(next).kind === 'weight' : kind.weight < 100);
        if (failed) return { ending: failed };
      } else if (kind.kind === 'analysis') {
        outcome = await this.inlineAnalysis(kind.analysis, i);
      } else if (kind.kind === 'webhook') {
        outcome = await this.webhook(kind, i);
      } else {
        outcome = await this.wait(gateOf(kind, Date.now(), label)!);
      }
      if (outcome && outcome.next !== 'next') return this.follow(outcome);
    }
    return this.interruption();
  }

  /** Whatever stops the run between steps: an answer, a cancel, a newer activation, a background verdict. */
  private async interruption(): Promise<Stop | undefined> {
    const answer = this.host.requests.take();
    if (answer?.action === 'promote') return this.promoted(answer.request);
    if (answer?.action === 'abort') return { ending: await this.abort('Aborted', `aborted at ${stepLabel(this.spec, this.report.step)}${this.byWhom(answer.request)}`, answer.request) };
    if (this.host.requests.cancelled) return { ending: await this.host.cancelled(`at ${stepLabel(this.spec, this.report.step)}`) };
    if (this.host.newerWaiting()) return this.follow({ next: 'supersede' });
    const ended = this.backgroundEnded;
    if (ended && aborts(ended.phase)) return this.follow(this.failedAnalysis());
    if (ended) {
      this.backgroundEnded = undefined;
      const outcome = await this.wait(inconclusiveGate(Date.now(), stepLabel(this.spec, this.report.step), ended.message ?? `analysis ${ended.name} is inconclusive`));
      if (outcome.next !== 'next') return this.follow(outcome);
    }
    return undefined;
  }

  /** The abort a failed analysis (or HTTP check) leads to, with its query, values and condition. */
  private failedAnalysis(): Outcome {
    const ended = this.backgroundEnded;
    return { next: 'abort', reason: 'AnalysisFailed', why: ended?.message ?? `analysis ${ended?.name ?? ''} ended ${ended?.phase ?? 'Failed'}` };
  }

  private promoted(r: ActionRequest): Stop {
    this.log('Promoted', `promoted at ${stepLabel(this.spec, this.report.step)}: the remaining steps and gates are skipped`, r.by);
    return 'promote';
  }

  private async follow(o: Outcome): Promise<Stop> {
    switch (o.next) {
      case 'next': // callers go on by themselves; never asked
      case 'promote':
        return 'promote';
      case 'cancel':
        return { ending: await this.host.cancelled(`at ${stepLabel(this.spec, this.report.step)}`) };
      case 'supersede': {
        const newer = this.host.newerWaiting()!;
        const message = `superseded at ${stepLabel(this.spec, this.report.step)} by the newer activation ${newer.by} (revision ${newer.revision}), which waits for the Stage`;
        this.log('Superseded', message);
        const ending = await this.abort('Superseded', message, undefined, true);
        return { ending: ending.phase === 'Failed' ? { ...ending, phase: 'Cancelled' } : ending };
      }
      case 'abort':
        return { ending: await this.abort(o.reason ?? 'Aborted', o.why ?? 'aborted') };
    }
  }

  // --- weights ------------------------------------------------------------------------------

  /** One round of the plan's steps at `weight`: each step's own status write says it (no write of its own). */
  private async setWeight(weight: number, followed = false): Promise<Ending | undefined> {
    this.gate = undefined;
    this.report.gate = null;
    this.setting = weight;
    const failed = await this.host.round(weight, this.rounds++, false, followed);
    this.setting = undefined;
    if (failed) return failed;
    this.weight = weight;
    this.report.weight = weight;
    return undefined;
  }

  // --- gates --------------------------------------------------------------------------------

  /** Waits at a gate until an answer, a cancel, a newer activation, a background verdict or its time. */
  private async wait(gate: Gate): Promise<Outcome> {
    const since = Date.now();
    this.gate = { ...gate, since };
    if (gate.until !== undefined) await this.host.holdLease(leaseSecondsOver(gate.until - since));
    await this.say(gateReason(gate.type), gate.message);
    const timedOut = gate.until !== undefined && !(await condition(() => this.interrupted(), Math.max(gate.until - Date.now(), 1)));
    this.gate = undefined;
    await this.host.holdLease(undefined);
    // Whatever woke it, a Stage that went meanwhile (and nobody said so) ends the run.
    if (!(await this.host.stageStillOurs())) return { next: afterGate(gate, 'cancelled') };
    const label = stepLabel(this.spec, this.report.step);
    if (timedOut) {
      const next = afterGate(gate, 'timedOut');
      const why = `${label}: the ${gate.type === 'Approval' ? 'approval' : 'wait'} timed out after ${Math.round((gate.until! - since) / 1000)}s`;
      if (gate.type !== 'Pause') this.log(next === 'next' ? 'Continued' : 'TimedOut', `${why}; ${next === 'next' ? 'going on' : 'aborting'}`);
      return { next, reason: 'TimedOut', why };
    }
    const answer = this.host.requests.take();
    if (answer) {
      const said = ANSWERED[answer.action];
      const what = `${said.verb} at ${label}${said.more}${answer.action === 'abort' ? this.byWhom(answer.request) : ''}`;
      this.log(said.logged, what, answer.request.by);
      return { next: afterGate(gate, said.end), reason: 'Aborted', why: what };
    }
    if (this.host.requests.cancelled) return { next: afterGate(gate, 'cancelled') };
    if (this.host.newerWaiting()) return { next: afterGate(gate, 'superseded') };
    return this.failedAnalysis();
  }

  private abortingBackground(): boolean {
    return this.backgroundEnded !== undefined && aborts(this.backgroundEnded.phase);
  }

  // --- analyses -----------------------------------------------------------------------------

  private analysis(name: string): AnalysisRules {
    const a = this.analyses.find((x) => x.name === name);
    if (!a) throw new Error(`analysis ${name} is not defined in the plan's spec.analyses`);
    return a;
  }

  private begin(name: string, step: number, background: boolean): { a: AnalysisRules; run: AnalysisRun } {
    const a = this.analysis(name);
    const query = analysisQuery(a, this.host.vars);
    const started = startRun(a, 'query' in query ? query.query : '', step, background);
    const run = 'error' in query ? measured(a, started, { time: kubeTime(), verdict: 'Error', message: query.error }, true) : started;
    const runs = (this.report.analysisRuns ??= []);
    runs.push(run);
    if (runs.length > MAX_ANALYSES + MAX_BACKGROUND_ANALYSES) runs.shift();
    return { a, run };
  }

  private replace(old: AnalysisRun, run: AnalysisRun): void {
    const runs = this.report.analysisRuns ?? [];
    const i = runs.indexOf(old);
    if (i >= 0) runs[i] = run;
  }

  /** An analysis at a step: measures until it ends; a person may promote past it or abort it. */
  private async inlineAnalysis(name: string, step: number): Promise<Outcome | undefined> {
    const { a, run: first } = this.begin(name, step, false);
    this.gate = { type: 'Analysis', since: Date.now(), onTimeout: 'abort', message: `${stepLabel(this.spec, step)}: analysis ${name}` };
    await this.say('Analyzing', `${stepLabel(this.spec, step)}: analysis ${name}, ${a.count} measurement${a.count === 1 ? '' : 's'} every ${a.intervalSeconds}s`);
    let current = first;
    await this.host.holdLease(leaseSecondsOver(((a.initialDelaySeconds ?? 0) + a.count * a.intervalSeconds) * 1000));
    const run = await runAnalysis(a, first, {
      measured: async (r) => {
        this.replace(current, r);
        current = r;
        await this.say('Analyzing', r.message ?? `analysis ${name}`);
      },
      stop: () => this.interrupted(),
      ...this.stageHooks(),
    });
    this.gate = undefined;
    await this.host.holdLease(undefined);
    if (run.phase === 'Running') return undefined; // stopped: the interruption between steps acts on why
    if (run.phase === 'Successful') return { next: 'next' };
    if (run.phase === 'Inconclusive') return this.wait(inconclusiveGate(Date.now(), stepLabel(this.spec, step), run.message ?? `analysis ${name} is inconclusive`));
    return { next: 'abort', reason: 'AnalysisFailed', why: run.message ?? `analysis ${name} ended ${run.phase}` };
  }

  /** Starts the background analyses that begin at step `i`, stops those that end there. */
  private syncBackground(i: number): void {
    const wanted = new Set(backgroundAt(this.spec, i));
    for (const [name, b] of this.background) if (!wanted.has(name)) b.stop = true;
    for (const name of wanted) {
      if (this.background.has(name)) continue;
      const { a, run } = this.begin(name, i, true);
      const entry = { run, stop: false, done: Promise.resolve() };
      entry.done = CancellationScope.nonCancellable(async () => {
        const end = await runAnalysis(a, run, {
          measured: async (r) => {
            this.replace(entry.run, r);
            entry.run = r;
            await this.say(this.gate ? gateReason(this.gate.type) : 'Analyzing', r.message ?? `analysis ${name}`);
          },
          stop: () => entry.stop || this.ending === 'aborting',
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

  /**
   * Each measurement reads the Stage beside it: one that is gone cancels the run, which a gate's
   * wait (interrupted) and the next step's start then see.
   */
  private stageHooks() {
    return { stage: this.host.stage, stageLost: (message: string) => this.host.requests.stageGone(message) };
  }

  private stopBackground(): void {
    for (const b of this.background.values()) b.stop = true;
  }

  // --- HTTP checks --------------------------------------------------------------------------

  private async webhook(check: { url: string; timeoutSeconds: number; retries: number }, step: number): Promise<Outcome> {
    this.gate = { type: 'Webhook', since: Date.now(), onTimeout: 'abort', message: `${stepLabel(this.spec, step)}: calling ${check.url}` };
    await this.say(gateReason('Webhook'), this.gate.message);
    try {
      await webhookOf(check.timeoutSeconds, check.retries)(check.url, this.host.webhookBody(step, this.spec.steps[step]?.name, this.weight), check.timeoutSeconds);
      this.gate = undefined;
      return { next: 'next' };
    } catch (err) {
      this.gate = undefined;
      return { next: 'abort', reason: 'CheckFailed', why: `${stepLabel(this.spec, step)}: the HTTP check failed: ${messageOf(causeOf(err))}` };
    }
  }

  // --- abort --------------------------------------------------------------------------------

  /**
   * Puts the traffic back as recorded before the activation: down through the plan's abort weights
   * first (each for its interval), at once when superseded. Ends Failed saying why and what was put back.
   */
  private async abort(reason: string, why: string, request?: ActionRequest, atOnce = false): Promise<Ending> {
    this.ending = 'aborting';
    this.gate = undefined;
    if (request) this.log('Aborted', why, request.by);
    this.stopBackground();
    const ramp = atOnce ? [] : abortWeights(this.weight, this.spec.abort?.weights);
    const interval = this.spec.abort?.intervalSeconds ?? ABORT_RAMP_INTERVAL_SECONDS;
    for (const w of ramp) {
      // The Stage gone while the traffic goes back: the rest of the ramp is skipped, the record put back at once.
      if (!(await this.host.stageStillOurs())) break;
      await this.say('Aborting', `${why}; going back: ${w} % to the new StageVersion for ${interval}s`);
      const failed = await this.host.round(w, this.rounds++, true, false);
      if (failed) return { ...failed, message: `${why}; going back, the weight ${w} % could not be set: ${failed.message}` };
      this.weight = w;
      this.report.weight = w;
      await this.host.holdLease(leaseSecondsOver(interval * 1000));
      await condition(() => this.host.requests.stageLost !== undefined, `${interval} seconds`);
      await this.host.holdLease(undefined);
    }
    await this.say('Aborting', `${why}; putting the traffic back as recorded before the activation`);
    const restored = await this.host.restore();
    this.weight = restored === 'done' ? 0 : this.weight;
    this.report.weight = this.weight;
    const state = restored === 'done' ? 'the traffic is back as recorded before the activation' : 'the traffic could not all be put back: see the steps';
    const { stageLost } = this.host.requests;
    if (stageLost) return stoppedEnding(`while going back (${why})`, { stageLost }, state);
    return { phase: 'Failed', reason, message: `${why}; ${state}` };
  }

  // --- what the status says -----------------------------------------------------------------

  private at(step: number): void {
    this.report.step = step;
    this.report.stepName = this.spec.steps[step]?.name ?? null;
  }

  private log(action: 'Approved' | 'Promoted' | 'Aborted' | 'TimedOut' | 'Continued' | 'Superseded', message: string, by?: string): void {
    const log = (this.report.log ??= []);
    log.push({ time: kubeTime(), step: this.report.step, action, ...(by ? { by } : {}), message });
    if (log.length > MAX_PROGRESSION_LOG) log.shift();
  }

  private byWhom(r: ActionRequest): string {
    return r.by ? ` by ${r.by}` : '';
  }

  private async say(reason: string, message: string): Promise<void> {
    const g = this.gate;
    this.report.gate = g ? { type: g.type, since: kubeTime(new Date(g.since)), ...(g.until ? { until: kubeTime(new Date(g.until)) } : {}), message: g.message } : null;
    await this.host.report(reason, message);
  }
}
