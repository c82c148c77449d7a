/**
 * Requests are the truth: on the local gateway (Traefik, scripts/env/gateway.ts), with every
 * StageVersion a real server on its Service's loopback address (scripts/apps/local-apps.ts), a
 * steady load of 200 requests a second over kept-alive and fresh connections records every request
 * (scripts/apps/load.ts), and the requests judge each activation path (scripts/apps/judge.ts): none
 * fails unless its app was told to fail it; in every weight window of at least 400 requests the new
 * version's share is within 5 points of what the Stage's status records; after Succeeded, every
 * request reaches the new version.
 */
import { LocalApps } from '../scripts/apps/local-apps.js';
import { allOnAfter, unexpectedFailures, weightWindows, type RecordedWeight } from '../scripts/apps/judge.js';
import { startLoad, type Sent } from '../scripts/apps/load.js';
import { pollUntil } from '../scripts/env/process.js';
import { activate } from './support/scenario.js';
import { gatewayUrl, hostOf, recordWeights, routedTo, seedServed } from './support/data-plane.js';
import { startSlowGateway, type SlowGateway } from './support/slow-gateway.js';
import { create, object, phaseIs, startTestSystem, type TestSystem } from './support/system.js';

let s: TestSystem;
let apps: LocalApps;
beforeAll(async () => {
  s = await startTestSystem('data-plane', { watcherCheckIntervalMs: 1000 });
  apps = new LocalApps({ kubeConfig: s.kc, namespaces: [s.ns] });
  await apps.start();
});
afterAll(async () => {
  await apps?.stop();
  await s?.stop();
});

/** Split tolerance (points) and the least requests a judged window holds. */
const TOLERANCE = 5;
const MIN_WINDOW = 400;
/** Left out around each recorded change: the gateway and the Stage's status each follow a route write after their own delay. */
const MARGIN_MS = 1_000;

interface Run {
  sent: readonly Sent[];
  timeline: RecordedWeight[];
  /** When the activation was seen Succeeded (or ended otherwise), on the load's clock. */
  endedAt: number;
  phase: string;
}

interface LoadOptions {
  /** How long the load runs on past the activation's end (ms). */
  after?: number;
  /** The gateway the load goes through (default: the local one). */
  via?: string;
  /** Done right before the activation is created. */
  before?: () => Promise<void>;
}

/**
 * Runs an activation of `stage` to `version` under a steady load through the gateway: the load
 * starts once the gateway routes to `from`, and runs `after` ms past the activation's end.
 */
async function underLoad(stage: string, from: string, name: string, r: number, spec: Record<string, unknown>, o: LoadOptions = {}): Promise<Run> {
  const { after = 3_000, via = gatewayUrl() } = o;
  await routedTo(s, stage, from, via);
  const weights = await recordWeights(s, stage);
  const load = startLoad({ gatewayUrl: via, host: hostOf(s, stage) });
  try {
    // A weight window before the change: the old version has all of it.
    await pollUntil(() => load.sent.length >= MIN_WINDOW + 400, 30_000, 'the load to warm up', 50);
    await o.before?.();
    await activate(s, name, stage, r, spec);
    const ended = await pollUntil(async () => {
      const va = await s.objects.get('VectorActivation', s.ns, name);
      return phaseIs('Succeeded', 'Failed', 'Cancelled', 'Skipped')(va!) ? { at: performance.now(), phase: va!.status.phase as string } : undefined;
    }, 120_000, `${name} to end`, 50);
    const until = ended.at + after;
    await pollUntil(() => performance.now() >= until, after + 5_000, 'the load to run on after the end', 50);
    return { sent: await load.stop(), timeline: await weights.stop(), endedAt: ended.at, phase: ended.phase };
  } finally {
    await load.stop();
    await weights.stop();
  }
}

/** What the requests prove, in one object: failures not told, the windows judged, the worst split error. */
function verdict(run: Run, version: string) {
  const windows = weightWindows(run.sent, run.timeline, { version, marginMs: MARGIN_MS, minRequests: MIN_WINDOW, end: run.sent.at(-1)?.at });
  return {
    failures: unexpectedFailures(run.sent).slice(0, 5),
    weights: windows.map((w) => w.recorded),
    worstError: Math.max(...windows.map((w) => w.error)),
  };
}

