/**
 * What the watcher writes on activations that have no workflow yet: held back by the namespace's
 * Stage limit (decisions/fair-share.ts: phase Waiting, reason NamespaceLimit, so `kubectl get va`
 * says why it has not started), superseded before it started (decisions/supersede.ts), or
 * cancelled by a request before it started (decisions/watcher.ts beforeStartAnswer). Each
 * write is conditional on the resourceVersion it read (a skip of one without any status: the one
 * the watcher saw), so it never lands over a status a workflow wrote meanwhile. Repeating it
 * changes nothing.
 */
import { isFinal, reasonOf } from '../decisions/activation.js';
import { activationEvents, type StatusView } from '../decisions/events.js';
import { NAMESPACE_LIMIT_REASON } from '../decisions/fair-share.js';
import { SUPERSEDED_REASON } from '../decisions/supersede.js';
import { sendEvents, type RecordOptions } from '../k8s/events.js';
import { kubeTime } from '../shared/format.js';
import { recordActivationPhase } from '../telemetry/metrics.js';
import { conditionsAfter } from './activation-status.js';
import type { CustomObject } from '../k8s/custom-objects.js';
import type { VectorActivationPhase } from '../api/vector-activation.js';
import type { ActivationRef } from '../shared/activation.js';
import type { CoreDeps } from './deps.js';
import { writeThenSay } from './transition-events.js';

/** The activation as it is now, unless it is gone or re-created under another uid. */
async function readSame(deps: CoreDeps, ref: ActivationRef) {
  const va = await deps.objects.get('VectorActivation', ref.namespace, ref.name);
  return va && va.metadata.uid === ref.uid ? va : undefined;
}

/** Writes phase, reason, message and their conditions, only over the status that `va` holds (its resourceVersion). */
function writeOver(deps: CoreDeps, ref: ActivationRef, va: CustomObject, phase: VectorActivationPhase, reason: string, message: string, extra: Record<string, unknown> = {}): Promise<boolean> {
  return deps.objects.patchStatusAt('VectorActivation', ref.namespace, ref.name, va.metadata.resourceVersion!, {
    phase,
    reason,
    message,
    ...extra,
    observedGeneration: va.metadata.generation,
    conditions: conditionsAfter(va, phase, reason, message),
  });
}

/** True when it wrote the held status; false when gone, started, finished or already marked. */
export async function holdActivation(deps: CoreDeps, ref: ActivationRef, message: string): Promise<boolean> {
  const va = await readSame(deps, ref);
  const status = va?.status ?? {};
  if (!va || isFinal(status.phase) || status.workflowId || (status.reason === NAMESPACE_LIMIT_REASON && status.message === message)) return false;
  return writeOver(deps, ref, va, 'Waiting', NAMESPACE_LIMIT_REASON, message);
}

/**
 * Ends an activation that has no workflow yet as Skipped/Superseded (decisions/supersede.ts), with
 * its Events; conditional on the resourceVersion read (or, for one without any status yet, the
 * one the watcher saw), like the hold. True when the activation is
 * final now (this write, or an earlier one: it must not start); false when it is gone, has a
 * workflow, or changed since the read (it starts, and its workflow decides).
 */
export async function skipBeforeStart(deps: CoreDeps, ref: ActivationRef, message: string, seen?: CustomObject): Promise<boolean> {
  return (await endBeforeStart(deps, ref, { phase: 'Skipped', reason: SUPERSEDED_REASON, message }, seen)) !== 'not';
}

/**
 * Ends an activation that has no workflow yet as Cancelled (a cancel asked while it waited its
 * turn), as skipBeforeStart does; true only when this write ended it (one final by other means
 * answers its request as a final activation does).
 */
export async function cancelBeforeStart(deps: CoreDeps, ref: ActivationRef, message: string): Promise<boolean> {
  return (await endBeforeStart(deps, ref, { phase: 'Cancelled', reason: 'Cancelled', message })) === 'ended';
}

type Ending = { phase: 'Skipped' | 'Cancelled'; reason: string; message: string };

/** 'ended' by this write, 'final' already, or 'not' (gone, has a workflow, or changed since the read). */
async function endBeforeStart(deps: CoreDeps, ref: ActivationRef, ending: Ending, seen?: CustomObject): Promise<'ended' | 'final' | 'not'> {
  // A burst's loser the watcher saw a moment ago without any status is written over as seen, one
  // read less per loser; had anything written it since, the write conflicts and it is read.
  const fresh = seen && seen.metadata.uid === ref.uid && seen.status === undefined ? seen : undefined;
  if (fresh && (await endOver(deps, ref, fresh, ending))) return 'ended';
  const va = await readSame(deps, ref);
  if (!va) return 'not';
  if (isFinal(va.status?.phase)) return 'final';
  return !va.status?.workflowId && (await endOver(deps, ref, va, ending)) ? 'ended' : 'not';
}

/** Writes the ending over `va` (its resourceVersion) and, when written, its Events and the phase metric. */
async function endOver(deps: CoreDeps, ref: ActivationRef, va: CustomObject, ending: Ending): Promise<boolean> {
  const before = (va.status ?? {}) as StatusView;
  const facts = { name: ref.name, stage: va.spec.stage, stageVersion: va.spec.stageVersion };
  // Said by the write that made the ending (activities/transition-events.ts): conditional on the
  // resourceVersion seen, so no earlier Event can say it and none is looked for.
  const say = (options: RecordOptions) => sendEvents(deps.event, ref.namespace, activationEvents(facts, before, ending), { [`VectorActivation/${ref.name}`]: ref.uid }, deps.log, options);
  if (!(await writeThenSay(() => writeOver(deps, ref, va, ending.phase, ending.reason, ending.message, { completionTime: kubeTime() }), say, (w) => w))) return false;
  recordActivationPhase(va, ending.phase, reasonOf(ending.reason));
  return true;
}
