/**
 * Executor types that exist only in tests: `sleepy` takes as long as its spec says (to exceed a
 * registration's timeout) and records that cancellation reached it; `failing` always fails.
 */
import { z } from 'zod';
import type { Executor } from '../../executors/types.js';
import { ExecutorError } from '../../executors/types.js';

/** Executions that saw their cancellation (by execution name). */
export const stoppedExecutions = new Set<string>();
export const startedExecutions = new Set<string>();

export const sleepyExecutor: Executor<{ seconds: number }> = {
  type: 'sleepy',
  config: z.object({ seconds: z.number().min(0) }),
  routeNamespaces: () => [],
  async route(input, _from, to, config, ctx) {
    startedExecutions.add(input.execution.name);
    const until = Date.now() + config.seconds * 1000;
    while (Date.now() < until) {
      if (ctx.signal.aborted) {
        stoppedExecutions.add(input.execution.name);
        throw new Error('stopped: cancelled');
      }
      ctx.heartbeat();
      await new Promise((r) => setTimeout(r, 100));
    }
    return { message: `slept ${config.seconds}s, routed to ${to.name}` };
  },
  async verify() {},
};

export const failingExecutor: Executor<{ message?: string }> = {
  type: 'failing',
  config: z.object({ message: z.string().optional() }),
  routeNamespaces: () => [],
  async route(_input, _from, _to, config) {
    throw new ExecutorError(config.message ?? 'the backend refused the change');
  },
  async verify() {},
};
