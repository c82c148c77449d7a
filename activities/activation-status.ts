/** The VectorActivation itself: reading it (typed) and writing the status the workflow owns. */
import { setCondition, type Condition } from '../api/index.js';
import { activationConditions, activationStatus, type ActivationReport, type StepProgress } from '../decisions/activation.js';
import { getTyped } from '../k8s/typed.js';
import type { ActivationRef } from '../shared/activation.js';
import { activationRegarding, type CoreDeps } from './deps.js';

export interface LoadedActivation {
  stage: string;
  stageVersion: string;
  vector?: string;
  vectorDeployment?: string;
  executionPlan?: string;
  /** What an earlier workflow of this object recorded, so a new one resumes instead of starting over. */
  status: {
    phase?: string;
    attempt?: number;
    previousStageVersion?: string;
    firstError?: string;
    startTime?: string;
    steps?: StepProgress[];
  };
}

export function activationStatusActivities({ objects, event }: CoreDeps) {
  return {
    /** The VectorActivation, or undefined when it is gone (or re-created under a new uid). */
    async loadActivation(ref: ActivationRef): Promise<LoadedActivation | undefined> {
      const va = await getTyped(objects, 'VectorActivation', ref.namespace, ref.name);
      if (!va || va.metadata.uid !== ref.uid) return undefined;
      const s = va.status ?? {};
      return {
        ...va.spec,
        status: {
          ...(s.phase ? { phase: s.phase } : {}),
          ...(s.attempt ? { attempt: s.attempt } : {}),
          ...(s.previousStageVersion ? { previousStageVersion: s.previousStageVersion } : {}),
          ...(s.firstError ? { firstError: s.firstError } : {}),
          ...(s.startTime ? { startTime: s.startTime } : {}),
          ...(s.steps ? { steps: s.steps } : {}),
        },
      };
    },

    /** Writes phase, conditions and progress; false when the VectorActivation is gone. */
    async writeActivationStatus(ref: ActivationRef, report: ActivationReport): Promise<boolean> {
      const va = await objects.get('VectorActivation', ref.namespace, ref.name);
      if (!va || va.metadata.uid !== ref.uid) return false;
      let conditions: Condition[] = va.status?.conditions ?? [];
      for (const c of activationConditions(report.phase, report.reason, report.message)) conditions = setCondition(conditions, c, va.metadata.generation);
      return objects.patchStatus('VectorActivation', ref.namespace, ref.name, { ...activationStatus(report), observedGeneration: va.metadata.generation, conditions });
    },

    /** An Event on the VectorActivation (kubectl describe tells the story). */
    async recordActivationEvent(ref: ActivationRef, type: 'Normal' | 'Warning', reason: string, note: string): Promise<void> {
      await event(activationRegarding(ref), type, reason, note);
    },
  };
}
