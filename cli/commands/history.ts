/** `history STAGE`: the Stage's VectorActivations, newest first. */
import type { Command } from '../command.js';
import { EXIT } from '../exit-codes.js';
import { historyRows, renderHistory } from '../views.js';

export const history: Command = {
  name: 'history',
  summary: "a Stage's VectorActivations, newest first, with phase, reason, times and duration",
  description: [
    "Lists the Stage's VectorActivations, newest first (creation time), with StageVersion, phase, reason,",
    'attempt, start and finish time and duration (until now for a running one). The activations of a',
    'deleted Stage are still listed; a Stage that neither exists nor has activations is not found (exit 3).',
  ].join('\n'),
  positionals: [{ name: 'STAGE', required: true, description: 'the Stage' }],
  options: [],
  examples: ['history shop -n team-a', 'history shop -o json'],
  async run(ctx, { positionals: [stage] }) {
    const [exists, activations] = await Promise.all([ctx.stage(stage!), ctx.activations()]);
    const rows = historyRows(activations, stage!, new Date());
    if (!exists && !rows.length) await ctx.requireStage(stage!);
    if (!exists && !ctx.json)
      ctx.io.err(`note: Stage ${ctx.namespace}/${stage} does not exist (any more); these are its activations`);
    ctx.print(rows, () =>
      rows.length ? renderHistory(rows) : `No VectorActivations for Stage ${ctx.namespace}/${stage}.`,
    );
    return EXIT.ok;
  },
};
