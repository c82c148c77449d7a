/**
 * Requests are the truth: on the local gateway (Traefik, scripts/env/gateway.ts), with every
 * StageVersion a real server on its Service's loopback address (scripts/apps/local-apps.ts), a
 * steady load of 200 requests a second over kept-alive and fresh connections records every request
 * (scripts/apps/load.ts), and the requests judge each activation path (scripts/apps/judge.ts): none
 * fails unless its app was told to fail it; in every weight window of at least 400 requests the new
 * version's share is within 5 points of what the Stage's status records; after Succeeded, every
 * request reaches the new version.
 */
import { LABEL_VECTOR_ACTIVATION } from '../api/group.js';
import { k8s } from '../k8s/client.js';
import { LocalApps } from '../scripts/apps/local-apps.js';
import { allOnAfter, unexpectedFailures, weightWindows, type RecordedWeight } from '../scripts/apps/judge.js';
import { startLoad, type Load, type Sent } from '../scripts/apps/load.js';
import { pollUntil } from '../scripts/env/process.js';
import { abortUpdate, activationWorkflowId, retryUpdate } from '../shared/activation.js';
import { activate } from './support/scenario.js';
import { gatewayUrl, hostOf, recordWeights, routedTo, seedServed } from './support/data-plane.js';
import { startSlowGateway, type SlowGateway } from './support/slow-gateway.js';
import { create, object, phaseIs, readOther, startTestSystem, waitFor, type TestSystem } from './support/system.js';

let s: TestSystem;
let apps: LocalApps;
beforeAll(async () => {
  s = await startTestSystem('data-plane', {
    watcherCheckIntervalMs: 1000,
    prometheusUrl: process.env.KONFIDENCE_PROMETHEUS_URL!,
  });
  apps = new LocalApps({ kubeConfig: s.kc, namespaces: [s.ns] });
  await apps.start();
});
afterAll(async () => {
  await apps?.stop();
  await s?.stop();
});

/** Split tolerance (points) and the least requests a judged window holds. */
const TOLERANCE = 5;
/**
 * How long after an activation's end the gateway may still send by the routes before it: Traefik
 * reports a route accepted as it builds its configuration and applies it a moment later.
 */
const APPLIED_MS = 1_000;
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
  /** Done while the activation runs, given the load (an answer at a gate, a newer activation): awaited before the load winds down. */
  during?: (load: Load) => Promise<void>;
  /** The activation exists (a retry, sent by `during`): its end is that of this attempt. */
  attempt?: number;
}

/**
 * Runs an activation of `stage` to `version` under a steady load through the gateway: the load
 * starts once the gateway routes to `from`, and runs `after` ms past the activation's end and past
 * what `during` waited for (a newer activation may end later).
 */
async function underLoad(
  stage: string,
  from: string,
  name: string,
  r: number,
  spec: Record<string, unknown>,
  o: LoadOptions = {},
): Promise<Run> {
  const { after = 3_000, via = gatewayUrl() } = o;
  await routedTo(s, stage, from, via);
  const weights = await recordWeights(s, stage);
  const load = startLoad({ gatewayUrl: via, host: hostOf(s, stage) });
  try {
    // A weight window before the change: the old version has all of it.
    await pollUntil(() => load.sent.length >= MIN_WINDOW + 400, 30_000, 'the load to warm up', 50);
    await o.before?.();
    if (o.attempt === undefined) await activate(s, name, stage, r, spec);
    const meanwhile = o.during?.(load).then(() => performance.now());
    const ended = await endOf(name, o.attempt);
    const duringEnded = (await meanwhile) ?? ended.at;
    // The load runs on `after` past the later end, and until the last weight the Stage's status
    // recorded (which may come a moment after the end) has a judged window of answered requests
    // (from its margin on, as verdict() judges it), however slowly a busy machine sends them.
    const since = Math.max(ended.at, duringEnded);
    const lastWindowFilled = () => {
      const judgedFrom = (weights.timeline.at(-1)?.at ?? since) + MARGIN_MS;
      return load.sent.filter((x) => x.at >= judgedFrom && x.version !== undefined).length >= MIN_WINDOW + 100;
    };
    await pollUntil(
      () => (performance.now() >= since + after && lastWindowFilled()) || undefined,
      after + 30_000,
      'the load to run on after the end',
      50,
    );
    const sent = await load.stop();
    // The figures docs/data-plane.md quotes, one line per path.
    console.log(
      `${name} (attempt ${o.attempt ?? 1}): ${ended.phase}, ${sent.length} requests, ${unexpectedFailures(sent).length} failed`,
    );
    return { sent, timeline: await weights.stop(), endedAt: ended.at, phase: ended.phase };
  } finally {
    await load.stop();
    await weights.stop();
  }
}

