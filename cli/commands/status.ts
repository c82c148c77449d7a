/** `status [STAGE]`: what serves, what should, what runs (live step progress from its workflow) and what waits. */
import type { Command } from '../command.js';
import type { Context } from '../context.js';
import { EXIT } from '../exit-codes.js';
import { renderStatus, stageStatusView, withNote, withProgress, type StageStatusView } from '../views.js';

export const status: Command = {
  name: 'status',
  summary: 'active and target StageVersion, the running activation with its steps, waiting activations',
  description: [
    'Shows, per Stage: the active StageVersion (the one serving traffic: its "active" StageVersionUsage,',
    'else the Stage status), the target StageVersion, the running VectorActivation with its step and task',
    "progress (live from its workflow's progress query; when Temporal cannot be reached or does not answer,",
    'it says so and shows the progress the VectorActivation status has), the waiting activations in queue',
    'order, and the last finished one. Without STAGE: every Stage of the namespace.',
    '-o json: one object for a STAGE, an array without.',
  ].join('\n'),
  positionals: [{ name: 'STAGE', required: false, description: 'the Stage; default: all Stages of the namespace' }],
  options: [],
  examples: ['status shop -n team-a', 'status -o json'],
  async run(ctx, { positionals: [name] }) {
    const [stages, activations, usagesOf] = await Promise.all([name ? ctx.requireStage(name).then((s) => [s]) : ctx.stages(), ctx.activations(), ctx.usages()]);
    const views = stages.map((s) => stageStatusView(s, usagesOf(s.metadata.name!), activations));
    const live = await withLiveProgress(ctx, views, activations);
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
async function withLiveProgress(ctx: Context, views: StageStatusView[], activations: Awaited<ReturnType<Context['activations']>>): Promise<StageStatusView[]> {
  if (!views.some((v) => v.running)) return views;
  const { activationWorkflowId, progressQuery } = await import('../../shared/activation.js');
  const temporal = await ctx.temporal();
  try {
    return await Promise.all(
      views.map(async (v) => {
        const running = v.running;
        if (!running) return v;
        if ('error' in temporal) return { ...v, running: withNote(running, `${temporal.error}; showing what Kubernetes has`) };
        const va = activations.find((a) => a.metadata.name === running.name)!;
        const workflowId = va.status?.workflowId ?? activationWorkflowId({ namespace: ctx.namespace, name: running.name, uid: va.metadata.uid! });
        try {
          const progress = await temporal.call(() => temporal.client.workflow.getHandle(workflowId).query(progressQuery));
          return { ...v, running: withProgress(running, progress) };
        } catch (err) {
          const why = (err as Error).message.split('\n')[0];
          return { ...v, running: withNote(running, `the workflow ${workflowId} did not answer the progress query (${why}); showing what Kubernetes has`) };
        }
      }),
    );
  } finally {
    if (!('error' in temporal)) await temporal.close().catch(() => undefined);
  }
}
