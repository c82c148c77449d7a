/**
 * Carries out a Stage controller pass's decision (decisions/stage.ts decideNamespace) in its
 * order: protection first, a StageVersion before a usage points at it, status writes last. Every
 * action is safe to repeat: creates tolerate "exists", deletes "gone" (and delete only the uid
 * decided on), finalizer patches are conditional on the resourceVersion read; every write is fenced
 * right before it is sent (a deposed or resharded controller's throws NotLeaderError).
 */
import {
  activationCreatedEvents,
  cleanedUpEvents,
  stageVersionCreatedEvents,
  type EventSpec,
} from '../../decisions/events.js';
import type { NamespaceDecision, Observed } from '../../decisions/stage.js';
import { apiMessage, apiStatus } from '../../k8s/client.js';
import type { CustomObject, CustomObjects } from '../../k8s/custom-objects.js';
import { sendEvents, type EventRecorder } from '../../k8s/events.js';
import type { LeaderGate } from '../../k8s/leader-election.js';
import type { LogFn } from '../../telemetry/log.js';
import type { WrittenStatuses } from './written-statuses.js';

/** How soon a namespace is passed again after a change no watch event will announce. */
const PASS_AGAIN_MS = 1_000;

export interface StageActionParts {
  objects: CustomObjects;
  gate: LeaderGate;
  written: WrittenStatuses;
  events: EventRecorder;
  log: LogFn;
  /** Asks for the namespace's pass in `delayMs`. */
  passAgain(namespace: string, delayMs: number): void;
}

export class StageActions {
  constructor(private readonly parts: StageActionParts) {}

  /** Performs a decision in its order; every action is safe to repeat, status writes come last. */
  async act(ns: string, decision: NamespaceDecision, observed: Observed): Promise<void> {
    const patched = await this.patchMetadata(ns, decision);
    if (!(await this.create(ns, decision))) return;
    const { objects, gate, log } = this.parts;
    for (const specPatch of decision.specs) {
      gate.fence(`patching ${specPatch.kind} ${ns}/${specPatch.name}`, ns);
      log(specPatch.why, { namespace: ns });
      await objects.mergeSpec(specPatch.kind, ns, specPatch.name, specPatch.spec);
    }
    await this.delete(ns, decision, observed);
    await this.writeStatuses(ns, decision, observed, patched);
  }

  /** The metadata patches; the resourceVersion each left, by kind/name: a status written after is noted over it. */
  private async patchMetadata(ns: string, decision: NamespaceDecision): Promise<Map<string, string>> {
    const { objects, gate, log } = this.parts;
    const patched = new Map<string, string>();
    for (const patch of decision.metadata) {
      gate.fence(`patching ${patch.kind} ${ns}/${patch.name}`, ns);
      log(patch.why, { namespace: ns });
      try {
        const metadata = {
          ...patch.metadata,
          ...(patch.resourceVersion ? { resourceVersion: patch.resourceVersion } : {}),
        };
        const written = await objects.mergeMetadataOf(patch.kind, ns, patch.name, metadata);
        if (written?.metadata.resourceVersion)
          patched.set(`${patch.kind}/${patch.name}`, written.metadata.resourceVersion);
      } catch (err) {
        if (apiStatus(err) !== 409) throw err;
        // Changed since the read, maybe by a status write that marks no pass: decide again soon.
        this.parts.passAgain(ns, PASS_AGAIN_MS);
      }
    }
    return patched;
  }