/** When the activation reached a final phase (on the load's clock, in `attempt` or a later one), and which. */
function endOf(name: string, attempt = 1): Promise<{ at: number; phase: string }> {
  return pollUntil(
    async () => {
      const va = await s.objects.get('VectorActivation', s.ns, name);
      const ended =
        va && phaseIs('Succeeded', 'Failed', 'Cancelled', 'Skipped')(va) && (va.status.attempt ?? 1) >= attempt;
      return ended ? { at: performance.now(), phase: va.status.phase as string } : undefined;
    },
    120_000,
    `${name} to end`,
    50,
  );
}

/** Waits until `n` more requests were sent (a weight window long enough to judge). */
const moreRequests = (load: Load, n: number) => {
  const from = load.sent.length;
  return pollUntil(() => load.sent.length >= from + n || undefined, 60_000, `${n} more requests`, 50);
};

/** What the requests prove, in one object: failures not told, the windows judged, the worst split error. */
function verdict(run: Run, version: string) {
  const windows = weightWindows(run.sent, run.timeline, {
    version,
    marginMs: MARGIN_MS,
    minRequests: MIN_WINDOW,
    end: run.sent.at(-1)?.at,
  });
  return {
    failures: unexpectedFailures(run.sent).slice(0, 5),
    weights: windows.map((w) => w.recorded),
    worstError: Math.max(...windows.map((w) => w.error)),
  };
}

it('a plain switch: no request fails, and after Succeeded every request reaches the new version', async () => {
  const stage = 'plain';
  await seedServed(s, stage, [1, 2], 1);
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, {
      onFailure: 'Revert',
      steps: [{ name: 'gateway', tasks: [`${stage}-gateway`] }],
    }),
  );
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
  expect(switchedIn!).toBeLessThan(APPLIED_MS);
  console.log(
    `plain switch: ${run.sent.length} requests, every one on ${stage}-2 ${Math.round(switchedIn!)} ms after Succeeded`,
  );
  // Its verify asked the gateway: the implementation accepted the generation written.
  const [execution] = await s.objects.list('ActivationExecution', s.ns, `${LABEL_VECTOR_ACTIVATION}=${stage}-to-2`);
  expect(execution?.status?.message).toMatch(
    new RegExp(`HTTPRoute ${s.ns}/${stage}-shop generation \\d+ accepted by traefik.io/gateway-controller$`),
  );
});

describe.each(['Revert', 'Stop'] as const)('a route the gateway refuses, onFailure %s', (onFailure) => {
  it("ends the task Error in the gateway's own words (a backend Service that does not exist); Revert puts the route back, Stop leaves it", async () => {
    const stage = `refused-${onFailure.toLowerCase()}`;
    await seedServed(s, stage, [1, 2], 1);
    await planOf(stage, 'plan', { onFailure, steps: [{ name: 'gateway', tasks: [`${stage}-gateway`] }] });
    await apps.settled();
    // The new version's Service is gone (its StageVersion stays): the gateway cannot resolve it.
    await s.kc.makeApiClient(k8s.CoreV1Api).deleteNamespacedService({ name: `${stage}-shop-v2`, namespace: s.ns });

    await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });
    const va = await waitFor(s, 'VectorActivation', `${stage}-to-2`, phaseIs('Succeeded', 'Failed'), 60_000);
    expect(va.status.phase).toBe('Failed');
    expect(va.status.firstError).toMatch(
      new RegExp(
        `traefik.io/gateway-controller refuses HTTPRoute ${s.ns}/${stage}-shop \\(generation \\d+\\) on Gateway konfidence-gateway/local: ResolvedRefs False .*service "${stage}-shop-v2" not found`,
      ),
    );
    const route = await readOther(s.kc, 'gateway.networking.k8s.io', 'v1', 'httproutes', s.ns, `${stage}-shop`);
    const backends = route.spec.rules[0].backendRefs.map(
      (b: { name: string; weight: number }) => `${b.name}:${b.weight}`,
    );
    expect(backends).toEqual(onFailure === 'Revert' ? [`${stage}-shop-v1:100`] : [`${stage}-shop-v2:100`]);
  });
});

