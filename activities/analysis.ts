/**
 * The outside world a progressive activation asks: Prometheus, for an analysis' measurement (an
 * instant query; what it means is decisions/analysis.ts), and an HTTP check's URL.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { resultOf, type QueryResult } from '../decisions/analysis.js';

/** Longest wait for Prometheus' answer to one query: a measurement that takes longer is an Error. */
const QUERY_TIMEOUT_MS = 10_000;

const messageOf = (err: unknown) =>
  err instanceof Error
    ? err.cause instanceof Error
      ? `${err.message}: ${err.cause.message}`
      : err.message
    : String(err);

/** The body an HTTP check receives: who asks, about what, and where the progression is. */
export interface WebhookBody {
  activation: { namespace: string; name: string; uid: string };
  stage: string;
  stageVersion: string;
  previousStageVersion?: string;
  step: number;
  stepName?: string;
  weight: number;
}

export function analysisActivities(prometheusUrl?: string) {
  return {
    /** One measurement; never throws for what Prometheus answers or fails to answer: that is a verdict. */
    async measure(address: string | undefined, query: string): Promise<QueryResult> {
      const base = address ?? prometheusUrl;
      if (!base)
        return {
          error:
            "no Prometheus to ask: set the analysis' prometheus.address, or KONFIDENCE_PROMETHEUS_URL on the core worker",
          permanent: true,
        };
      const url = new URL('api/v1/query', base.endsWith('/') ? base : `${base}/`);
      url.searchParams.set('query', query);
      try {
        const res = await fetch(url, { signal: AbortSignal.timeout(QUERY_TIMEOUT_MS) });
        return resultOf(res.status, await res.json().catch(() => undefined));
      } catch (err) {
        return { error: `Prometheus at ${base} did not answer: ${messageOf(err)}` };
      }
    },

    /**
     * An HTTP check: POSTs the activation as JSON. 2xx passes; a 4xx refuses at once (no retry
     * changes the answer); a timeout, a network error or a 5xx fails this attempt, which the
     * workflow's retry policy repeats the check's `retries` times.
     */
    async callWebhook(
      url: string,
      body: WebhookBody,
      timeoutSeconds: number,
    ): Promise<{ status: number; message: string }> {
      let res: Response;
      try {
        res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
          signal: AbortSignal.timeout(timeoutSeconds * 1000),
        });
      } catch (err) {
        throw ApplicationFailure.retryable(
          `${url} did not answer within ${timeoutSeconds}s: ${messageOf(err)}`,
          'WebhookUnanswered',
        );
      }
      const text = (await res.text().catch(() => '')).slice(0, 512).trim();
      const said = `${url} answered ${res.status}${text ? `: ${text}` : ''}`;
      if (res.status >= 200 && res.status < 300) return { status: res.status, message: said };
      if (res.status >= 400 && res.status < 500) throw ApplicationFailure.nonRetryable(said, 'WebhookRefused');
      throw ApplicationFailure.retryable(said, 'WebhookFailed');
    },
  };
}
