/**
 * A Stage with StageVersions, two routes (an HTTPRoute and a VirtualService, each with rules and
 * backends the activation must leave alone) and a two-step plan: Gateway API, then Istio.
 */
import { pollUntil } from '../../scripts/env/process.js';
import { startedExecutions } from './executors.js';
import { create, createOther, object, phaseIs, readOther, waitFor, type TestSystem } from './system.js';

export const HTTPROUTE = ['gateway.networking.k8s.io', 'v1', 'httproutes'] as const;
export const VIRTUALSERVICE = ['networking.istio.io', 'v1', 'virtualservices'] as const;

export async function seedStage(
  s: TestSystem,
  stage: string,
  revisions: number[],
  spec: Record<string, unknown> = {},
): Promise<void> {
  // StageVersions first: a Stage whose vector has none gets one from the Stage controller.
  for (const r of revisions) await seedStageVersion(s, stage, r);
  await create(s, object('Stage', s.ns, stage, { vector: `example/vector:0.0.${Math.max(...revisions)}`, ...spec }));
}

export async function seedStageVersion(s: TestSystem, stage: string, r: number): Promise<void> {
  await create(
    s,
    object('StageVersion', s.ns, `${stage}-${r}`, {
      stage,
      vector: `example/vector:0.0.${r}`,
      revision: r,
      backend: { service: `${stage}-shop-v${r}`, port: 8080, subset: `v${r}` },
    }),
  );
}

/** Routes that send the Stage's traffic to revision `r`, next to backends nobody manages. */
export async function seedRoutes(s: TestSystem, stage: string, r: number): Promise<void> {
  await createOther(s.kc, ...HTTPROUTE, s.ns, {
    apiVersion: 'gateway.networking.k8s.io/v1',
    kind: 'HTTPRoute',
    metadata: { name: `${stage}-shop`, namespace: s.ns },
    spec: {
      parentRefs: [{ name: 'gateway' }],
      rules: [
        {
          matches: [{ path: { type: 'PathPrefix', value: '/api' } }],
          backendRefs: [
            { name: 'mirror-sink', port: 9090, weight: 0 },
            { name: `${stage}-shop-v${r}`, port: 8080, weight: 100 },
          ],
        },
        {
          matches: [{ path: { type: 'PathPrefix', value: '/static' } }],
          backendRefs: [{ name: 'static-files', port: 80 }],
        },
      ],
    },
  });
  await createOther(s.kc, ...VIRTUALSERVICE, s.ns, {
    apiVersion: 'networking.istio.io/v1',
    kind: 'VirtualService',
    metadata: { name: `${stage}-shop`, namespace: s.ns },
    spec: {
      hosts: ['shop'],
      http: [
        { name: 'primary', route: [{ destination: { host: 'shop', subset: `v${r}` }, weight: 100 }] },
        { name: 'legacy', route: [{ destination: { host: 'legacy-shop' } }] },
      ],
    },
  });
}

/** The plan of the Stage's two routes (gateway, then mesh); `gatewayOnly`: its HTTPRoute alone. */
export async function seedPlan(
  s: TestSystem,
  stage: string,
  opts: { onFailure?: 'Stop' | 'Revert'; plan?: string; gatewayOnly?: boolean } = {},
): Promise<void> {
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, `${stage}-gateway`, {
      type: 'gateway-api',
      timeoutSeconds: 30,
      spec: { routes: [{ name: `${stage}-shop`, namespace: s.ns, rules: [0] }] },
    }),
  );
  if (opts.gatewayOnly) {
    await create(
      s,
      object('ActivationExecutionPlan', s.systemNs, opts.plan ?? 'default', {
        onFailure: opts.onFailure ?? 'Stop',
        steps: [{ name: 'gateway', tasks: [`${stage}-gateway`] }],
      }),
    );
    return;
  }
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, `${stage}-mesh`, {
      type: 'istio',
      timeoutSeconds: 30,
      spec: { virtualServices: [{ name: `${stage}-shop`, namespace: s.ns, routes: ['primary'] }], host: 'shop' },
    }),
  );
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, opts.plan ?? 'default', {
      onFailure: opts.onFailure ?? 'Stop',
      steps: [
        { name: 'gateway', tasks: [`${stage}-gateway`] },
        { name: 'mesh', tasks: [`${stage}-mesh`] },
      ],
    }),
  );
}

export async function routes(s: TestSystem, stage: string) {
  const route = await readOther(s.kc, ...HTTPROUTE, s.ns, `${stage}-shop`);
  const vs = await readOther(s.kc, ...VIRTUALSERVICE, s.ns, `${stage}-shop`);
  return {
    api: route.spec.rules[0].backendRefs.map((b: any) => `${b.name}:${b.weight}`),
    static: route.spec.rules[1].backendRefs.map((b: any) => b.name),
    primary: vs.spec.http[0].route.map((d: any) => `${d.destination.host}/${d.destination.subset}:${d.weight}`),
    legacy: vs.spec.http[1].route.map((d: any) => d.destination.host),
  };
}

export async function activate(
  s: TestSystem,
  name: string,
  stage: string,
  r: number,
  extra: Record<string, unknown> = {},
): Promise<void> {
  await create(s, object('VectorActivation', s.ns, name, { stage, stageVersion: `${stage}-${r}`, ...extra }));
}

/** Revision `r` serves the Stage, as if activated earlier: its "active" usage holds it. */
export async function seedActive(s: TestSystem, stage: string, r: number): Promise<void> {
  await create(
    s,
    object('StageVersionUsage', s.ns, `${stage}-active`, {
      reason: `serves the traffic of Stage ${stage}`,
      stageVersionRef: { name: `${stage}-${r}` },
    }),
  );
}

/** Plan `<stage>-plan`: one step whose task (`sleepy`, a test executor) takes `seconds`. */
export async function seedSleepyPlan(s: TestSystem, stage: string, seconds: number): Promise<void> {
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, `${stage}-sleepy`, {
      type: 'sleepy',
      timeoutSeconds: 120,
      spec: { seconds },
    }),
  );
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, `${stage}-plan`, {
      steps: [{ name: 'wait', tasks: [`${stage}-sleepy`] }],
    }),
  );
}

/**
 * Stage `stage` (revisions 1–3) with `<stage>-to-2` InProgress and its one sleepy task at work for
 * `seconds`: a holder to cancel, terminate, delete or wait behind. Returns the activation as read then.
 */
export async function holdStageWorking(s: TestSystem, stage: string, seconds: number) {
  await seedStage(s, stage, [1, 2, 3]);
  await seedSleepyPlan(s, stage, seconds);
  await activate(s, `${stage}-to-2`, stage, 2, { executionPlan: `${stage}-plan` });
  const va = await waitFor(s, 'VectorActivation', `${stage}-to-2`, phaseIs('InProgress'));
  await pollUntil(
    () => [...startedExecutions].some((n) => n.startsWith(`${stage}-to-2-`)),
    30_000,
    `${stage}-to-2's task to start`,
  );
  return va;
}
