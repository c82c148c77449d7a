/**
 * Executor types that exist only in tests: `sleepy` takes as long as its spec says (to exceed a
 * registration's timeout), records that cancellation reached it, and with `records` says it
 * manages a rule (so that a revert puts it back); `failing` always fails.
 */
import { z } from 'zod';
import type { Executor } from '../../executors/types.js';
import { ExecutorError } from '../../executors/types.js';

/** Executions that saw their cancellation (by execution name). */
export const stoppedExecutions = new Set<string>();
export const startedExecutions = new Set<string>();

export const sleepyExecutor: Executor<{ seconds: number; records?: boolean }> = {
  type: 'sleepy',
  config: z.object({ seconds: z.number().min(0), records: z.boolean().optional() }),
  routeKinds: [],
  routeNamespaces: () => [],
  // With `records`, it says it manages one (imaginary) rule: a revert then puts it back.
  observe: async (input, config) =>
    config.records
      ? [
          {
            route: {
              group: 'test.konfidence.cloud',
              kind: 'Sleep',
              namespace: input.namespace,
              name: input.execution.name,
            },
            index: 0,
            entries: [],
            traffic: {},
          },
        ]
      : [],
  async route(input, assignment, config, ctx) {
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
    return { message: `slept ${config.seconds}s, routed to ${Object.keys(assignment).join('+')}` };
  },
  async verify() {},
  restore: async () => ({ message: 'nothing recorded, nothing to restore' }),
};

export const failingExecutor: Executor<{ message?: string }> = {
  type: 'failing',
  config: z.object({ message: z.string().optional() }),
  routeKinds: [],
  routeNamespaces: () => [],
  observe: async () => [],
  async route(_input, _assignment, config) {
    throw new ExecutorError(config.message ?? 'the backend refused the change');
  },
  async verify() {},
  restore: async () => ({ message: 'nothing recorded, nothing to restore' }),
};
