/** The VectorActivation itself: reading it (typed) and writing the status the workflow owns, through k8s/activation-store.ts. */
import { activationStatus, reasonOf, type ActivationReport, type StepProgress } from '../decisions/activation.js';
import { activationEvents, type StatusView } from '../decisions/events.js';
import { sendEvents, type RecordOptions } from '../k8s/events.js';
import { getTyped } from '../k8s/typed.js';
import { conditionsAfter, patchActivationStatus } from '../k8s/activation-store.js';
import type { CustomObject } from '../k8s/custom-objects.js';
import { stageLeaseName } from '../shared/names.js';
import { recordActivationPhase, recordProgression } from '../telemetry/metrics.js';
import type { ActivationRef } from '../shared/activation.js';
import type { CoreDeps } from './deps.js';
import { writeThenSay } from './transition-events.js';

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

/** Who holds the Stage's Lease now (namespace/name of an activation), if anyone. */
async function stageHolder({ leases }: CoreDeps, namespace: string, stage: string): Promise<string | undefined> {
  try {
    return (await leases.readNamespacedLease({ name: stageLeaseName(stage), namespace })).spec?.holderIdentity || undefined;
  } catch {
    return undefined; // no Lease (nobody took it yet), or unreadable: the Event says nobody
  }
}

export function activationStatusActivities(deps: CoreDeps, coreBuildId?: string) {
  const { objects, event } = deps;
  const readActivation = (ref: ActivationRef) => objects.get('VectorActivation', ref.namespace, ref.name);
  return {
    /** The VectorActivation as a status write needs it (startRun reads it beside its hold and mark). */
    readActivation,

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

    /**
     * Writes phase, conditions and progress; false when the VectorActivation is gone or being
     * deleted. `read`: the
     * object read already, by a caller in this process that read it beside other requests
     * (startRun); through Temporal it is never passed, and the object is read here.
     */
    async writeActivationStatus(ref: ActivationRef, report: ActivationReport, read?: Promise<CustomObject | undefined>): Promise<boolean> {
      const va = await (read ?? readActivation(ref));
      if (!va || va.metadata.uid !== ref.uid) return false;
      // Being deleted (the close-out finalizer holds it): the status is still written, for people
      // to see the run end, and the caller takes it as the deletion.
      const before = (va.status ?? {}) as StatusView;
      const holder = report.phase === 'Waiting' && before.phase !== 'Waiting' ? await stageHolder(deps, ref.namespace, va.spec.stage) : undefined;
      const conditions = conditionsAfter(va, report.phase, report.reason, report.message);
      // The Events of this transition follow its write (activities/transition-events.ts), in the
      // background, off the activation's path.
      const facts = { name: ref.name, stage: va.spec.stage, stageVersion: va.spec.stageVersion, ...(holder ? { holder } : {}) };
      const say = (options: RecordOptions) => sendEvents(event, ref.namespace, activationEvents(facts, before, report), { [`VectorActivation/${ref.name}`]: ref.uid }, deps.log, options);
      const status = { ...activationStatus(report), observedGeneration: va.metadata.generation, conditions, ...(coreBuildId ? { coreBuildId } : {}) };
      const written = await writeThenSay(() => patchActivationStatus(deps, ref, status), say, (w) => w);
      if (written) {
        recordActivationPhase(va, report.phase, reasonOf(report.reason));
        recordProgression(before.progression, report.progression);
      }
      return written && !va.metadata.deletionTimestamp;
    },
  };
}
