/**
 * A pause: a timed one goes on by itself when its time is up; one without a duration waits for a
 * person's approval (and after its timeout goes on or aborts, as the plan says).
 */
import { APPROVAL_TIMEOUT_SECONDS } from '../../api/progression-defaults.js';
import type { GateTypeRules, StepKindRules } from './types.js';

export const pauseStep: StepKindRules<'pause'> = {
  kind: 'pause',
  of: (step) =>
    step.pause?.durationSeconds !== undefined ? { kind: 'pause', seconds: step.pause.durationSeconds } : undefined,
};

export const approvalStep: StepKindRules<'approval'> = {
  kind: 'approval',
  of: (step) =>
    step.pause
      ? {
          kind: 'approval',
          seconds: step.pause.timeoutSeconds ?? APPROVAL_TIMEOUT_SECONDS,
          onTimeout: step.pause.onTimeout ?? 'Abort',
        }
      : undefined,
};

export const pauseGate: GateTypeRules = { reason: 'Paused', event: 'WaitingForPause', approvable: true };
export const approvalGate: GateTypeRules = {
  reason: 'WaitingForApproval',
  event: 'WaitingForApproval',
  approvable: true,
};
