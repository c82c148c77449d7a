/**
 * One analysis run in workflow code: measure, ask decisions/analysis.ts for the verdict, say it,
 * wait the interval (a durable timer), until the run ends or is stopped. Measurements are local
 * activities: a query takes milliseconds, and what Prometheus answers (or fails to) is the verdict's
 * input, never a reason to retry.
 */
import { condition, proxyLocalActivities } from '@temporalio/workflow';
import type { ActivationActivities } from '../../activities/core.js';
import type { StageRef } from '../../activities/measure.js';
import {
  measured,
  measurementVerdict,
  type AnalysisRules,
  type AnalysisRun,
  type Measured,
} from '../../decisions/analysis.js';
import { kubeTime as now } from '../../shared/format.js';
import { MEASUREMENT } from '../policies.js';

const { measure } = proxyLocalActivities<ActivationActivities>(MEASUREMENT);

export interface AnalysisHooks {
  /** Said after every measurement (the status, the Events). */
  measured(run: AnalysisRun): Promise<void>;
  /** True once the run is to stop (an answer, an abort, a background run's end, the Stage gone). */
  stop(): boolean;
  /** The activation's Stage, read beside each measurement; `stageLost` hears when it is gone or going. */
  stage?: StageRef;
  stageLost?(message: string): void;
}

/**
 * Runs the analysis `rules` describe from `run` (its query filled in) until it ends (Successful,
 * Failed, Inconclusive, Error), or until `stop()`: then it is returned Running, for the caller to
 * say how it ended.
 */
export async function runAnalysis(rules: AnalysisRules, run: AnalysisRun, hooks: AnalysisHooks): Promise<AnalysisRun> {
  // Ended before it began (its query could not be made): nothing to measure.
  if (run.phase !== 'Running') return run;
  if (rules.initialDelaySeconds && (await condition(hooks.stop, `${rules.initialDelaySeconds} seconds`))) return run;
  for (;;) {
    if (hooks.stop()) return run;
    const { stageLost, ...result } = await measure(rules.address, run.query ?? rules.query ?? '', hooks.stage);
    // Heard before the verdict is said: stop() then says so, and the run ends as its Stage went.
    if (stageLost) hooks.stageLost?.(stageLost);
    const said = { time: now(), verdict: measurementVerdict(rules, result) };
    // A value the status can hold (JSON has no infinities), else what was measured, in words.
    const measurement: Measured =
      'value' in result
        ? Number.isFinite(result.value)
          ? { ...said, value: result.value }
          : { ...said, message: String(result.value) }
        : { ...said, message: 'error' in result ? result.error : result.noData };
    run = measured(rules, run, measurement, 'error' in result && result.permanent === true);
    await hooks.measured(run);
    if (run.phase !== 'Running') return run;
    if (await condition(hooks.stop, `${rules.intervalSeconds} seconds`)) return run;
  }
}
