/**
 * The table of step kinds and gates: stepKind and gateOf (decisions/progression.ts), the status
 * reasons, the Events (decisions/events.ts), the answers' rules and the CLI's view (cli/views.ts)
 * read a kind's rules here, and the workflow runs each kind by its handler (workflows/progression/kinds/).
 */
import type { ProgressionStep } from '../../api/progression.js';
import { ONE_STEP_KIND_MESSAGE, type GateType } from '../../api/progression-defaults.js';
import { analysisGateRules, analysisStep, inconclusiveGateRules } from './analysis.js';
import { approvalGateRules, approvalStep, pauseGateRules, pauseStep } from './pause.js';
import type { Gate, GateRulesTable, GateTypeRules, StepKind, StepKindName, StepKindRules } from './types.js';
import { webhookGateRules, webhookStep } from './webhook.js';
import { weightStep } from './weight.js';

export { inconclusiveGate } from './analysis.js';
export { seconds } from './duration.js';
export type { Gate, GateTypeRules, StepKind, StepKindName, StepKindRules } from './types.js';

/** Every kind of step, by name (a kind without its row does not compile), in the order a step's spec is read as one. */
export const STEP_KINDS: { [K in StepKindName]: StepKindRules<K> } = {
  weight: weightStep,
  pause: pauseStep,
  approval: approvalStep,
  analysis: analysisStep,
  webhook: webhookStep,
};

/** Every gate a progression waits at. */
export const GATES: GateRulesTable = {
  Pause: pauseGateRules,
  Approval: approvalGateRules,
  Analysis: analysisGateRules,
  Webhook: webhookGateRules,
  Inconclusive: inconclusiveGateRules,
};

/** What one progression step does (defaults filled in). */
export function stepKind(step: ProgressionStep): StepKind {
  for (const rules of Object.values(STEP_KINDS) as StepKindRules[]) {
    const kind = rules.of(step);
    if (kind) return kind;
  }
  throw new Error(ONE_STEP_KIND_MESSAGE);
}

/** The gate a step waits at for a person or a time, from `now` (workflow time, ms); undefined: its kind has none. */
export function gateOf(step: StepKind, now: number, label: string): Gate | undefined {
  const rules = STEP_KINDS[step.kind] as StepKindRules;
  return rules.gate?.(step, now, label);
}

/** A gate's rules by the type a status names (undefined: a type this build does not know). */
const gateNamed = (type: string): GateTypeRules | undefined =>
  (GATES as Record<string, GateTypeRules | undefined>)[type];

/** Whether a gate type is one a person's approve ends (false for a type this build does not know). */
export function approvable(type: string): boolean {
  return gateNamed(type)?.approvable ?? false;
}

/** The reason of the Event that says a wait at a gate of `type` began. */
export function gateEvent(type: string): string {
  return gateNamed(type)?.event ?? `WaitingFor${type}`;
}

/** The status reason while an activation waits at a gate of `type`. */
export function gateReason(type: GateType): string {
  return GATES[type].reason;
}
