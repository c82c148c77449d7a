/**
 * `cancel VA`, `retry VA`, and a progressive activation's `approve VA`, `promote VA` and `abort VA`,
 * the way a kubectl user asks: the request's annotation (konfidence.cloud/cancel, ...) with a fresh
 * value, which the watcher hands to the workflow once and answers in status.requests under the
 * token `<annotation>=<value>`. Approve, promote and abort start the value with the caller's user
 * name, as the admission policy requires, so the status says who asked. The CLI waits for the
 * answer to its own token, so a repeated call is a new request and an old answer is never mistaken
 * for this one.
 */
import { randomBytes } from 'node:crypto';
import { REQUEST_ANNOTATIONS, requestToken, type AnnotationRequest } from '../../decisions/watcher.js';
import type { k8s } from '../../k8s/client.js';
import { parseDuration } from '../args.js';
import { stringOption, type Command } from '../command.js';
import { CliError, EXIT } from '../exit-codes.js';
import { requestExitCode } from '../outcome.js';

const DEFAULT_TIMEOUT = '60s';
const POLL_MS = 300;
const SIGNED = new Set<AnnotationRequest>(['approve', 'promote', 'abort']);

/** The caller's user name as the apiserver knows it (what `kubectl auth whoami` prints). */
export async function whoAmI(kc: k8s.KubeConfig): Promise<string> {
  // Loaded here, not with the module: help and usage errors need no Kubernetes client.
  const { k8s: client } = await import('../../k8s/client.js');
  const review = await kc
    .makeApiClient(client.AuthenticationV1Api)
    .createSelfSubjectReview({ body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' } });
  const name = review.status?.userInfo?.username;
  if (!name)
    throw new CliError(
      EXIT.failed,
      'the apiserver did not say who you are (SelfSubjectReview): cannot sign the request',
    );
  if (name.includes(' '))
    throw new CliError(
      EXIT.failed,
      `your user name "${name}" has a space, which an annotation cannot carry: send the Update (approve, promote, abort) from the Temporal UI or CLI instead`,
    );
  return name;
}

function requestCommand(action: AnnotationRequest, summary: string, description: string): Command {
  return {
    name: action,
    summary,
    description: [
      description,
      `Sets the annotation ${REQUEST_ANNOTATIONS[action]} to a fresh value (what "kubectl annotate va NAME ${REQUEST_ANNOTATIONS[action]}=VALUE --overwrite"`,
      'does), waits for the watcher to answer it in status.requests, and prints Accepted or Refused with the reason.',
      'Exit 0 when accepted, 1 when refused, 5 when no answer came within --timeout (the request stays and is',
      'answered once the watcher runs).',
    ].join('\n'),
    positionals: [{ name: 'VECTORACTIVATION', required: true, description: 'name of the VectorActivation' }],
    options: [
      {
        name: 'timeout',
        value: 'DURATION',
        description: `how long to wait for the answer (default ${DEFAULT_TIMEOUT})`,
      },
    ],
    examples: [`${action} shop-7-3f9a2c -n team-a`],
    async validate(args) {
      parseDuration('timeout', stringOption(args, 'timeout') ?? DEFAULT_TIMEOUT);
    },
    async run(ctx, args) {
      const [name] = args.positionals as [string];
      const timeoutMs = parseDuration('timeout', stringOption(args, 'timeout') ?? DEFAULT_TIMEOUT);
      const va = await ctx.activation(name);
      if (va.metadata.deletionTimestamp)
        throw new CliError(
          EXIT.failed,
          `VectorActivation ${ctx.namespace}/${name} is being deleted; its workflow is stopped already`,
        );
      const fresh = `cli-${Date.now().toString(36)}-${randomBytes(3).toString('hex')}`;
      const value = SIGNED.has(action) ? `${await whoAmI(ctx.kc)} ${fresh}` : fresh;
      const token = requestToken(action, value);
      if (
        !(await ctx.objects.mergeMetadata('VectorActivation', ctx.namespace, name, {
          annotations: { [REQUEST_ANNOTATIONS[action]]: value },
        }))
      )
        await ctx.activation(name);

      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const now = await ctx.activation(name);
        if (now.metadata.uid !== va.metadata.uid)
          throw new CliError(
            EXIT.failed,
            `VectorActivation ${ctx.namespace}/${name} was deleted and created again while waiting for the answer`,
          );
        const answer = now.status?.requests?.find((r) => r.action === action && r.token === token);
        if (answer) {
          ctx.print(
            { name, namespace: ctx.namespace, ...answer, phase: now.status?.phase },
            () => `${answer.outcome}: ${answer.message.replace(/^(accepted|refused): /i, '')}`,
          );
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

export const approve = requestCommand(
  'approve',
  'approve a progressive activation waiting at a gate (accepted, or refused with the reason)',
  'Ends the pause, approval or inconclusive analysis a progressive activation waits at: its next step runs.\nRefused when nothing waits for an approval. The status records who approved and when.',
);

export const promote = requestCommand(
  'promote',
  'promote a progressive activation: skip its remaining steps and gates, switch to 100 %',
  'Skips every remaining weight, pause, approval and analysis of a progressive activation: the new StageVersion\nreceives all traffic now and the activation succeeds. Refused once the switch runs or the activation ended.',
);

export const abort = requestCommand(
  'abort',
  'abort a progressive activation: put its traffic back and fail it',
  "Puts a progressive activation's traffic back as recorded before it (down its plan's abort weights first, if\nany) and ends it Failed. Refused once it Succeeded: activate the previous StageVersion to go back then.",
);
