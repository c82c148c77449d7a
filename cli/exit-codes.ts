/**
 * Exit codes and the errors that carry them. Scripts branch on the code, people read the message:
 * every message names the object and what to do. Pure: table-tested in test/unit/cli-exit.test.ts.
 * No import of @kubernetes/client-node here: loading it takes seconds, and help and usage errors
 * must answer at once (its ApiException is recognised by shape).
 */
import { statusMessage } from '../k8s/status-message.js';

export const EXIT = {
  /** Done; for activate --wait: the StageVersion asked for serves the traffic. */
  ok: 0,
  /** The operation was refused or failed: a refused cancel/retry, an activation that did not succeed, a forbidden call. */
  failed: 1,
  /** The command line is wrong: unknown command or flag, missing or extra argument, bad value. */
  usage: 2,
  /** A named object (Stage, StageVersion, VectorActivation) does not exist. */
  notFound: 3,
  /** The Kubernetes API server cannot be reached. */
  unreachable: 4,
  /** A deadline (--timeout) passed before the answer or the final phase came. */
  timeout: 5,
} as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export class CliError extends Error {
  override name = 'CliError';
  constructor(
    readonly code: ExitCode,
    message: string,
  ) {
    super(message);
  }
}

export const usageError = (message: string) => new CliError(EXIT.usage, message);
export const notFound = (what: string, namespace: string, hint: string) =>
  new CliError(EXIT.notFound, `${what} not found in namespace ${namespace}: ${hint}`);

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'EPIPE',
  'CERT_HAS_EXPIRED',
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'SELF_SIGNED_CERT_IN_CHAIN',
]);

/** The system error code of a failed connection (node-fetch FetchError, or a cause chain), if any. */
export function networkCode(err: unknown): string | undefined {
  for (
    let e = err as { code?: unknown; cause?: unknown } | undefined, depth = 0;
    e && depth < 5;
    e = e.cause as typeof e, depth++
  ) {
    if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return e.code;
  }
  return undefined;
}

/** An apiserver answer other than 2xx (@kubernetes/client-node's ApiException: code, body, headers). */
function isApiException(err: unknown): err is { code: number; body: unknown } {
  return (
    err instanceof Error && typeof (err as { code?: unknown }).code === 'number' && 'body' in err && 'headers' in err
  );
}

/** What a failure means for the exit code. */
export function exitCodeOf(err: unknown): ExitCode {
  if (err instanceof CliError) return err.code;
  if (isApiException(err)) return err.code === 404 ? EXIT.notFound : EXIT.failed;
  if (networkCode(err)) return EXIT.unreachable;
  return EXIT.failed;
}

/** The line printed for a failure: the apiserver's own message, or what to check when it cannot be reached. */
export function describeError(err: unknown, server: string | undefined): string {
  if (err instanceof CliError) return err.message;
  if (isApiException(err)) {
    const message = statusMessage(err.body, err.code);
    if (err.code === 401 || err.code === 403)
      return `the Kubernetes API server refused the call (HTTP ${err.code}): ${message}; check your credentials and RBAC (kubectl auth can-i)`;
    return `the Kubernetes API server answered HTTP ${err.code}: ${message}`;
  }
  const code = networkCode(err);
  if (code)
    return `cannot reach the Kubernetes API server ${server ?? ''} (${code}): check --kubeconfig / KUBECONFIG and that the cluster is up`.replace(
      '  ',
      ' ',
    );
  return err instanceof Error ? err.message : String(err);
}
