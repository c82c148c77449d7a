/**
 * A pause: a timed one goes on by itself when its time is up; one without a duration waits for a
 * person's approval (and after its timeout goes on or aborts, as the plan says).
 */
import { APPROVAL_TIMEOUT_SECONDS } from '../../api/progression-defaults.js';
import { seconds } from './duration.js';
import type { GateTypeRules, StepKindRules } from './types.js';

export const pauseStep: StepKindRules<'pause'> = {
  kind: 'pause',
  of: (step) =>
    step.pause?.durationSeconds !== undefined ? { kind: 'pause', seconds: step.pause.durationSeconds } : undefined,
  gate: (pause, now, label) => ({
    type: 'Pause',
    until: now + pause.seconds * 1000,
    onTimeout: 'next',
    message: `${label}: paused for ${seconds(pause.seconds)}; approve or promote to go on now, abort to go back`,
  }),
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
  gate: (approval, now, label) => {
    const then = approval.onTimeout === 'Continue' ? 'it goes on' : 'it aborts';
    const after = seconds(approval.seconds);
    return {
      type: 'Approval',
      until: now + approval.seconds * 1000,
      onTimeout: approval.onTimeout === 'Continue' ? 'next' : 'abort',
      message: `${label}: waiting for an approval (after ${after} ${then}); approve, promote or abort`,
    };
  },
};

export const pauseGateRules: GateTypeRules = { reason: 'Paused', event: 'WaitingForPause', approvable: true };
export const approvalGateRules: GateTypeRules = {
  reason: 'WaitingForApproval',
  event: 'WaitingForApproval',
  approvable: true,
};
