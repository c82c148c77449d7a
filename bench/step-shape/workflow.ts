/**
 * The shape of one activation's steps with nothing of ours in it: a local activity phase (three
 * side by side, as the core writes an execution's final status, the step's status and the next
 * execution at once), then one activity on another worker's task queue (the executor's), per step;
 * one local activity before the first step and one after the last (the first and the final status).
 * Without `locals`, a step is the executor's activity alone (what the local activity phase adds).
 */
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { ShapeActivities } from './activities.js';

const local = proxyLocalActivities<ShapeActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 1 },
});

export async function shapeSteps(steps: number, executorQueue: string, writes: boolean, locals = true): Promise<void> {
  const executor = proxyActivities<ShapeActivities>({
    taskQueue: executorQueue,
    startToCloseTimeout: '30 seconds',
    retry: { maximumAttempts: 1 },
  });
  await local.bookkeeping(writes, 'start');
  for (let i = 0; i < steps; i++) {
    if (locals)
      await Promise.all(['status', 'previous', 'next'].map((what) => local.bookkeeping(writes, `${what}-${i}`)));
    await executor.route(writes, i);
  }
  await local.bookkeeping(writes, 'end');
}
