/**
 * Following one VectorActivation to its final phase (activate --wait): polls its status, prints each
 * phase change, and ends with the exit code waitOutcome gives, or 5 at the deadline.
 */
import { isFinal } from '../decisions/activation.js';
import type { Context } from './context.js';
import { CliError, EXIT, type ExitCode } from './exit-codes.js';
import { waitOutcome } from './outcome.js';
import { formatTime } from './table.js';

const POLL_MS = 500;
/** Consecutive failed reads tolerated (an apiserver restart) before the error is the answer. */
const READ_FAILURES_TOLERATED = 20;

export async function followToFinal(
  ctx: Context,
  name: string,
  timeoutMs: number,
  extra: Record<string, unknown>,
): Promise<ExitCode> {
  const deadline = Date.now() + timeoutMs;
  let printed = '';
  let failures = 0;
  for (;;) {
    let va: Awaited<ReturnType<Context['activation']>> | undefined;
    try {
      va = await ctx.activation(name);
      failures = 0;
    } catch (err) {
      if (err instanceof CliError)
        throw new CliError(EXIT.failed, `VectorActivation ${ctx.namespace}/${name} was deleted while waiting for it`);
      if (++failures > READ_FAILURES_TOLERATED) throw err;
    }
    const s = va?.status;
    const line = s?.phase
      ? `${s.phase}${s.reason ? ` (${s.reason})` : ''}${s.attempt && s.attempt > 1 ? `, attempt ${s.attempt}` : ''}`
      : '';
    if (va && line && line !== printed && !ctx.json) {
      ctx.io.out(
        `${formatTime(new Date())}  ${name}  ${line}${isFinal(s?.phase) && s?.message ? `: ${s.message}` : ''}`,
      );
      printed = line;
    }
    const outcome = waitOutcome(s?.phase, s?.reason);
    if (outcome.done) {
      if (ctx.json)
        ctx.io.out(
          JSON.stringify(
            {
              name,
              namespace: ctx.namespace,
              ...extra,
              phase: s!.phase,
              reason: s?.reason,
              message: s?.message,
              attempt: s?.attempt,
              verdict: outcome.verdict,
            },
            null,
            2,
          ),
        );
      else ctx.io.out(`${name}: ${outcome.verdict}`);
      return outcome.code;
    }
    if (Date.now() >= deadline) {
      throw new CliError(
        EXIT.timeout,
        `VectorActivation ${ctx.namespace}/${name} is still ${s?.phase ?? 'Pending'} after ${Math.round(timeoutMs / 1000)}s; it goes on: follow it with "${ctx.settings.program} status ${va?.spec.stage ?? ''} -n ${ctx.namespace}", or wait longer with --timeout`,
      );
    }
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
