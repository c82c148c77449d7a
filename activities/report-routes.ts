/**
 * A landscape worker's report (docs/landscapes.md): the managed rules of each Stage the core names,
 * read in the landscape's own cluster, each route once. Read only; the registration's consent to
 * routes in another namespace is checked again here, as before any write.
 */
import { MAX_REPORTED_STAGES, type ReportedStage } from '../api/landscape.js';
import { sameRule, type TrafficRule } from '../decisions/stage.js';
import { readableRegistration } from '../executors/index.js';
import { observedRules, observingInput, sendsTo } from '../executors/observed-rules.js';
import type { Executor, ExecutorContext } from '../executors/types.js';
import { ExecutorError } from '../executors/types.js';
import type { ReportTarget } from './landscape-report.js';

/** Every Stage the core named, with its rules or why they could not be read: a Stage left out would read as unknown. */
export interface RoutesReport {
  stages: ReportedStage[];
}

export async function reportRoutes(
  executor: Executor<any>,
  targets: readonly ReportTarget[],
  ctx: ExecutorContext,
): Promise<RoutesReport> {
  // Refused whole, not cut short: a Stage missing from the report would count as unknown, not as
  // reported, but one cut off silently would be no one's to explain.
  if (targets.length > MAX_REPORTED_STAGES)
    throw new ExecutorError(
      `the landscape has ${targets.length} Stages, more than a report holds (${MAX_REPORTED_STAGES}): give some of them a Landscape of their own`,
      false,
    );
  const stages: ReportedStage[] = [];
  for (const target of targets) {
    ctx.signal.throwIfAborted();
    const own = new Set(target.stageVersions.map((stageVersion) => stageVersion.name));
    const rules: TrafficRule[] = [];
    let unreadable: string | undefined;
    for (const registration of target.registrations) {
      const readable = readableRegistration(
        {
          metadata: { name: registration.name },
          spec: { type: executor.type, executor: 'Worker', spec: registration.config, ...registration.consent },
        },
        target.namespace,
      );
      if (!readable) continue;
      const input = observingInput(target.namespace, target.stage, target.stageVersions, readable.config);
      try {
        for (const rule of await observedRules(executor, readable.config, input, ctx))
          if (sendsTo(rule, own) && !rules.some((kept) => sameRule(kept, rule))) rules.push(rule);
      } catch (err) {
        unreadable = `${registration.name}: ${err instanceof Error ? err.message : String(err)}`.slice(0, 1024);
        break;
      }
    }
    const { namespace, stage } = target;
    stages.push(
      unreadable !== undefined
        ? { namespace, stage, unreadable }
        : { namespace, stage, ...(rules.length > 0 ? { rules: rules.slice(0, 64) } : {}) },
    );
  }
  return { stages };
}
