/**
 * `rollout`: canary, ramp, promote and roll back builds of the core worker with Temporal Worker
 * Versioning (docs/scale.md, "Controller versions"). The routing (current and ramping version) lives
 * in Temporal's Worker Deployment; the canary (namespaces pinned to a build) in the ConfigMap
 * konfidence-core-rollout of the system namespace, which the watcher reads before every start.
 */
import { DEFAULT_SYSTEM_NAMESPACE, GROUP, VERSION } from '../../api/group.js';
import type { CoreRollout } from '../../api/core-rollout.js';
import { buildIdSchema } from '../../api/core-rollout.js';
import {
  coreDeploymentName,
  describeStep,
  parseGroups,
  parsePercents,
  rolloutSteps,
  stopReason,
  type RolloutStep,
  type RunObservation,
} from '../../decisions/rollout.js';
import { parseDuration } from '../args.js';
import { stringOption, type Command, type Invocation } from '../command.js';
import type { Context } from '../context.js';
import { CliError, EXIT, usageError } from '../exit-codes.js';

const ACTIONS = ['status', 'canary', 'ramp', 'promote', 'rollback', 'run'] as const;
type Action = (typeof ACTIONS)[number];
const DEFAULT_SOAK = '60s';
const POLL_MS = 1_000;
const NOT_FOUND_MS = 3_000;
const NOT_FOUND_RETRY_MS = 250;

interface Deployment {
  name: string;
  current?: string;
  ramping?: string;
  rampingPercent: number;
  /** Build ids of the versions the server knows (a worker of the build has polled). */
  builds: string[];
}

interface Args {
  action: Action;
  build?: string;
  percent?: number;
  deployment: string;
  systemNamespace: string;
}

function parseArgs(args: Invocation): Args {
  const [action, build, percent] = args.positionals;
  if (!ACTIONS.includes(action as Action)) throw usageError(`rollout: "${action}" is not one of ${ACTIONS.join(', ')}`);
  if (action === 'status' ? build !== undefined : build === undefined)
    throw usageError(action === 'status' ? 'rollout status takes no BUILD' : `rollout ${action}: missing BUILD`);
  if (build !== undefined && !buildIdSchema.safeParse(build).success)
    throw usageError(`rollout: "${build}" is not a build id (letters, digits, ".", "_" or "-")`);
  if ((action === 'ramp') !== (percent !== undefined))
    throw usageError(
      action === 'ramp' ? 'rollout ramp: missing PERCENT' : `rollout ${action}: unexpected argument "${percent}"`,
    );
  const p = percent === undefined ? undefined : Number(percent);
  if (p !== undefined && !(Number.isFinite(p) && p >= 0 && p <= 100))
    throw usageError(`rollout ramp: PERCENT "${percent}" is not between 0 and 100`);
  if (action === 'canary' && !stringOption(args, 'namespaces'))
    throw usageError('rollout canary: --namespaces a,b is required');
  if (action === 'run' && !stringOption(args, 'groups'))
    throw usageError('rollout run: --groups "a,b;c,d" is required');
  for (const [flag, parse] of [
    ['groups', parseGroups],
    ['ramp', parsePercents],
  ] as const) {
    const text = stringOption(args, flag);
    const parsed = text === undefined ? undefined : parse(text);
    if (parsed && 'error' in parsed) throw usageError(parsed.error);
  }
  parseDuration('soak', stringOption(args, 'soak') ?? DEFAULT_SOAK);
  return {
    action: action as Action,
    ...(build !== undefined ? { build } : {}),
    ...(p !== undefined ? { percent: p } : {}),
    deployment: stringOption(args, 'deployment') ?? coreDeploymentName(process.env.KONFIDENCE_QUEUE_SUFFIX ?? ''),
    systemNamespace:
      stringOption(args, 'system-namespace') ?? (process.env.KONFIDENCE_SYSTEM_NAMESPACE || DEFAULT_SYSTEM_NAMESPACE),
  };
}