it('a canary 10 → 50 → 100 %: no request fails, and every weight window splits as the Stage records it', async () => {
  const stage = 'canary';
  await seedServed(s, stage, [1, 2], 1);
  const progression = {
    steps: [{ setWeight: 10 }, { pause: { durationSeconds: 6 } }, { setWeight: 50 }, { pause: { durationSeconds: 6 } }],
  };
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, {
      onFailure: 'Stop',
      steps: [{ name: 'gateway', tasks: [`${stage}-gateway`] }],
      progression,
    }),
  );
  await apps.settled();

  const run = await underLoad(stage, `${stage}-1`, `${stage}-to-2`, 2, { executionPlan: `${stage}-plan` });
  expect(run.phase).toBe('Succeeded');
  const v = verdict(run, `${stage}-2`);
  expect(v.failures).toEqual([]);
  expect(v.weights).toEqual([0, 10, 50, 100]);
  expect(v.worstError).toBeLessThanOrEqual(TOLERANCE);
  console.log(`canary: ${run.sent.length} requests, worst window split error ${v.worstError.toFixed(2)} points`);
});

const planOf = (stage: string, name: string, spec: Record<string, unknown>) =>
  create(s, object('ActivationExecutionPlan', s.systemNs, `${stage}-${name}`, spec));

/** The workflow of an activation, for the Updates a person sends it. */
async function workflowOf(name: string) {
  const va = await s.objects.get('VectorActivation', s.ns, name);
  return s.client.workflow.getHandle(activationWorkflowId({ namespace: s.ns, name, uid: va!.metadata.uid! }));
}

/** Polls until the activation waits at a gate of `type`. */
const atGate = (name: string, type: string) =>
  waitFor(s, 'VectorActivation', name, (o) => o.status?.progression?.gate?.type === type, 60_000);

describe.each(['Revert', 'Stop'] as const)('a failed step (onFailure %s)', (onFailure) => {
  it('fails no request: the traffic goes back as recorded, or stays on the new version, as the plan says; a retry after the task is mended then switches it', async () => {
    const stage = `failed-${onFailure.toLowerCase()}`;
    await seedServed(s, stage, [1, 2], 1);
    // The routes first, then a task that fails (until a person mends its registration).
    await create(
      s,
      object('ActivationTaskRegistration', s.systemNs, `${stage}-boom`, {
        type: 'failing',
        timeoutSeconds: 30,
        spec: { message: 'the new version does not start' },
      }),
    );
    await planOf(stage, 'plan', {
      onFailure,
      steps: [
        { name: 'gateway', tasks: [`${stage}-gateway`] },
        { name: 'check', tasks: [`${stage}-boom`] },
      ],
    });
    await apps.settled();

    const run = await underLoad(stage, `${stage}-1`, `${stage}-to-2`, 2, { executionPlan: `${stage}-plan` });
    expect(run.phase).toBe('Failed');
    expect(unexpectedFailures(run.sent)).toEqual([]);
    const stays = onFailure === 'Revert' ? `${stage}-1` : `${stage}-2`;
    expect(allOnAfter(run.sent, stays, run.endedAt)).toBeDefined();

    // Mended, and retried: every step runs again from the truth, and the switch completes.
    await s.objects.mergeSpec('ActivationTaskRegistration', s.systemNs, `${stage}-boom`, {
      type: 'sleepy',
      timeoutSeconds: 30,
      spec: { seconds: 0 },
    });
    const retried = await underLoad(
      stage,
      stays,
      `${stage}-to-2`,
      2,
      {},
      {
        attempt: 2,
        during: async () => {
          await (await workflowOf(`${stage}-to-2`)).executeUpdate(retryUpdate, { args: [{ by: 'admin' }] });
        },
      },
    );
    expect(retried.phase).toBe('Succeeded');
    expect(unexpectedFailures(retried.sent)).toEqual([]);
    expect(allOnAfter(retried.sent, `${stage}-2`, retried.endedAt)).toBeDefined();
  });
});

it("an abort at a canary's gate goes back down its ramp, then to the record, and no request fails", async () => {
  const stage = 'abort';
  await seedServed(s, stage, [1, 2], 1);
  const progression = { steps: [{ setWeight: 20 }, { pause: {} }], abort: { weights: [10], intervalSeconds: 5 } };
  await planOf(stage, 'plan', {
    onFailure: 'Revert',
    steps: [{ name: 'gateway', tasks: [`${stage}-gateway`] }],
    progression,
  });
  await apps.settled();

  const run = await underLoad(
    stage,
    `${stage}-1`,
    `${stage}-to-2`,
    2,
    { executionPlan: `${stage}-plan` },
    {
      during: async (load) => {
        await atGate(`${stage}-to-2`, 'Approval');
        await moreRequests(load, MIN_WINDOW + 500);
        await (await workflowOf(`${stage}-to-2`)).executeUpdate(abortUpdate, { args: [{ by: 'admin' }] });
      },
    },
  );
  expect(run.phase).toBe('Failed');
  const v = verdict(run, `${stage}-2`);
  expect(v.failures).toEqual([]);
  expect(v.weights).toEqual([0, 20, 10, 0]);
  expect(v.worstError).toBeLessThanOrEqual(TOLERANCE);
});

