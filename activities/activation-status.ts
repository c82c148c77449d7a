/** The VectorActivation itself: reading it (typed) and writing the status the workflow owns, through k8s/activation-store.ts. */
import { activationStatus, reasonOf, type ActivationReport, type StepProgress } from '../decisions/activation.js';
import { activationEvents, type ActivationFacts, type StatusView } from '../decisions/events.js';
import { sendEvents, type RecordOptions } from '../k8s/events.js';
import { parseTyped } from '../k8s/typed.js';
import { apiStatus } from '../k8s/client.js';
import { conditionsAfter, patchActivationStatus, patchActivationStatusOver } from '../k8s/activation-store.js';
import type { CustomObject } from '../k8s/custom-objects.js';
import { knownStatus, statusPatch, type KnownStatus, type StatusOver } from '../decisions/status-write.js';
import { stageLeaseName } from '../shared/names.js';
import { recordActivationPhase, recordProgression } from '../telemetry/metrics.js';
import type { ActivationRef } from '../shared/activation.js';
import type { CoreDeps } from './deps.js';
import { writeThenSay } from './transition-events.js';

export interface LoadedActivation {
  stage: string;
  stageVersion: string;
  /** Its creationTimestamp: the Stage handoff metric counts an activation that existed at the release. */
  created?: string;
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
  /** The status as read, for the workflow's writes over it without a read (decisions/status-write.ts). */
  known?: KnownStatus;
}

/** Who holds the Stage's Lease now (namespace/name of an activation), if anyone. */
async function stageHolder({ leases }: CoreDeps, namespace: string, stage: string): Promise<string | undefined> {
  try {
    return (
      (await leases.readNamespacedLease({ name: stageLeaseName(stage), namespace })).spec?.holderIdentity || undefined
    );
  } catch {
    return undefined; // no Lease (nobody took it yet), or unreadable: the Event says nobody
  }
}

