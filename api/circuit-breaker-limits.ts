/**
 * The CircuitBreaker's fixed words and sizes, apart from its schemas: workflow code reads them
 * (decisions/breaker.ts), and a workflow must not load zod. Every workflow run evaluates its own
 * copy of the modules it imports, and building the api/ schemas cost each run milliseconds of CPU.
 */

/** Set on a breaker to close it by hand; answered in status.lastRequest under `konfidence.cloud/close=<value>`. */
export const ANNOTATION_CLOSE = 'konfidence.cloud/close';

/** How many recent failures and admissions a breaker keeps (status stays small). */
export const MAX_RECENT_FAILURES = 32;
export const MAX_ADMISSIONS = 64;
