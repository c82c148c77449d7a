/**
 * A landscape worker's report (docs/landscapes.md): the managed rules of each Stage the core names,
 * read in the landscape's own cluster, each route once. Read only; the registration's consent to
 * routes in another namespace is checked again here, as before any write.
 */
import { MAX_REPORTED_RULES, type ReportedRouteRule } from '../api/landscape.js';
import { sameRule, type TrafficRule } from '../decisions/stage.js';
import { readableRegistration } from '../executors/index.js';
import { observedRules, observingInput, sendsTo } from '../executors/observed-rules.js';
import type { Executor, ExecutorContext } from '../executors/types.js';
import { ExecutorError } from '../executors/types.js';
import type { ReportTarget } from './landscape-report.js';

/** The rules the workers read, and the Stages whose rules they could not read (with why). */
export interface RoutesReport {
  rules: ReportedRouteRule[];
  unreadable: { namespace: string; stage: string; message: string }[];
}

export async function reportRoutes(
  executor: Executor<any>,
  targets: readonly ReportTarget[],
  ctx: ExecutorContext,
): Promise<RoutesReport> {
  const report: RoutesReport = { rules: [], unreadable: [] };
  const byStage = new Map<string, { namespace: string; stage: string; rules: TrafficRule[]; failed?: string }>();
  for (const target of targets) {
    ctx.signal.throwIfAborted();
    const key = `${target.namespace}/${target.stage}`;
    const entry = byStage.get(key) ?? { namespace: target.namespace, stage: target.stage, rules: [] };
    byStage.set(key, entry);
    const readable = readableRegistration(
      {
        metadata: { name: target.registration },
        spec: {
          type: executor.type,
          executor: 'Worker',
          spec: target.config,
          ...(target.allowCrossNamespaceFrom ? { allowCrossNamespaceFrom: target.allowCrossNamespaceFrom } : {}),
        },
      },
      target.namespace,
    );
    if (!readable || entry.failed) continue;
    const own = new Set(target.stageVersions.map((stageVersion) => stageVersion.name));
    const input = observingInput(target.namespace, target.stage, target.stageVersions, readable.config);
    try {
      for (const rule of await observedRules(executor, readable.config, input, ctx))
        if (sendsTo(rule, own) && !entry.rules.some((kept) => sameRule(kept, rule))) entry.rules.push(rule);
    } catch (err) {
      entry.failed = `${target.registration}: ${err instanceof Error ? err.message : String(err)}`.slice(0, 1024);
    }
  }
  for (const { namespace, stage, rules, failed } of byStage.values()) {
    if (failed !== undefined) {
      if (report.unreadable.length < 100) report.unreadable.push({ namespace, stage, message: failed });
      continue;
    }
    report.rules.push(...rules.map((rule) => ({ namespace, stage, ...rule })));
  }
  if (report.rules.length > MAX_REPORTED_RULES)
    throw new ExecutorError(
      `the landscape's Stages have ${report.rules.length} managed rules, more than a report holds (${MAX_REPORTED_RULES})`,
      false,
    );
  return report;
}