it("a failed analysis of the gateway's own metrics: the new version failing a fifth of its requests is caught, its traffic goes back down the ramp by itself (onFailure Stop), and the failures stop with it", async () => {
  const stage = 'measured';
  await seedServed(s, stage, [1, 2], 1);
  await apps.settled();
  await apps.behave(s.ns, `${stage}-2`, { failRatio: 0.2 });
  // Built-in measurements, filled in with the StageVersion's backend: no PromQL in the plan.
  const analyses = [
    {
      name: 'success',
      dataPlane: { metric: 'request-success-rate', windowSeconds: 10 },
      initialDelaySeconds: 10,
      intervalSeconds: 5,
      count: 3,
      successCondition: 'result >= 0.95',
    },
    {
      name: 'latency',
      dataPlane: { metric: 'request-duration-p99', windowSeconds: 10 },
      initialDelaySeconds: 5,
      intervalSeconds: 5,
      successCondition: 'result < 0.5',
    },
  ];
  const progression = {
    steps: [{ setWeight: 20 }, { analysis: { name: 'success' } }],
    background: [{ analysis: 'latency' }],
    abort: { weights: [10], intervalSeconds: 5 },
  };
  await planOf(stage, 'plan', {
    onFailure: 'Stop',
    steps: [{ name: 'gateway', tasks: [`${stage}-gateway`] }],
    progression,
    analyses,
  });

  const run = await underLoad(stage, `${stage}-1`, `${stage}-to-2`, 2, { executionPlan: `${stage}-plan` });
  expect(run.phase).toBe('Failed');
  const va = await s.objects.get('VectorActivation', s.ns, `${stage}-to-2`);
  expect(va?.status?.reason).toBe('AnalysisFailed');
  const runs = va?.status?.progression?.analysisRuns as {
    name: string;
    phase: string;
    measurements: { value?: number }[];
  }[];
  const success = runs.find((r) => r.name === 'success')!;
  expect(success.phase).toBe('Failed');
  // The gateway counted about the fifth the app was told to fail.
  expect(success.measurements[0]?.value).toBeGreaterThan(0.65);
  expect(success.measurements[0]?.value).toBeLessThan(0.95);
  const latency = runs.find((r) => r.name === 'latency')!;
  expect(latency.measurements[0]?.value).toBeLessThan(0.5);

  const v = verdict(run, `${stage}-2`);
  expect(v.failures).toEqual([]);
  expect(v.weights).toEqual([0, 20, 10, 0]);
  expect(v.worstError).toBeLessThanOrEqual(TOLERANCE);
  // The told failures came while the new version had traffic, and stopped when it went back.
  const told = run.sent.filter((x) => x.injected);
  expect(told.length).toBeGreaterThan(0);
  const lastTold = Math.max(...told.map((x) => x.at)) - run.endedAt;
  expect(lastTold).toBeLessThan(APPLIED_MS);
  expect(allOnAfter(run.sent, `${stage}-1`, run.endedAt)).toBeLessThan(APPLIED_MS);
  console.log(
    `analysis: the gateway measured a success rate of ${success.measurements[0]?.value} and a p99 of ${latency.measurements[0]?.value} s; ${told.length} told failures, the last ${Math.abs(Math.round(lastTold))} ms ${lastTold < 0 ? 'before' : 'after'} the end`,
  );
});

