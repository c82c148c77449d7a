/**
 * An analysis at a step: it measures until it ends, and decides by itself; an inconclusive one
 * waits for a person (approve goes on, abort goes back).
 */
import { INCONCLUSIVE_TIMEOUT_SECONDS } from '../../api/progression-defaults.js';
import { seconds } from './duration.js';
import type { Gate, GateTypeRules, StepKindRules } from './types.js';

export const analysisStep: StepKindRules<'analysis'> = {
  kind: 'analysis',
  of: (step) => (step.analysis ? { kind: 'analysis', analysis: step.analysis.name } : undefined),
};

export const analysisGateRules: GateTypeRules = {
  reason: 'Analyzing',
  event: 'WaitingForAnalysis',
  approvable: false,
  runs: 'an analysis',
};
export const inconclusiveGateRules: GateTypeRules = {
  reason: 'Inconclusive',
  event: 'AnalysisInconclusive',
  approvable: true,
};

/** The gate an inconclusive analysis waits at for a person; after a day it aborts. */
export function inconclusiveGate(now: number, label: string, about: string): Gate {
  const after = seconds(INCONCLUSIVE_TIMEOUT_SECONDS);
  return {
    type: 'Inconclusive',
    until: now + INCONCLUSIVE_TIMEOUT_SECONDS * 1000,
    onTimeout: 'abort',
    message: `${label}: ${about}; approve to go on, abort to go back (aborts by itself after ${after})`,
  };
}