/** The Worker Deployment API of one Temporal namespace, with errors a person can act on. */
async function temporalDeployments(ctx: Context, deploymentName: string) {
  const temporal = await ctx.temporal();
  if ('error' in temporal) throw new CliError(EXIT.failed, `${temporal.error}: the rollout is managed in Temporal`);
  const service = temporal.client.workflowService;
  const namespace = ctx.settings.temporalNamespace;
  const identity = `konfidence-cli@${process.env.USER ?? 'unknown'}`;
  // The server answers from the deployment's own workflow, which can say NotFound for a moment
  // while it continues as new: a NotFound is believed only once it holds for NOT_FOUND_MS.
  const call = async <T>(what: string, fn: () => Promise<T>): Promise<T> => {
    for (const until = Date.now() + NOT_FOUND_MS; ; await new Promise((r) => setTimeout(r, NOT_FOUND_RETRY_MS))) {
      try {
        return await temporal.call(fn);
      } catch (err) {
        const e = err as { code?: number; details?: string; message?: string };
        if (e.code === 5 && Date.now() < until) continue;
        if (e.code === 5)
          throw new CliError(
            EXIT.notFound,
            `Worker Deployment ${deploymentName} not found in Temporal namespace ${namespace}: start a core worker with KONFIDENCE_BUILD_ID set (it creates the deployment)`,
          );
        throw new CliError(EXIT.failed, `${what}: ${e.details ?? e.message}`);
      }
    }
  };
  return {
    close: () => temporal.close(),
    async describe(): Promise<Deployment> {
      const res = await call('describe', () => service.describeWorkerDeployment({ namespace, deploymentName }));
      const info = res.workerDeploymentInfo!;
      const r = info.routingConfig ?? {};
      return {
        name: deploymentName,
        ...(r.currentDeploymentVersion?.buildId ? { current: r.currentDeploymentVersion.buildId } : {}),
        ...(r.rampingDeploymentVersion?.buildId ? { ramping: r.rampingDeploymentVersion.buildId } : {}),
        rampingPercent: r.rampingVersionPercentage ?? 0,
        builds: (info.versionSummaries ?? []).map((v) => v.deploymentVersion?.buildId ?? '').filter(Boolean),
      };
    },
    setCurrent: (buildId: string) =>
      call(`setting ${buildId} current`, () =>
        service.setWorkerDeploymentCurrentVersion({ namespace, deploymentName, buildId, identity }),
      ),
    /** buildId '' with 0 %: no ramping version. */
    setRamping: (buildId: string, percentage: number) =>
      call(`ramping ${buildId || '(none)'} to ${percentage}%`, () =>
        service.setWorkerDeploymentRampingVersion({ namespace, deploymentName, buildId, percentage, identity }),
      ),
  };
}
type Deployments = Awaited<ReturnType<typeof temporalDeployments>>;

function requireBuild(d: Deployment, build: string): void {
  if (!d.builds.includes(build)) {
    throw new CliError(
      EXIT.failed,
      `build ${build} is not a version of Worker Deployment ${d.name} (known: ${d.builds.join(', ') || 'none'}): start core workers with KONFIDENCE_BUILD_ID=${build} first`,
    );
  }
}

async function readRollout(ctx: Context, a: Args): Promise<CoreRollout | undefined> {
  const { readCoreRollout } = await import('../../worker/core-rollout.js');
  return readCoreRollout(ctx.kc, a.systemNamespace);
}
async function writeRollout(ctx: Context, a: Args, rollout: CoreRollout): Promise<void> {
  const { writeCoreRollout } = await import('../../worker/core-rollout.js');
  await writeCoreRollout(ctx.kc, a.systemNamespace, rollout);
}

/** One step of a rollout: the same code for the single commands and for `run`. */
async function apply(
  ctx: Context,
  a: Args,
  t: Deployments,
  build: string,
  step: RolloutStep | { kind: 'rollback' },
): Promise<void> {
  if (step.kind === 'canary')
    return writeRollout(ctx, a, {
      deploymentName: a.deployment,
      canary: { buildId: build, namespaces: step.namespaces },
    });
  if (step.kind === 'ramp') {
    await t.setRamping(build, step.percent);
    return;
  }
  const d = await t.describe();
  if (d.current !== build) await t.setCurrent(build);
  // Promoted or rolled back: nothing is pinned by namespace or ramped any more.
  if (step.kind === 'rollback' && d.ramping) await t.setRamping('', 0);
  await writeRollout(ctx, a, { deploymentName: a.deployment });
}