  /** The creates; false when the pass must stop here (a StageVersion that exists but is not cached yet). */
  private async create(ns: string, decision: NamespaceDecision): Promise<boolean> {
    const { objects, gate, log } = this.parts;
    for (const creation of decision.creates) {
      const { kind, metadata } = creation.object;
      gate.fence(`creating ${kind} ${ns}/${metadata.name}`, ns);
      log(creation.why, { namespace: ns });
      const { object, created } = await objects.create(creation.object as CustomObject);
      // Said once, when done: a resync or a restarted controller finds it done and says nothing.
      if (created) this.recordCreated(ns, object);
      else if (kind === 'StageVersion') {
        // A StageVersion the cache does not hold yet: its watch event brings a pass that sees it,
        // and decides again before pointing a usage at it.
        log(`StageVersion ${ns}/${metadata.name} exists already; deciding again once it is cached`, { namespace: ns });
        this.parts.passAgain(ns, PASS_AGAIN_MS);
        return false;
      } else log(`${kind} ${ns}/${metadata.name} exists already`, { namespace: ns });
    }
    return true;
  }

  private async delete(ns: string, decision: NamespaceDecision, observed: Observed): Promise<void> {
    const { objects, gate, log, events } = this.parts;
    for (const deletion of decision.deletes) {
      gate.fence(`deleting ${deletion.kind} ${ns}/${deletion.name}`, ns);
      log(deletion.why, { namespace: ns });
      try {
        await objects.delete(deletion.kind, ns, deletion.name, deletion.uid);
        const stage = observed.stageVersions.find((sv) => sv.metadata.name === deletion.name)?.spec.stage;
        const stageUid = observed.stages.find((candidate) => candidate.metadata.name === stage)?.metadata.uid;
        const regarding = { [`StageVersion/${deletion.name}`]: deletion.uid, [`Stage/${stage}`]: stageUid };
        if (stage)
          sendEvents(events, ns, cleanedUpEvents({ name: deletion.name, stage }, deletion.why), regarding, log);
      } catch (err) {
        // Refused by the admission policy (an activation marked it since the read): decide again later.
        if (apiStatus(err) !== 403 && apiStatus(err) !== 422) throw err;
        log(`deleting ${deletion.kind} ${ns}/${deletion.name} was refused: ${apiMessage(err)}`, {
          level: 'warn',
          namespace: ns,
        });
      }
    }
  }

  /** The status patches: status alone never needs another pass. */
  private async writeStatuses(
    ns: string,
    decision: NamespaceDecision,
    observed: Observed,
    patched: Map<string, string>,
  ): Promise<void> {
    const { objects, gate, written } = this.parts;
    const objectsOf = {
      Stage: observed.stages,
      StageVersion: observed.stageVersions,
      StageVersionUsage: observed.usages,
    };
    for (const status of decision.statuses) {
      gate.fence(`the status of ${status.kind} ${ns}/${status.name}`, ns);
      await objects.patchStatus(status.kind, ns, status.name, status.patch);
      const cachedOfKind = objectsOf[status.kind] as { metadata: { name?: string; resourceVersion?: string } }[];
      const over = cachedOfKind.find((cached) => cached.metadata.name === status.name);
      const after = patched.get(`${status.kind}/${status.name}`);
      if (over)
        written.note(
          status.kind,
          after ? { metadata: { ...over.metadata, resourceVersion: after } } : over,
          status.patch,
        );
    }
  }

  /** The Events of an object this controller created (docs/events.md); best effort, in the background. */
  private recordCreated(ns: string, created: CustomObject): void {
    const { metadata, spec, kind } = created;
    const stageUid = metadata.ownerReferences?.find((owner) => owner.kind === 'Stage')?.uid;
    let events: EventSpec[] = [];
    if (kind === 'StageVersion') {
      events = stageVersionCreatedEvents({
        name: metadata.name,
        stage: spec.stage,
        revision: spec.revision,
        vector: spec.vector,
      });
    }
    if (kind === 'VectorActivation')
      events = activationCreatedEvents({ name: metadata.name, stage: spec.stage, stageVersion: spec.stageVersion });
    const stage = spec?.stage as string | undefined;
    const regarding = {
      ...(stage ? { [`Stage/${stage}`]: stageUid } : {}),
      [`${kind}/${metadata.name}`]: metadata.uid,
    };
    // Only a create that made the object says so: no look-up for a repeat is needed.
    sendEvents(this.parts.events, ns, events, regarding, this.parts.log, { once: true });
  }
}
