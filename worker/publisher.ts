/**
 * Publishes the leading replica of a role in `status.activeController` of the role's
 * ControllerStatus in the system namespace, so a person or a client finds the active controller
 * in one request (`kubectl get controllerstatus -n konfidence-system`). The rules are in
 * decisions/publish.ts; this file does the I/O:
 * - a loop, started next to the leader elector, never in standalone mode (one replica without
 *   election leaves the field absent, so a plain install behaves as before);
 * - a pass asks the elector once; a replica that does not lead returns before touching the
 *   apiserver and checks again after `leadershipCheckMs` (2 s), so a new leader publishes within
 *   about 2 s of acquiring its Lease; a leader passes every `publishIntervalMs`;
 * - a pass about to write asks the elector once more, after its read and right before the write
 *   (fencing): a leader paused between its check and its write, that lost its Lease meanwhile,
 *   does not publish itself once resumed (the pass counts as not leading);
 * - the object is created if missing (spec only); the status is merge-patched only when the
 *   decision says so, so a converged pass leaves resourceVersion as it is;
 * - a refused endpoint (empty or the shipped placeholder) is logged, once per change, and nothing
 *   is written; errors are logged and the loop goes on;
 * - nothing ever clears the field: a replica stops publishing only by losing leadership, and the
 *   next leader overwrites it (lastUpdated says how fresh a claim is).
 */
import { readFileSync } from 'node:fs';
import { API_VERSION, DEFAULT_SYSTEM_NAMESPACE } from '../api/group.js';
import {
  ControllerStatus,
  DEFAULT_SHARD,
  controllerStatusName,
  controllerStatusStatus,
  type ControllerRole,
} from '../api/controller-status.js';
import {
  DEFAULT_LEADERSHIP_CHECK_MS,
  DEFAULT_PUBLISH_INTERVAL_MS,
  decidePublish,
  nextWaitMs,
  refusal,
  type PublishDecision,
} from '../decisions/publish.js';
import { apiMessage, type k8s } from '../k8s/client.js';
import { CustomObjects } from '../k8s/custom-objects.js';

export { PLACEHOLDER_ENDPOINT } from '../decisions/publish.js';

/**
 * What the publisher needs of the leader elector (k8s/leader-election.ts implements it). Declared
 * here, structurally, so the publisher is testable without a Lease.
 */
export interface Leadership {
  readonly identity: string;
  isLeader(): boolean;
  leaderSince(): Date | undefined;
}

export interface PublisherOptions {
  kubeConfig: k8s.KubeConfig;
  systemNamespace?: string;
  role: ControllerRole;
  shard?: string;
  leadership: Leadership;
  /** Where this process serves health and metrics (see endpointFromEnv). */
  endpoint: string;
  /** Version this process runs (see versionFromEnv). */
  version: string;
  publishIntervalMs?: number;
  leadershipCheckMs?: number;
  log?: (message: string) => void;
  /** The clock (tests). */
  now?: () => Date;
}

export interface PassResult {
  decision: PublishDecision;
  /** resourceVersion after the pass, when it read or wrote the object. */
  resourceVersion?: string;
}

export interface Publisher {
  /** One pass now (a promotion need not wait for the loop); passes never overlap. */
  publishOnce(): Promise<PassResult>;
  /** Stops the loop and waits for a pass in flight. */
  stop(): Promise<void>;
}

/** The endpoint from KONFIDENCE_ENDPOINT (e.g. http://127.0.0.5:8081); unset is empty, so refused. */
export function endpointFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  return env.KONFIDENCE_ENDPOINT ?? '';
}