it('a plain switch: no request fails, and after Succeeded every request reaches the new version', async () => {
  const stage = 'plain';
  await seedServed(s, stage, [1, 2], 1);
  await create(s, object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, { onFailure: 'Revert', steps: [{ name: 'gateway', tasks: [`${stage}-gateway`] }] }));
  await apps.settled();

  const run = await underLoad(stage, `${stage}-1`, `${stage}-to-2`, 2, { executionPlan: `${stage}-plan` });
  expect(run.phase).toBe('Succeeded');
  const v = verdict(run, `${stage}-2`);
  expect(v.failures).toEqual([]);
  expect(v.weights).toEqual([0, 100]);
  expect(v.worstError).toBeLessThanOrEqual(TOLERANCE);
  // The route is written before Succeeded: by then the gateway sends it every request, or soon does.
  const switchedIn = allOnAfter(run.sent, `${stage}-2`, run.endedAt);
  expect(switchedIn).toBeDefined();
  expect(switchedIn!).toBeLessThan(1_000);
  console.log(`plain switch: ${run.sent.length} requests, every one on ${stage}-2 ${Math.round(switchedIn!)} ms after Succeeded`);
});

it('a canary 10 → 50 → 100 %: no request fails, and every weight window splits as the Stage records it', async () => {
  const stage = 'canary';
  await seedServed(s, stage, [1, 2], 1);
  const progression = { steps: [{ setWeight: 10 }, { pause: { durationSeconds: 6 } }, { setWeight: 50 }, { pause: { durationSeconds: 6 } }] };
  await create(s, object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, { onFailure: 'Stop', steps: [{ name: 'gateway', tasks: [`${stage}-gateway`] }], progression }));
  await apps.settled();

  const run = await underLoad(stage, `${stage}-1`, `${stage}-to-2`, 2, { executionPlan: `${stage}-plan` });
  expect(run.phase).toBe('Succeeded');
  const v = verdict(run, `${stage}-2`);
  expect(v.failures).toEqual([]);
  expect(v.weights).toEqual([0, 10, 50, 100]);
  expect(v.worstError).toBeLessThanOrEqual(TOLERANCE);
  console.log(`canary: ${run.sent.length} requests, worst window split error ${v.worstError.toFixed(2)} points`);
});

describe('nothing is let go while the gateway still sends it requests: the old version, deleted as soon as the system lets it go, behind a gateway that applies the switch late', () => {
  /**
   * The gateway applies a change that follows another this long after (Traefik's provider throttle);
   * its own status writes after each change can start the throttle again, so a change may wait two
   * of them. The drain that protects the old version must outlast that.
   */
  const LATE_SECONDS = 4;
  let slow: SlowGateway;
  beforeAll(async () => {
    slow = await startSlowGateway(s, LATE_SECONDS);
  });
  afterAll(async () => {
    await slow?.stop();
  });

  it.each([
    ['no drain: the old version goes while the gateway still sends it requests, and they fail', 0],
    ['a drain longer than the gateway takes: the old version goes only after it, and no request fails', 2 * LATE_SECONDS + 4],
  ])('%s', async (_n, drainSeconds) => {
    const stage = `undeploy-${drainSeconds}`;
    // History limit 0: the Stage controller deletes the old version as soon as nothing holds it.
    await seedServed(s, stage, [1, 2], 1, { stageVersionHistoryLimit: 0, drainSeconds }, slow.parentRef);
    await create(s, object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, { onFailure: 'Revert', steps: [{ name: 'gateway', tasks: [`${stage}-gateway`] }] }));
    await apps.settled();

    // The touch just before makes the switch's route write wait for the gateway's throttle.
    const run = await underLoad(stage, `${stage}-1`, `${stage}-to-2`, 2, { executionPlan: `${stage}-plan` }, { via: slow.url, before: () => slow.touch(), after: (drainSeconds + 5) * 1000 });
    expect(run.phase).toBe('Succeeded');
    // The system let the old version go: deleted, and its server stopped.
    await pollUntil(() => !apps.deployed(s.ns, `${stage}-1`) || undefined, 30_000, `${stage}-1 to be undeployed`, 100);
    const failed = unexpectedFailures(run.sent);
    const lastOld = [...run.sent].filter((x) => x.version === `${stage}-1`).reduce((t, x) => Math.max(t, x.at), 0);
    console.log(`undeploy, drainSeconds ${drainSeconds}: ${run.sent.length} requests, ${failed.length} failed; the gateway sent the old version requests until ${Math.round(lastOld - run.endedAt)} ms after Succeeded`);
    if (drainSeconds === 0) expect(failed.length).toBeGreaterThan(0);
    else expect(failed).toEqual([]);
  });
});
