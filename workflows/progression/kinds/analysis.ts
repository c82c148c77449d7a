/** An analysis step: measures until it ends; a person may promote past it or abort it. */
import { inconclusiveGate, leaseSecondsOver, stepLabel } from '../../../decisions/progression.js';
import { runAnalysis } from '../analysis-run.js';
import { waitAtGate } from '../gate-wait.js';
import type { StepHandler } from './index.js';

export const analysisStep: StepHandler<'analysis'> = async (progression, { analysis: name }, step) => {
  const { host, analyses } = progression;
  const { rules, run: first } = analyses.start(name, step, false);
  const label = stepLabel(progression.spec, step);
  progression.showGate({ type: 'Analysis', onTimeout: 'abort', message: `${label}: analysis ${name}` }, Date.now());
  const every = `${rules.count} measurement${rules.count === 1 ? '' : 's'} every ${rules.intervalSeconds}s`;
  await progression.writeStatus('Analyzing', `${label}: analysis ${name}, ${every}`);
  let current = first;
  await host.holdLease(
    leaseSecondsOver(((rules.initialDelaySeconds ?? 0) + rules.count * rules.intervalSeconds) * 1000),
  );
  const run = await runAnalysis(rules, first, {
    measured: async (next) => {
      analyses.replace(current, next);
      current = next;
      await progression.writeStatus('Analyzing', next.message ?? `analysis ${name}`);
    },
    stop: () => progression.interrupted(),
    ...analyses.stageHooks(),
  });
  progression.showGate(undefined);
  await host.holdLease(undefined);
  if (run.phase === 'Running') return undefined; // stopped: the interruption between steps acts on why
  if (run.phase === 'Successful') return { next: 'next' };
  if (run.phase === 'Inconclusive') {
    return waitAtGate(
      progression,
      inconclusiveGate(Date.now(), label, run.message ?? `analysis ${name} is inconclusive`),
    );
  }
  return { next: 'abort', reason: 'AnalysisFailed', why: run.message ?? `analysis ${name} ended ${run.phase}` };
};