async function observe(ctx: Context, a: Args, build: string, since: string): Promise<RunObservation> {
  const { k8s } = await import('../../k8s/client.js');
  const api = ctx.kc.makeApiClient(k8s.CustomObjectsApi);
  // CircuitBreaker is a kind of its own that may not be installed yet: absent means no breaker.
  const breakers = await api
    .listNamespacedCustomObject({
      group: GROUP,
      version: VERSION,
      namespace: a.systemNamespace,
      plural: 'circuitbreakers',
    })
    .then((l: { items?: { metadata?: { name?: string }; status?: { phase?: string } }[] }) => l.items ?? [])
    .catch((err: { code?: number }) => {
      if (err.code === 404) return [];
      throw err;
    });
  const vas = (
    (await api.listCustomObjectForAllNamespaces({ group: GROUP, version: VERSION, plural: 'vectoractivations' })) as {
      items: {
        metadata: { namespace: string; name: string };
        status?: { phase?: string; coreBuildId?: string; completionTime?: string };
      }[];
    }
  ).items;
  return {
    breakers: breakers.map((b) => ({
      name: b.metadata?.name ?? '?',
      ...(b.status?.phase ? { phase: b.status.phase } : {}),
    })),
    canaryActivations: vas
      .filter((v) => v.status?.coreBuildId === build && (v.status.completionTime ?? '') >= since)
      .map((v) => ({
        name: `${v.metadata.namespace}/${v.metadata.name}`,
        ...(v.status?.phase ? { phase: v.status.phase } : {}),
      })),
  };
}

async function run(ctx: Context, a: Args, t: Deployments, args: Invocation): Promise<typeof EXIT.ok> {
  const build = a.build!;
  const groups = parseGroups(stringOption(args, 'groups')!) as string[][];
  const ramps = parsePercents(stringOption(args, 'ramp') ?? '') as number[];
  const soakMs = parseDuration('soak', stringOption(args, 'soak') ?? DEFAULT_SOAK);
  const before = await t.describe();
  requireBuild(before, build);
  const back = before.current ? `; roll back with "${ctx.settings.program} rollout rollback ${before.current}"` : '';
  // kubeTime's precision (seconds): a failure in the second the run began counts.
  const since = new Date(Math.floor(Date.now() / 1000) * 1000).toISOString().replace('.000Z', 'Z');
  for (const step of rolloutSteps(groups, ramps)) {
    const check = async () => {
      const why = stopReason(await observe(ctx, a, build, since));
      if (why)
        throw new CliError(
          EXIT.failed,
          `rollout of ${build} stopped before "${describeStep(step, build)}": ${why}${back}`,
        );
    };
    await check();
    ctx.io.err(`${describeStep(step, build)}`);
    await apply(ctx, a, t, build, step);
    if (step.kind === 'promote') break;
    for (
      const until = Date.now() + soakMs;
      Date.now() < until;
      await new Promise((r) => setTimeout(r, Math.min(POLL_MS, soakMs)))
    )
      await check();
    await check();
  }
  ctx.print({ deployment: a.deployment, promoted: build }, () => `${build} is the current version of ${a.deployment}`);
  return EXIT.ok;
}

