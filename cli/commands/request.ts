/**
 * `cancel VA` and `retry VA`, the way a kubectl user asks: the konfidence.cloud/cancel or
 * konfidence.cloud/retry annotation with a fresh value, which the watcher hands to the workflow once
 * and answers in status.requests under the token `<annotation>=<value>`. The CLI waits for the
 * answer to its own token, so a repeated call is a new request and an old answer is never mistaken
 * for this one.
 */
import { randomBytes } from 'node:crypto';
import { requestToken } from '../../decisions/watcher.js';
import type { RequestAction } from '../../decisions/activation.js';
import { ANNOTATION_CANCEL, ANNOTATION_RETRY } from '../../shared/activation.js';
import { parseDuration } from '../args.js';
import { stringOption, type Command } from '../command.js';
import { CliError, EXIT } from '../exit-codes.js';
import { requestExitCode } from '../outcome.js';

const DEFAULT_TIMEOUT = '60s';
const POLL_MS = 300;
const ANNOTATION: Record<RequestAction, string> = { cancel: ANNOTATION_CANCEL, retry: ANNOTATION_RETRY };

function requestCommand(action: RequestAction, summary: string, description: string): Command {
  return {
    name: action,
    summary,
    description: [
      description,
      `Sets the annotation ${ANNOTATION[action]} to a fresh value (what "kubectl annotate va NAME ${ANNOTATION[action]}=VALUE --overwrite"`,
      'does), waits for the watcher to answer it in status.requests, and prints Accepted or Refused with the reason.',
      'Exit 0 when accepted, 1 when refused, 5 when no answer came within --timeout (the request stays and is',
      'answered once the watcher runs).',
    ].join('\n'),
    positionals: [{ name: 'VECTORACTIVATION', required: true, description: 'name of the VectorActivation' }],
    options: [{ name: 'timeout', value: 'DURATION', description: `how long to wait for the answer (default ${DEFAULT_TIMEOUT})` }],
    examples: [`${action} shop-7-3f9a2c -n team-a`],
    async validate(args) {
      parseDuration('timeout', stringOption(args, 'timeout') ?? DEFAULT_TIMEOUT);
    },
    async run(ctx, args) {
      const [name] = args.positionals as [string];
      const timeoutMs = parseDuration('timeout', stringOption(args, 'timeout') ?? DEFAULT_TIMEOUT);
      const va = await ctx.activation(name);
      if (va.metadata.deletionTimestamp) throw new CliError(EXIT.failed, `VectorActivation ${ctx.namespace}/${name} is being deleted; its workflow is stopped already`);
      const value = `cli-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
      const token = requestToken(action, value);
      if (!(await ctx.objects.mergeMetadata('VectorActivation', ctx.namespace, name, { annotations: { [ANNOTATION[action]]: value } }))) await ctx.activation(name);

      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const now = await ctx.activation(name);
        if (now.metadata.uid !== va.metadata.uid) throw new CliError(EXIT.failed, `VectorActivation ${ctx.namespace}/${name} was deleted and created again while waiting for the answer`);
        const answer = now.status?.requests?.find((r) => r.action === action && r.token === token);
        if (answer) {
          ctx.print({ name, namespace: ctx.namespace, ...answer, phase: now.status?.phase }, () => `${answer.outcome}: ${answer.message.replace(/^(accepted|refused): /i, '')}`);
          return requestExitCode(answer.outcome);
        }
        if (Date.now() >= deadline) {
          throw new CliError(
            EXIT.timeout,
            `no answer to ${token} on VectorActivation ${ctx.namespace}/${name} within ${Math.round(timeoutMs / 1000)}s: the watcher answers these requests; check that it runs (kubectl get controllerstatus -A). The annotation stays and is answered when it does.`,
          );
        }
        await new Promise((r) => setTimeout(r, POLL_MS));
      }
    },
  };
}

export const cancel = requestCommand(
  'cancel',
  'cancel a VectorActivation (accepted, or refused with the reason)',
  'Stops an activation: a waiting one leaves the queue, a running one cancels its executions (reverted if the\nplan says so). A Succeeded or Skipped activation cannot be cancelled; a Failed or Cancelled one closes its\nretry window.',
);

export const retry = requestCommand(
  'retry',
  'retry a Failed or Cancelled VectorActivation (accepted, or refused with the reason)',
  'Runs a Failed or Cancelled activation again from its first unfinished step, under the same lock and\nordering rules (it may end Skipped if something newer became active meanwhile).',
);