it('a canary waiting at its gate, superseded by a newer version: its share goes back at once, the newer one switches, and no request fails', async () => {
  const stage = 'newer';
  await seedServed(s, stage, [1, 2, 3], 1);
  await planOf(stage, 'canary', {
    onFailure: 'Stop',
    steps: [{ name: 'gateway', tasks: [`${stage}-gateway`] }],
    progression: { steps: [{ setWeight: 30 }, { pause: {} }] },
  });
  await planOf(stage, 'plain', { onFailure: 'Stop', steps: [{ name: 'gateway', tasks: [`${stage}-gateway`] }] });
  await apps.settled();

  let newerEnded: { at: number; phase: string } | undefined;
  const run = await underLoad(
    stage,
    `${stage}-1`,
    `${stage}-to-2`,
    2,
    { executionPlan: `${stage}-canary` },
    {
      during: async (load) => {
        await atGate(`${stage}-to-2`, 'Approval');
        await moreRequests(load, MIN_WINDOW + 500);
        await activate(s, `${stage}-to-3`, stage, 3, { executionPlan: `${stage}-plain` });
        newerEnded = await endOf(`${stage}-to-3`);
      },
    },
  );
  expect(run.phase).toBe('Cancelled');
  expect(newerEnded?.phase).toBe('Succeeded');
  const v = verdict(run, `${stage}-2`);
  expect(v.failures).toEqual([]);
  // Before, at its gate, and none once it was superseded, while the newer one switched.
  expect(v.weights).toEqual([0, 30, 0]);
  expect(v.worstError).toBeLessThanOrEqual(TOLERANCE);
  expect(allOnAfter(run.sent, `${stage}-3`, newerEnded!.at)).toBeDefined();
});

it('a switch, then a rollback to the old vector (a new revision, as the Stage controller makes it): every request on the newest after each, none failed', async () => {
  const stage = 'back';
  await seedServed(s, stage, [1, 2, 3], 1);
  await planOf(stage, 'plan', { onFailure: 'Revert', steps: [{ name: 'gateway', tasks: [`${stage}-gateway`] }] });
  await apps.settled();

  const forward = await underLoad(stage, `${stage}-1`, `${stage}-to-2`, 2, { executionPlan: `${stage}-plan` });
  const back = await underLoad(stage, `${stage}-2`, `${stage}-to-3`, 3, { executionPlan: `${stage}-plan` });
  for (const [run, version] of [
    [forward, `${stage}-2`],
    [back, `${stage}-3`],
  ] as const) {
    expect(run.phase).toBe('Succeeded');
    expect(unexpectedFailures(run.sent)).toEqual([]);
    expect(allOnAfter(run.sent, version, run.endedAt)).toBeDefined();
  }
});

describe('nothing is let go while the gateway still sends it requests: the old version, deleted as soon as the system lets it go, behind a gateway replica that applies the switch late', () => {
  /**
   * The late replica applies a change that follows another this long after (Traefik's provider
   * throttle), while the prompt one has already reported the route Accepted for its generation; its
   * own status writes after each change can start the throttle again, so a change may wait two of
   * them. The drain that protects the old version must outlast that.
   */
  const LATE_SECONDS = 15;
  let slow: SlowGateway;
  beforeAll(async () => {
    slow = await startSlowGateway(s, LATE_SECONDS);
  });
  afterAll(async () => {
    await slow?.stop();
  });

  it.each([
    ['no drain: the old version goes while the gateway still sends it requests, and they fail', 0],
    [
      'a drain longer than the gateway takes: the old version goes only after it, and no request fails',
      2 * LATE_SECONDS + 4,
    ],
  ])('%s', async (_n, drainSeconds) => {
    const stage = `undeploy-${drainSeconds}`;
    // History limit 0: the Stage controller deletes the old version as soon as nothing holds it.
    await seedServed(s, stage, [1, 2], 1, { stageVersionHistoryLimit: 0, drainSeconds }, slow.parentRef);
    await create(
      s,
      object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, {
        onFailure: 'Revert',
        steps: [{ name: 'gateway', tasks: [`${stage}-gateway`] }],
      }),
    );
    await apps.settled();

    // The touch just before makes the switch's route write wait for the gateway's throttle.
    const run = await underLoad(
      stage,
      `${stage}-1`,
      `${stage}-to-2`,
      2,
      { executionPlan: `${stage}-plan` },
      { via: slow.url, before: () => slow.touch(), after: (drainSeconds + 5) * 1000 },
    );
    expect(run.phase).toBe('Succeeded');
    // The system let the old version go: deleted, and its server stopped.
    await pollUntil(() => !apps.deployed(s.ns, `${stage}-1`) || undefined, 30_000, `${stage}-1 to be undeployed`, 100);
    const failed = unexpectedFailures(run.sent);
    const lastOld = [...run.sent].filter((x) => x.version === `${stage}-1`).reduce((t, x) => Math.max(t, x.at), 0);
    console.log(
      `undeploy, drainSeconds ${drainSeconds}: ${run.sent.length} requests, ${failed.length} failed; the gateway sent the old version requests until ${Math.round(lastOld - run.endedAt)} ms after Succeeded`,
    );
    if (drainSeconds === 0) expect(failed.length).toBeGreaterThan(0);
    else expect(failed).toEqual([]);
  });
});
