/** A pause or an approval step: the wait at its gate. */
import { gateOf, type StepKind } from '../../../decisions/progression.js';
import { waitAtGate } from '../gate-wait.js';
import type { ProgressionContext, StepResult } from '../host.js';

export function pauseStep(
  progression: ProgressionContext,
  kind: Extract<StepKind, { kind: 'pause' | 'approval' }>,
): Promise<StepResult> {
  return waitAtGate(progression, gateOf(kind, Date.now(), progression.label())!);
}
