/**
 * CircuitBreaker: stops new activations after too many failures, and limits how fast
 * routing changes go out. Objects live in the system namespace; each applies to one namespace or,
 * without `scope.namespace`, to all. Every breaker that applies must be Closed and have a token.
 * Rules: decisions/breaker.ts; guide: docs/scale.md.
 */
import { z } from 'zod';
import { defineKind, resourceSchema } from './kind.js';
import { dnsLabel, statusOf, timestamp } from './meta.js';

import { MAX_ADMISSIONS, MAX_RECENT_FAILURES } from './circuit-breaker-limits.js';

export { ANNOTATION_CLOSE, MAX_ADMISSIONS, MAX_RECENT_FAILURES } from './circuit-breaker-limits.js';

export const rateLimit = z.object({
  routingChanges: z
    .int()
    .min(1)
    .max(10_000)
    .describe('R: routing changes (plan steps) allowed per interval; also the burst.'),
  intervalSeconds: z.int().min(1).max(86_400).default(60).describe('The interval in which R tokens refill.'),
});

export const circuitBreakerSpec = z.object({
  scope: z
    .object({
      namespace: dnsLabel
        .optional()
        .describe('The namespace whose activations this breaker guards; absent: all namespaces.'),
    })
    .default({})
    .describe('Which activations the breaker guards.'),
  failureThreshold: z
    .int()
    .min(1)
    .max(MAX_RECENT_FAILURES)
    .default(3)
    .describe('K: the breaker opens when K activations fail within windowSeconds.'),
  windowSeconds: z.int().min(1).max(86_400).default(600).describe('W: the window of failures counted, in seconds.'),
  sleepWindowSeconds: z
    .int()
    .min(1)
    .max(7 * 86_400)
    .optional()
    .describe('An Open breaker opened by failures closes by itself after this long; absent: it closes only by hand.'),
  rateLimit: rateLimit.optional().describe('A token bucket of routing changes in the scope; absent: no limit.'),
});

export const circuitBreakerPhases = ['Closed', 'Open'] as const;
export type CircuitBreakerPhase = (typeof circuitBreakerPhases)[number];

export const recentFailure = z.object({
  activation: z.string().max(512).describe('namespace/name of the failed VectorActivation.'),
  key: z.string().max(512).describe('uid/attempt of the failure: one attempt counts once.'),
  time: timestamp,
});
export type RecentFailure = z.infer<typeof recentFailure>;

export const breakerRequest = z.object({
  token: z.string().max(1024).describe('<annotation>=<value> of the request, or cli-... for the CLI.'),
  outcome: z.enum(['Accepted', 'Refused']),
  message: z.string().max(4096),
  time: timestamp,
});

export const circuitBreakerStatus = statusOf(circuitBreakerPhases, {
  lastTransitionTime: timestamp.optional().describe('When the phase last changed.'),
  recentFailures: z
    .array(recentFailure)
    .max(MAX_RECENT_FAILURES)
    .optional()
    .describe('Failures within the window, oldest first.'),
  tokens: z.number().min(0).optional().describe('Tokens left in the bucket at lastRefill.'),
  lastRefill: timestamp.optional(),
  admissions: z
    .array(z.string().max(512))
    .max(MAX_ADMISSIONS)
    .optional()
    .describe('Recent admissions (uid/attempt/step) that took a token: a repeated admit does not take twice.'),
  lastRequest: breakerRequest.optional().describe('The last close or open asked by hand and what became of it.'),
  handledClose: z
    .string()
    .max(1024)
    .optional()
    .describe('The value of the last konfidence.cloud/close annotation applied: each value acts once.'),
});
export type CircuitBreakerStatus = z.infer<typeof circuitBreakerStatus>;

export const CircuitBreaker = defineKind({
  kind: 'CircuitBreaker',
  plural: 'circuitbreakers',
  singular: 'circuitbreaker',
  shortNames: ['cb'],
  description:
    'Stops new activations after K failures within a window, and rate-limits routing changes, in one namespace or all.',
  spec: circuitBreakerSpec,
  status: circuitBreakerStatus,
  printerColumns: [
    { name: 'Namespace-Scope', type: 'string', jsonPath: '.spec.scope.namespace' },
    { name: 'Threshold', type: 'integer', jsonPath: '.spec.failureThreshold' },
    { name: 'Reason', type: 'string', jsonPath: '.status.reason' },
    { name: 'Since', type: 'date', jsonPath: '.status.lastTransitionTime' },
  ],
});
export const circuitBreakerResource = resourceSchema(CircuitBreaker);
export type CircuitBreakerResource = z.infer<typeof circuitBreakerResource>;

/** What a breaker guards, as the metric and messages name it. */
export const breakerScope = (spec: { scope?: { namespace?: string | undefined } }) => spec.scope?.namespace ?? 'all';