export const rollout: Command = {
  name: 'rollout',
  summary: 'canary, ramp, promote or roll back a build of the core worker (Temporal Worker Versioning)',
  description: [
    'The core worker runs as Worker Deployment konfidence-core<suffix> with KONFIDENCE_BUILD_ID as its build.',
    'An activation runs to its end on the build that started it; only new activations move.',
    '  status                      current and ramping build, known builds, the canary',
    '  canary BUILD --namespaces a,b  new activations of these namespaces start on BUILD',
    '  ramp BUILD PERCENT          PERCENT % of the other new activations start on BUILD',
    '  promote BUILD               BUILD becomes current: every new activation; the canary ends',
    '  rollback BUILD              BUILD (the previous one) becomes current again; ramp and canary end',
    '  run BUILD --groups "a,b;c,d" [--ramp 10,50] [--soak 60s]',
    '                              canary group by group, then ramp, then promote, waiting --soak after each',
    '                              step; stops (exit 1, saying why) when a CircuitBreaker of the system',
    '                              namespace is Open or an activation on BUILD failed.',
    'A BUILD must have a running worker (exit 1 otherwise); an unknown deployment is exit 3.',
  ].join('\n'),
  positionals: [
    { name: 'ACTION', required: true, description: ACTIONS.join(', ') },
    { name: 'BUILD', required: false, description: 'build id of the core worker (KONFIDENCE_BUILD_ID)' },
    { name: 'PERCENT', required: false, description: 'for ramp: 0 to 100' },
  ],
  options: [
    { name: 'namespaces', value: 'A,B', description: 'canary: the namespaces whose new activations start on BUILD' },
    { name: 'groups', value: 'A,B;C,D', description: 'run: namespace groups (a shard each), canaried in this order' },
    { name: 'ramp', value: 'P1,P2', description: 'run: ramp percentages after the canary (default none)' },
    {
      name: 'soak',
      value: 'DURATION',
      description: `run: how long each step is watched before the next (default ${DEFAULT_SOAK})`,
    },
    {
      name: 'deployment',
      value: 'NAME',
      description: 'Worker Deployment (default konfidence-core plus $KONFIDENCE_QUEUE_SUFFIX)',
    },
    {
      name: 'system-namespace',
      value: 'NAMESPACE',
      description: 'where the canary ConfigMap lives (default $KONFIDENCE_SYSTEM_NAMESPACE, else konfidence-system)',
    },
  ],
  examples: [
    'rollout status',
    'rollout canary v2 --namespaces team-a',
    'rollout ramp v2 25',
    'rollout promote v2',
    'rollout rollback v1',
    'rollout run v2 --groups "team-a;team-b,team-c" --ramp 10,50 --soak 5m',
  ],
  async validate(args) {
    parseArgs(args);
  },
  async run(ctx, args) {
    const a = parseArgs(args);
    const t = await temporalDeployments(ctx, a.deployment);
    try {
      if (a.action === 'status') {
        const [d, r] = await Promise.all([t.describe(), readRollout(ctx, a)]);
        const view = { ...d, ...(r?.canary ? { canary: r.canary } : {}) };
        ctx.print(view, () =>
          [
            `deployment  ${d.name}`,
            `current     ${d.current ?? '(unversioned)'}`,
            `ramping     ${d.ramping ? `${d.ramping} at ${d.rampingPercent}%` : '-'}`,
            `canary      ${r?.canary ? `${r.canary.buildId} on ${r.canary.namespaces.join(', ')}` : '-'}`,
            `builds      ${d.builds.join(', ') || '-'}`,
          ].join('\n'),
        );
        return EXIT.ok;
      }
      if (a.action === 'run') return await run(ctx, a, t, args);
      const build = a.build!;
      requireBuild(await t.describe(), build);
      const namespaces = (stringOption(args, 'namespaces') ?? '')
        .split(',')
        .map((n) => n.trim())
        .filter(Boolean);
      const step: RolloutStep | { kind: 'rollback' } =
        a.action === 'canary'
          ? { kind: 'canary', namespaces, group: 1 }
          : a.action === 'ramp'
            ? { kind: 'ramp', percent: a.percent! }
            : { kind: a.action === 'promote' ? 'promote' : 'rollback' };
      await apply(ctx, a, t, build, step);
      const said = {
        canary: `new activations of ${namespaces.join(', ')} start on ${build}`,
        ramp: `${a.percent}% of new activations start on ${build}`,
        promote: `${build} is current`,
        rollback: `${build} is current again; ramp and canary ended`,
      }[a.action];
      ctx.print(
        {
          deployment: a.deployment,
          action: a.action,
          build,
          ...(a.percent !== undefined ? { percent: a.percent } : {}),
          ...(namespaces.length && a.action === 'canary' ? { namespaces } : {}),
        },
        () => said,
      );
      return EXIT.ok;
    } finally {
      await t.close().catch(() => undefined);
    }
  },
};
