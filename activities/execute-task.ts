/**
 * The activity every executor worker registers (`executeTask`, on konfidence-executor-<type>):
 * validates the configuration, routes traffic, verifies, and heartbeats so that a timeout or a
 * cancelled activation reaches the executor and stops it.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import type { k8s } from '../k8s/client.js';
import { ExecutorError, type Executor, type ExecutorContext, type TaskInput, type TaskResult } from '../executors/types.js';

const HEARTBEAT_MS = 1_000;

export function createExecutorActivities(executor: Executor<any>, kubeConfig: k8s.KubeConfig) {
  return {
    async executeTask(input: TaskInput): Promise<TaskResult> {
      const activity = Context.current();
      const parsed = executor.config.safeParse(input.config);
      if (!parsed.success) {
        const problems = parsed.error.issues.map((i) => `${['spec', ...i.path].join('.')}: ${i.message}`).join('; ');
        throw ApplicationFailure.nonRetryable(`invalid ${executor.type} spec: ${problems}`, 'InvalidExecutorSpec');
      }
      // Heartbeats carry cancellation to this activity; keep them flowing while the executor works.
      const ticker = setInterval(() => activity.heartbeat(), HEARTBEAT_MS);
      const ctx: ExecutorContext = { kubeConfig, signal: activity.cancellationSignal, heartbeat: (d) => activity.heartbeat(d) };
      const [from, to] = input.action === 'Apply' ? [input.previousStageVersion, input.stageVersion] : [input.stageVersion, input.previousStageVersion];
      try {
        if (!to) return { message: `nothing to revert: Stage ${input.stage} had no active StageVersion before` };
        const result = await executor.route(input, from, to, parsed.data, ctx);
        await executor.verify(input, from, to, parsed.data, ctx);
        return result;
      } catch (err) {
        if (err instanceof ExecutorError && !err.retryable) throw ApplicationFailure.nonRetryable(err.message, 'ExecutorError');
        throw err;
      } finally {
        clearInterval(ticker);
      }
    },
  };
}

export type ExecutorActivities = ReturnType<typeof createExecutorActivities>;