/** KONFIDENCE_VERSION, else package.json's version. */
export function versionFromEnv(env: NodeJS.ProcessEnv = process.env): string {
  if (env.KONFIDENCE_VERSION) return env.KONFIDENCE_VERSION;
  try {
    // Next to the sources, or two levels up when this runs compiled from dist/worker/.
    const pkg = JSON.parse(
      readFileSync(
        new URL(import.meta.url.endsWith('.ts') ? '../package.json' : '../../package.json', import.meta.url),
        'utf8',
      ),
    ) as { version?: string };
    return pkg.version ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

export function startPublisher(o: PublisherOptions): Publisher {
  const namespace = o.systemNamespace ?? DEFAULT_SYSTEM_NAMESPACE;
  const shard = o.shard ?? DEFAULT_SHARD;
  const name = controllerStatusName(o.role, shard);
  const timing = {
    publishIntervalMs: o.publishIntervalMs ?? DEFAULT_PUBLISH_INTERVAL_MS,
    leadershipCheckMs: o.leadershipCheckMs ?? DEFAULT_LEADERSHIP_CHECK_MS,
  };
  const log = o.log ?? ((m: string) => console.log(m));
  const now = o.now ?? (() => new Date());
  const objects = new CustomObjects(o.kubeConfig);
  const what = `ControllerStatus ${namespace}/${name}`;

  let stopped = false;
  let lastReason: string | undefined;
  let wake: (() => void) | undefined;
  let timer: NodeJS.Timeout | undefined;
  let chain: Promise<unknown> = Promise.resolve();

  /** Logs what a pass did when it differs from the previous pass (a converged loop stays quiet). */
  function report(decision: PublishDecision): void {
    if (decision.write) {
      const a = decision.activeController;
      log(
        `publisher: ${what}: published ${a.identity} at ${a.endpoint} (version ${a.version}, leading since ${a.leaderSince}; ${decision.reason})`,
      );
    } else if (decision.reason !== lastReason) {
      const why: Record<typeof decision.reason, string> = {
        'not-leader': `${o.leadership.identity} does not lead ${o.role}; checking again every ${timing.leadershipCheckMs} ms`,
        'empty-endpoint': `refusing to publish ${o.leadership.identity}: no endpoint configured (set KONFIDENCE_ENDPOINT to the URL of its health and metrics); nothing is published, reconciling goes on`,
        'placeholder-endpoint': `refusing to publish ${o.leadership.identity}: its endpoint is the shipped placeholder ${o.endpoint} (set KONFIDENCE_ENDPOINT to a reachable URL); nothing is published, reconciling goes on`,
        converged: `${o.leadership.identity} is published and current`,
      };
      log(`publisher: ${what}: ${why[decision.reason]}`);
    }
    lastReason = decision.write ? 'published' : decision.reason;
  }

  async function pass(): Promise<PassResult> {
    // One read of leadership decides the pass (the decision and the next wait both follow from
    // it); a pass about to write asks once more, right before the write (the fence below).
    const leading = o.leadership.isLeader();
    const refused = refusal({ leading, endpoint: o.endpoint });
    if (refused) return { decision: { write: false, reason: refused } };
    let object = await objects.get(ControllerStatus.kind, namespace, name);
    if (!object) {
      ({ object } = await objects.create({
        apiVersion: API_VERSION,
        kind: ControllerStatus.kind,
        metadata: { name, namespace },
        spec: { role: o.role, shard },
      }));
    }
    // A status that does not match the schema (written by hand, or by an older version) counts
    // as nothing published: it is overwritten.
    const parsed = controllerStatusStatus.safeParse(object.status ?? {});
    const decision = decidePublish({
      leading,
      identity: o.leadership.identity,
      endpoint: o.endpoint,
      version: o.version,
      leaderSince: o.leadership.leaderSince(),
      now: now(),
      published: parsed.success ? parsed.data : undefined,
    });
    if (!decision.write) return { decision, resourceVersion: object.metadata.resourceVersion };
    // Fencing: the read above took time, and a replica paused between its first check and here
    // (GC, a stopped container, a slow apiserver) may have lost its Lease meanwhile; once resumed
    // it must not publish itself over the new leader. So leadership is asked again right before
    // the write. (The next wait still follows from the decision returned, so a pass fenced here
    // waits the short leadership check.)
    if (!o.leadership.isLeader())
      return { decision: { write: false, reason: 'not-leader' }, resourceVersion: object.metadata.resourceVersion };
    if (
      !(await objects.patchStatus(ControllerStatus.kind, namespace, name, {
        phase: 'Active',
        activeController: decision.activeController,
      }))
    ) {
      throw new Error(`${what} disappeared before its status could be written`);
    }
    return { decision };
  }

  function publishOnce(): Promise<PassResult> {
    const run = chain.then(async () => {
      const result = await pass();
      report(result.decision);
      return result;
    });
    chain = run.catch(() => undefined);
    return run;
  }

  function sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      wake = resolve;
      timer = setTimeout(resolve, ms);
    });
  }

  async function loop(): Promise<void> {
    while (!stopped) {
      let outcome: PublishDecision | 'error';
      try {
        outcome = (await publishOnce()).decision;
      } catch (err) {
        outcome = 'error';
        lastReason = 'error';
        log(`publisher: ${what}: pass failed, trying again in ${nextWaitMs('error', timing)} ms: ${apiMessage(err)}`);
      }
      if (stopped) break;
      await sleep(nextWaitMs(outcome, timing));
    }
  }

  const running = loop();

  return {
    publishOnce,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      wake?.();
      await running;
      await chain;
    },
  };
}
