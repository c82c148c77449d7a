/** `status [STAGE]`: what serves, what should, what runs (live step progress from its workflow) and what waits. */
import { stringOption, type Command } from '../command.js';
import type { Context } from '../context.js';
import { EXIT } from '../exit-codes.js';
import {
  measuredShares,
  renderStatus,
  stageStatusView,
  withNote,
  withProgress,
  type StageStatusView,
} from '../views.js';

/** The requests `status` weighs at the gateway: those of the last this many seconds. */
const MEASURE_WINDOW_SECONDS = 10;
const PROMETHEUS_TIMEOUT_MS = 3_000;

export const status: Command = {
  name: 'status',
  summary: 'active and target StageVersion, the running activation with its steps, waiting activations',
  description: [
    'Shows, per Stage: the active StageVersion (the one serving traffic: its "active" StageVersionUsage,',
    'else the Stage status), the target StageVersion, the running VectorActivation with its step and task',
    "progress (live from its workflow's progress query; when Temporal cannot be reached or does not answer,",
    'it says so and shows the progress the VectorActivation status has), the waiting activations in queue',
    'order, and the last finished one. Without STAGE: every Stage of the namespace.',
    'With a Prometheus that scrapes the gateway (--prometheus, or $KONFIDENCE_PROMETHEUS_URL as the local',
    "control plane's env.sh sets it), each HTTPRoute rule also shows what reached each StageVersion at the",
    `gateway over the last ${MEASURE_WINDOW_SECONDS} s, beside the weights recorded (Traefik's metrics).`,
    "A Stage whose routes live in a Landscape names it on each route's line (its gateway is not measured).",
    '-o json: one object for a STAGE, an array without.',
  ].join('\n'),
  positionals: [{ name: 'STAGE', required: false, description: 'the Stage; default: all Stages of the namespace' }],
  options: [
    {
      name: 'prometheus',
      value: 'URL',
      description: "Prometheus with the gateway's request metrics (default $KONFIDENCE_PROMETHEUS_URL)",
    },
  ],
  examples: ['status shop -n team-a', 'status -o json', 'status shop --prometheus http://127.0.0.1:9090'],
  async run(ctx, args) {
    const [name] = args.positionals;
    const [stages, activations, usagesOf] = await Promise.all([
      name ? ctx.requireStage(name).then((s) => [s]) : ctx.stages(),
      ctx.activations(),
      ctx.usages(),
    ]);
    const views = stages.map((s) => stageStatusView(s, usagesOf(s.metadata.name!), activations));
    const prometheus = stringOption(args, 'prometheus') ?? process.env.KONFIDENCE_PROMETHEUS_URL;
    const live = await withLiveProgress(
      ctx,
      prometheus ? await withMeasuredShares(ctx, views, prometheus) : views,
      activations,
    );
    if (!name && !live.length) {
      if (ctx.json) ctx.io.out('[]');
      else ctx.io.out(`No Stages in namespace ${ctx.namespace}.`);
      return EXIT.ok;
    }
    ctx.print(name ? live[0] : live, () => renderStatus(live, new Date()));
    return EXIT.ok;
  },
};

/** Replaces the running activations' steps by their workflows' answers, or notes why it cannot. */
async function withLiveProgress(
  ctx: Context,
  views: StageStatusView[],
  activations: Awaited<ReturnType<Context['activations']>>,
): Promise<StageStatusView[]> {
  if (!views.some((v) => v.running)) return views;
  const { activationWorkflowId, progressQuery } = await import('../../shared/activation.js');
  const temporal = await ctx.temporal();
  try {
    return await Promise.all(
      views.map(async (v) => {
        const running = v.running;
        if (!running) return v;
        if ('error' in temporal)
          return { ...v, running: withNote(running, `${temporal.error}; showing what Kubernetes has`) };
        const va = activations.find((a) => a.metadata.name === running.name)!;
        const workflowId =
          va.status?.workflowId ??
          activationWorkflowId({ namespace: ctx.namespace, name: running.name, uid: va.metadata.uid! });
        try {
          const progress = await temporal.call(() =>
            temporal.client.workflow.getHandle(workflowId).query(progressQuery),
          );
          return { ...v, running: withProgress(running, progress) };
        } catch (err) {
          const why = (err as Error).message.split('\n')[0];
          return {
            ...v,
            running: withNote(
              running,
              `the workflow ${workflowId} did not answer the progress query (${why}); showing what Kubernetes has`,
            ),
          };
        }
      }),
    );
  } finally {
    if (!('error' in temporal)) await temporal.close().catch(() => undefined);
  }
}

/**
 * Adds to each HTTPRoute rule what the gateway sent each of its StageVersions lately, from the
 * gateway's request metrics; a StageVersion without a backend Service, or a Prometheus that does not
 * answer, leaves the measurement out (the recorded weights stand alone).
 */
async function withMeasuredShares(
  ctx: Context,
  views: StageStatusView[],
  prometheus: string,
): Promise<StageStatusView[]> {
  if (!views.some((v) => v.traffic?.some((t) => t.kind === 'HTTPRoute'))) return views;
  const { requestRateQuery } = await import('../../decisions/data-plane-metrics.js');
  // One list of the namespace's StageVersions for every rule, not a read per StageVersion per rule.
  const backends = new Map((await ctx.stageVersions()).map((sv) => [sv.metadata.name!, sv.spec.backend]));
  /** Requests a second at the gateway; null when the StageVersion names no Service to measure. */
  const rate = async (stageVersion: string): Promise<number | null> => {
    const backend = backends.get(stageVersion);
    if (!backend) return null;
    const url = new URL('api/v1/query', prometheus.endsWith('/') ? prometheus : `${prometheus}/`);
    url.searchParams.set(
      'query',
      requestRateQuery(
        'traefik',
        { namespace: ctx.namespace, service: backend.service, ...(backend.port ? { port: backend.port } : {}) },
        MEASURE_WINDOW_SECONDS,
      ),
    );
    const body = (await (await fetch(url, { signal: AbortSignal.timeout(PROMETHEUS_TIMEOUT_MS) })).json()) as {
      data?: { result?: { value?: [number, string] }[] };
    };
    const value = Number(body.data?.result?.[0]?.value?.[1]);
    return Number.isFinite(value) ? value : 0;
  };
  return Promise.all(
    views.map(async (v) => {
      if (!v.traffic?.some((t) => t.kind === 'HTTPRoute')) return v;
      const traffic = await Promise.all(
        v.traffic.map(async (t) => {
          // A landscape's gateway is not the one this Prometheus scrapes.
          if (t.kind !== 'HTTPRoute' || t.landscape) return t;
          try {
            const rates = await Promise.all(Object.keys(t.weights).map(async (sv) => [sv, await rate(sv)] as const));
            // A share of only some of the versions would mislead: all of them, or no line.
            if (rates.some(([, r]) => r === null)) return t;
            const measured = measuredShares(
              Object.fromEntries(rates) as Record<string, number>,
              MEASURE_WINDOW_SECONDS,
            );
            return measured ? { ...t, measured } : t;
          } catch {
            return t;
          }
        }),
      );
      return { ...v, traffic };
    }),
  );
}
