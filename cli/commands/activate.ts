/** `activate STAGE STAGEVERSION`: creates a VectorActivation; with --wait, follows it to its final phase. */
import { randomBytes } from 'node:crypto';
import { API_VERSION } from '../../api/group.js';
import { parseDuration } from '../args.js';
import { stringOption, type Command } from '../command.js';
import type { Context } from '../context.js';
import { CliError, EXIT, notFound, usageError } from '../exit-codes.js';
import { activationName } from '../outcome.js';
import { followToFinal } from '../follow.js';

const DEFAULT_TIMEOUT = '15m';

export const activate: Command = {
  name: 'activate',
  summary: "create a VectorActivation that switches a Stage's traffic to a StageVersion",
  description: [
    "Creates a VectorActivation that switches STAGE's traffic to STAGEVERSION and prints its name",
    '(STAGEVERSION plus a random suffix, unless --name). Both must exist in the namespace and the',
    'StageVersion must belong to the Stage. The Stage owns the VectorActivation: deleting the Stage deletes it',
    '(and stops it first, as any activation of a deleted Stage stops). With --wait it follows the activation to its final phase and',
    'exits 0 when the StageVersion serves the traffic (Succeeded, or Skipped as AlreadyActive), 1 when',
    'it does not (Failed, Cancelled, Skipped as Superseded or OlderThanActive), 5 at the deadline.',
  ].join('\n'),
  positionals: [
    { name: 'STAGE', required: true, description: 'the Stage whose traffic is switched' },
    { name: 'STAGEVERSION', required: true, description: 'the StageVersion that receives the traffic' },
  ],
  options: [
    {
      name: 'name',
      value: 'NAME',
      description:
        'name of the VectorActivation (default: STAGEVERSION-<random>); an existing one of that name with the same spec is reused',
    },
    {
      name: 'plan',
      value: 'PLAN',
      description: 'ActivationExecutionPlan in the system namespace (default: the plan "default")',
    },
    {
      name: 'wait',
      description: 'wait for the final phase; the exit code says whether the StageVersion serves the traffic',
    },
    {
      name: 'timeout',
      value: 'DURATION',
      description: `with --wait: give up after this long (default ${DEFAULT_TIMEOUT}; e.g. 90s, 5m)`,
    },
  ],
  examples: ['activate shop shop-7', 'activate shop shop-7 --wait --timeout 5m -o json'],
  async validate(args) {
    const { objectName } = await import('../../api/meta.js'); // zod: loaded when needed, not for --help
    const [stage, stageVersion] = args.positionals;
    for (const [what, value] of [
      ['STAGE', stage],
      ['STAGEVERSION', stageVersion],
      ['--name', stringOption(args, 'name')],
      ['--plan', stringOption(args, 'plan')],
    ] as const) {
      if (value !== undefined && !objectName.safeParse(value).success)
        throw usageError(
          `${what} "${value}" is not a valid object name (lower-case letters, digits, '-' and '.', at most 253 characters)`,
        );
    }
    if (args.options.timeout !== undefined && !args.options.wait) throw usageError('--timeout applies to --wait only');
    parseDuration('timeout', stringOption(args, 'timeout') ?? DEFAULT_TIMEOUT);
  },
  async run(ctx, args) {
    const [stage, stageVersion] = args.positionals as [string, string];
    const explicit = stringOption(args, 'name');
    const plan = stringOption(args, 'plan');
    const timeoutMs = parseDuration('timeout', stringOption(args, 'timeout') ?? DEFAULT_TIMEOUT);
    const stageUid = await checkTargets(ctx, stage, stageVersion);

    const name = explicit ?? activationName(stageVersion, randomBytes(4).toString('hex').slice(0, 6));
    const spec = { stage, stageVersion, ...(plan ? { executionPlan: plan } : {}) };
    // Owned by the Stage (not as its controller: a person asked for it), so that it goes with the
    // Stage, as ADR-0013 asks of everything that results from one.
    const ownerReferences = [{ apiVersion: API_VERSION, kind: 'Stage', name: stage, uid: stageUid }];
    const metadata = { name, namespace: ctx.namespace, ownerReferences };
    const { object, created } = await ctx.objects.create({
      apiVersion: API_VERSION,
      kind: 'VectorActivation',
      metadata,
      spec,
    });
    if (
      !created &&
      (object.spec?.stage !== stage ||
        object.spec?.stageVersion !== stageVersion ||
        object.spec?.executionPlan !== plan)
    ) {
      throw usageError(
        `VectorActivation ${ctx.namespace}/${name} exists for Stage ${object.spec?.stage} → ${object.spec?.stageVersion}; choose another --name`,
      );
    }
    if (!ctx.json)
      ctx.io.out(
        `vectoractivation/${name} ${created ? 'created' : 'exists'}: Stage ${ctx.namespace}/${stage} → ${stageVersion}`,
      );
    if (!args.options.wait) {
      if (ctx.json)
        ctx.io.out(JSON.stringify({ name, namespace: ctx.namespace, stage, stageVersion, created }, null, 2));
      return EXIT.ok;
    }
    return followToFinal(ctx, name, timeoutMs, { stage, stageVersion, created });
  },
};

/**
 * Fails before creating anything when the activation could only fail: names the missing object, or
 * the Stage being deleted. Returns the Stage's uid.
 */
async function checkTargets(ctx: Context, stage: string, stageVersion: string): Promise<string> {
  const [s, sv] = await Promise.all([ctx.stage(stage), ctx.stageVersion(stageVersion)]);
  if (!s)
    throw notFound(
      `Stage ${stage}`,
      ctx.namespace,
      `list them with "kubectl get stages -n ${ctx.namespace}", or pass the namespace with -n`,
    );
  if (s.metadata.deletionTimestamp)
    throw new CliError(
      EXIT.failed,
      `Stage ${ctx.namespace}/${stage} is being deleted: an activation of it could only fail`,
    );
  if (!sv)
    throw notFound(
      `StageVersion ${stageVersion}`,
      ctx.namespace,
      `list them with "kubectl get stageversions -n ${ctx.namespace}"`,
    );
  if (sv.spec.stage !== stage)
    throw usageError(`StageVersion ${ctx.namespace}/${stageVersion} belongs to Stage ${sv.spec.stage}, not ${stage}`);
  return s.metadata.uid!;
}
