/**
 * The handler of each kind of progression step, by kind: the progression looks a step's handler up
 * here (a kind without its row does not compile). A kind's pure rules are in decisions/step-kinds/.
 */
import type { StepKind, StepKindName } from '../../../decisions/step-kinds/index.js';
import type { ProgressionContext, StepResult } from '../host.js';
import { analysisStep } from './analysis.js';
import { pauseStep } from './pause.js';
import { webhookStep } from './webhook.js';
import { setWeightStep } from './weight.js';

/** Runs one step of kind K at index `step`. */
export type StepHandler<K extends StepKindName> = (
  progression: ProgressionContext,
  kind: Extract<StepKind, { kind: K }>,
  step: number,
) => Promise<StepResult>;

const STEP_HANDLERS: { [K in StepKindName]: StepHandler<K> } = {
  weight: setWeightStep,
  pause: pauseStep,
  approval: pauseStep,
  analysis: analysisStep,
  webhook: webhookStep,
};

/** Runs a step by its kind's handler. */
export function runStepOfKind(progression: ProgressionContext, kind: StepKind, step: number): Promise<StepResult> {
  return (STEP_HANDLERS[kind.kind] as StepHandler<StepKindName>)(progression, kind as never, step);
}
