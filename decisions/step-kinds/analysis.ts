/**
 * An analysis at a step: it measures until it ends, and decides by itself; an inconclusive one
 * waits for a person (approve goes on, abort goes back).
 */
import type { GateTypeRules, StepKindRules } from './types.js';

export const analysisStep: StepKindRules<'analysis'> = {
  kind: 'analysis',
  of: (step) => (step.analysis ? { kind: 'analysis', analysis: step.analysis.name } : undefined),
};

export const analysisGate: GateTypeRules = {
  reason: 'Analyzing',
  event: 'WaitingForAnalysis',
  approvable: false,
  runs: 'an analysis',
};
export const inconclusiveGate: GateTypeRules = {
  reason: 'Inconclusive',
  event: 'AnalysisInconclusive',
  approvable: true,
};