export function activationStatusActivities(deps: CoreDeps, coreBuildId?: string) {
  const { objects, event } = deps;
  const readActivation = (ref: ActivationRef) => objects.get('VectorActivation', ref.namespace, ref.name);
  /** The Events of a write from `before` to `report`, said once it went through (activities/transition-events.ts). */
  function sayer(
    ref: ActivationRef,
    facts: ActivationFacts,
    before: StatusView,
    report: ActivationReport,
    stageUid?: string,
  ) {
    // The uids known already: an Event's regarding object is read for its uid only otherwise.
    const uids = {
      [`VectorActivation/${ref.name}`]: ref.uid,
      ...(stageUid ? { [`Stage/${facts.stage}`]: stageUid } : {}),
    };
    return (options: RecordOptions) =>
      sendEvents(event, ref.namespace, activationEvents(facts, before, report), uids, deps.log, options);
  }

  /** Who holds the Stage, told by the Event of entering Waiting (only then is the Lease read). */
  async function holderOn(ref: ActivationRef, stage: string, before: StatusView, report: ActivationReport) {
    const holder =
      report.phase === 'Waiting' && before.phase !== 'Waiting'
        ? await stageHolder(deps, ref.namespace, stage)
        : undefined;
    return holder ? { holder } : {};
  }

  /**
   * One JSON patch over what the workflow knows (decisions/status-write.ts statusPatch), the
   * deletion and the metrics' creation time from the object it answers. Undefined when the object
   * is not as known (a test failed: 422): the caller reads it and writes over what it finds.
   */
  async function writeOverKnown(
    ref: ActivationRef,
    report: ActivationReport,
    over: StatusOver,
  ): Promise<boolean | undefined> {
    const before = (over.known.status ?? {}) as StatusView;
    const facts = {
      name: ref.name,
      stage: over.stage,
      stageVersion: over.stageVersion,
      ...(await holderOn(ref, over.stage, before, report)),
    };
    const ops = statusPatch(ref.uid, over.known, report, over.conditions, coreBuildId ? { coreBuildId } : {});
    let va: CustomObject | undefined;
    try {
      va = await writeThenSay(
        () => patchActivationStatusOver(deps, ref, ops),
        sayer(ref, facts, before, report, over.stageUid),
        (w) => w !== undefined,
      );
    } catch (err) {
      if (apiStatus(err) === 422) return undefined;
      throw err;
    }
    if (!va) return false;
    recordActivationPhase({ metadata: va.metadata, status: before }, report.phase, reasonOf(report.reason));
    recordProgression(before.progression, report.progression);
    return !va.metadata.deletionTimestamp;
  }

  /** Reads the object, then writes over what it holds: when the workflow does not know it, or knew it wrong. */
  async function writeAfterRead(
    ref: ActivationRef,
    report: ActivationReport,
    read: Promise<CustomObject | undefined>,
  ): Promise<boolean> {
    const va = await read;
    if (!va || va.metadata.uid !== ref.uid) return false;
    // Being deleted (the close-out finalizer holds it): the status is still written, for people
    // to see the run end, and the caller takes it as the deletion.
    const before = (va.status ?? {}) as StatusView;
    const conditions = conditionsAfter(va, report.phase, report.reason, report.message);
    // The Events of this transition follow its write (activities/transition-events.ts), in the
    // background, off the activation's path.
    const facts = {
      name: ref.name,
      stage: va.spec.stage,
      stageVersion: va.spec.stageVersion,
      ...(await holderOn(ref, va.spec.stage, before, report)),
    };
    const status = {
      ...activationStatus(report),
      observedGeneration: va.metadata.generation,
      conditions,
      ...(coreBuildId ? { coreBuildId } : {}),
    };
    const written = await writeThenSay(
      () => patchActivationStatus(deps, ref, status),
      sayer(ref, facts, before, report),
      (w) => w,
    );
    if (written) {
      recordActivationPhase(va, report.phase, reasonOf(report.reason));
      recordProgression(before.progression, report.progression);
    }
    return written && !va.metadata.deletionTimestamp;
  }

  return {
    /** The VectorActivation as a status write needs it (startRun reads it beside its hold and mark). */
    readActivation,

    /** The VectorActivation, or undefined when it is gone (or re-created under a new uid). */
    async loadActivation(ref: ActivationRef): Promise<LoadedActivation | undefined> {
      const read = await objects.get('VectorActivation', ref.namespace, ref.name);
      if (!read || read.metadata.uid !== ref.uid) return undefined;
      const va = parseTyped('VectorActivation', read);
      const s = va.status ?? {};
      return {
        ...va.spec,
        ...(read.metadata.creationTimestamp ? { created: read.metadata.creationTimestamp } : {}),
        status: {
          ...(s.phase ? { phase: s.phase } : {}),
          ...(s.attempt ? { attempt: s.attempt } : {}),
          ...(s.previousStageVersion ? { previousStageVersion: s.previousStageVersion } : {}),
          ...(s.firstError ? { firstError: s.firstError } : {}),
          ...(s.startTime ? { startTime: s.startTime } : {}),
          ...(s.steps ? { steps: s.steps } : {}),
        },
        // As the object holds it, not as parsed: a write's tests compare with what it holds.
        ...(read.metadata.generation !== undefined
          ? { known: knownStatus(read.metadata.generation, read.status) }
          : {}),
      };
    },

    /**
     * Writes phase, conditions and progress; false when the VectorActivation is gone or being
     * deleted. `over`: what the workflow knows the object holds, to write over it in one request
     * (writeOverKnown); without it, or when the object is not as known, it is read first. `read`: the
     * object read already, by a caller in this process that read it beside other requests
     * (startRun without `over`); through Temporal it is never passed.
     */
    async writeActivationStatus(
      ref: ActivationRef,
      report: ActivationReport,
      over?: StatusOver,
      read?: Promise<CustomObject | undefined>,
    ): Promise<boolean> {
      const written = over ? await writeOverKnown(ref, report, over) : undefined;
      return written ?? writeAfterRead(ref, report, read ?? readActivation(ref));
    },
  };
}
