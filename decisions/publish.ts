/**
 * Whether a replica writes `status.activeController` of its ControllerStatus in one pass, and how
 * long the publisher waits before the next pass (worker/publisher.ts does the I/O). Pure;
 * table-tested in test/unit/publish.test.ts. The rules follow kubeslice's status.activeController
 * publisher (the high-availability design):
 * - only the leader writes, and it writes continuously, not only at promotion;
 * - a converged pass writes nothing: the comparison leaves out `lastUpdated`, which would make
 *   every pass differ from the last and turn each pass into a write;
 * - an empty endpoint or the shipped placeholder is refused: advertising an unreachable address is
 *   worse than advertising nothing; refusing is no error, the replica keeps reconciling;
 * - the next wait is chosen from what the pass did: a pass that found this replica not leading
 *   waits the short leadership check, so a new leader publishes within about one check of
 *   acquiring its Lease (a second read of isLeader() for the wait could miss leadership arriving
 *   between the two reads and cost a whole publish interval).
 */
import type { ActiveController } from '../api/controller-status.js';

/** The endpoint deploy manifests ship until an installation sets its own: never published. */
export const PLACEHOLDER_ENDPOINT = 'http://konfidence.invalid:8081';

export const DEFAULT_PUBLISH_INTERVAL_MS = 30_000;
export const DEFAULT_LEADERSHIP_CHECK_MS = 2_000;

export interface PublishInput {
  /** What this pass's one isLeader() call answered. */
  leading: boolean;
  identity: string;
  /** Where this replica serves health and metrics. */
  endpoint: string;
  version: string;
  /** Since when the elector says this replica leads (undefined: it does not know). */
  leaderSince: Date | undefined;
  now: Date;
  /** status of the ControllerStatus as read in this pass (undefined: not read, or none). */
  published?: { phase?: string; activeController?: ActiveController } | undefined;
}

export type Refusal = 'not-leader' | 'empty-endpoint' | 'placeholder-endpoint';

export type PublishDecision =
  | { write: false; reason: Refusal | 'converged' }
  | { write: true; reason: 'first-publish' | 'changed'; activeController: ActiveController };

/** Why this pass publishes nothing whatever is published; undefined when the published value decides. */
export function refusal(input: Pick<PublishInput, 'leading' | 'endpoint'>): Refusal | undefined {
  if (!input.leading) return 'not-leader';
  const endpoint = input.endpoint.trim();
  if (endpoint === '') return 'empty-endpoint';
  if (sameEndpoint(endpoint, PLACEHOLDER_ENDPOINT)) return 'placeholder-endpoint';
  return undefined;
}

/** Placeholder with or without a trailing slash is still the placeholder. */
function sameEndpoint(a: string, b: string): boolean {
  const norm = (s: string) => s.replace(/\/+$/, '').toLowerCase();
  return norm(a) === norm(b);
}

/** Same instant, whatever the precision or offset each side was written with. */
function sameInstant(a: string, b: string): boolean {
  const x = Date.parse(a);
  const y = Date.parse(b);
  return !Number.isNaN(x) && x === y;
}

export function decidePublish(input: PublishInput): PublishDecision {
  const refused = refusal(input);
  if (refused) return { write: false, reason: refused };
  const current = input.published?.activeController;
  // An elector that does not (yet) know since when it leads: keep our own published instant, so
  // the value stays stable and converges; else now.
  const leaderSince =
    input.leaderSince?.toISOString() ??
    (current && current.identity === input.identity ? current.leaderSince : input.now.toISOString());
  const wanted: ActiveController = {
    identity: input.identity,
    endpoint: input.endpoint.trim(),
    version: input.version,
    leaderSince,
    lastUpdated: input.now.toISOString(),
  };
  if (!current) return { write: true, reason: 'first-publish', activeController: wanted };
  const converged =
    input.published?.phase === 'Active' &&
    current.identity === wanted.identity &&
    current.endpoint === wanted.endpoint &&
    current.version === wanted.version &&
    sameInstant(current.leaderSince, wanted.leaderSince);
  return converged
    ? { write: false, reason: 'converged' }
    : { write: true, reason: 'changed', activeController: wanted };
}

export interface PublishTiming {
  publishIntervalMs: number;
  leadershipCheckMs: number;
}

/**
 * The wait after a pass, from what that pass did: not leading → the leadership check (a new leader
 * publishes within about one check); published, converged or refused while leading → the publish
 * interval; a failed pass ('error') → the leadership check, so a leader whose write failed tries
 * again soon instead of staying unannounced for a whole interval.
 */
export function nextWaitMs(outcome: PublishDecision | 'error', timing: PublishTiming): number {
  if (outcome === 'error') return Math.min(timing.leadershipCheckMs, timing.publishIntervalMs);
  if (!outcome.write && outcome.reason === 'not-leader')
    return Math.min(timing.leadershipCheckMs, timing.publishIntervalMs);
  return timing.publishIntervalMs;
}
