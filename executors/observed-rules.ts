/**
 * The managed rules of one registration as a Stage's traffic: what the executor observes, each rule
 * with the percent it sends each StageVersion. The Stage controller reads them so in the control
 * plane's own cluster, a landscape's worker so for its report.
 */
import type { TrafficRule } from '../decisions/stage.js';
import { percentOf } from '../decisions/traffic.js';
import { ExecutorError, type Executor, type ExecutorContext, type TaskInput } from './types.js';

/** Whether a failed read says the rule sends nothing (the route or rule is not there), not that we cannot tell. */
export const absentRule = (err: unknown) =>
  err instanceof ExecutorError && !err.retryable && (err.status === undefined || err.status === 404);

/** The input an observation of a Stage's rules needs: nothing is applied with it. */
export function observingInput(
  namespace: string,
  stage: string,
  stageVersions: TaskInput['stageVersions'],
  config: unknown,
): TaskInput {
  return {
    execution: { namespace, name: '' },
    action: 'Apply',
    namespace,
    stage,
    stageVersion: stageVersions[0]!,
    stageVersions,
    config,
  };
}

/** The registration's rules as they are (read leniently: a rule that is not there sends nothing); none when absent. */
export async function observedRules(
  executor: Executor<any>,
  config: unknown,
  input: TaskInput,
  ctx: ExecutorContext,
): Promise<TrafficRule[]> {
  try {
    const observed = await executor.observe({ ...input, config }, config, ctx, { lenient: true });
    return observed.map((rule) => ({
      route: rule.route,
      rule: rule.index,
      ...(rule.name ? { name: rule.name } : {}),
      weights: percentOf(rule.traffic),
    }));
  } catch (err) {
    if (absentRule(err)) return [];
    throw err;
  }
}

/** Whether the rule sends one of the StageVersions traffic (else it is another Stage's, or nobody's yet). */
export const sendsTo = (rule: TrafficRule, stageVersions: ReadonlySet<string>) =>
  Object.keys(rule.weights).some((version) => stageVersions.has(version));
