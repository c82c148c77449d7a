/**
 * Kubernetes errors that no retry can mend become non-retryable activity failures: a 4xx other
 * than 409 (conflict) and 429 (throttled) means the request itself is wrong (a name or label over
 * its limit, a field over its maximum, a forbidden verb) and would fail the same way forever.
 * So does an object that does not match its schema. Everything else (5xx, a dropped connection)
 * is retried within the activity's bounded policy.
 */
import { ApplicationFailure } from '@temporalio/activity';
import { apiMessage, apiStatus } from '../k8s/client.js';
import { InvalidObjectError } from '../k8s/typed.js';
import { NameTakenError } from '../k8s/custom-objects.js';

const REASONS: Record<number, string> = { 400: 'BadRequest', 403: 'Forbidden', 404: 'NotFound', 422: 'Invalid' };

export function permanent(err: unknown): boolean {
  const code = apiStatus(err);
  return code !== undefined && code >= 400 && code < 500 && code !== 409 && code !== 429;
}

/** The failure an activity throws for `err`, naming the operation and the apiserver's answer. */
export function activityFailure(err: unknown, operation: string): unknown {
  // An object that does not match its schema (written around the CRD's validation) stays so.
  if (err instanceof InvalidObjectError)
    return ApplicationFailure.nonRetryable(`${operation}: ${err.message}`, 'InvalidObject');
  // Someone else's object under the name we need stays someone else's.
  if (err instanceof NameTakenError) return ApplicationFailure.nonRetryable(err.message, 'NameTaken');
  if (!permanent(err)) return err;
  const code = apiStatus(err)!;
  const hint = code === 403 ? " (grant the permission to the controller's ServiceAccount)" : '';
  return ApplicationFailure.nonRetryable(
    `${operation}: the apiserver refused with HTTP ${code}: ${apiMessage(err)}${hint}`,
    REASONS[code] ?? 'KubernetesRefused',
  );
}

/** Wraps every function of an activity set so that permanent apiserver errors fail fast. */
export function failFastOnPermanentErrors<T extends Record<string, (...args: any[]) => Promise<unknown>>>(
  activities: T,
): T {
  const wrapped: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(activities)) {
    wrapped[name] = async (...args: unknown[]) => {
      try {
        return await fn(...args);
      } catch (err) {
        throw activityFailure(err, name);
      }
    };
  }
  return wrapped as T;
}
