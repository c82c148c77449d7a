/**
 * The one place that writes a VectorActivation's status. The workflow's activities write the run's
 * progress through it (activities/activation-status.ts), in one JSON patch over the status the
 * workflow knows (decisions/status-write.ts) or else after a read; the activation controller
 * (controllers/activation/) writes through it what it decides without a workflow: held back by the
 * namespace's Stage limit (phase Waiting, reason NamespaceLimit, so `kubectl get va` says why it
 * has not started), superseded or cancelled before it started, the answer to a request annotation
 * (status.requests), and the final status of a close-out. A write on an activation that has no
 * workflow yet is conditional on the resourceVersion it read, so it never lands over a status a
 * workflow wrote meanwhile; repeating any write changes nothing.
 */
import type { Condition, VectorActivationPhase } from '../api/index.js';
import { isFinal, reasonOf } from '../decisions/activation.js';
import { carriedConditions } from '../decisions/status-write.js';
import { activationEvents, requestEvent, type StatusView } from '../decisions/events.js';
import { NAMESPACE_LIMIT_REASON } from '../decisions/fair-share.js';
import { SUPERSEDED_REASON } from '../decisions/supersede.js';
import type { AnnotationRequest } from '../decisions/watcher.js';
import { writeThenSay } from '../activities/transition-events.js';
import { recordEvents, sendEvents, type EventRecorder, type RecordOptions } from './events.js';
import type { CustomObject, CustomObjects } from './custom-objects.js';
import { kubeTime } from '../shared/format.js';
import type { ActivationRef } from '../shared/activation.js';
import type { LogFn } from '../telemetry/log.js';
import { recordActivationPhase } from '../telemetry/metrics.js';

/** What a status write needs (activities/deps.ts CoreDeps has it). */
export interface StoreDeps {
  objects: CustomObjects;
  event: EventRecorder;
  log: LogFn;
}

/**
 * The activation's conditions once its status says `phase` (lastTransitionTime moves only on a
 * change): every status write with a phase uses it.
 */
export function conditionsAfter(
  va: { status?: { conditions?: Condition[] }; metadata: { generation?: number } },
  phase: VectorActivationPhase,
  reason: string,
  message: string,
): Condition[] {
  return carriedConditions(va.status?.conditions, va.metadata.generation, phase, reason, message, new Date());
}

/** The activation as it is now, unless it is gone or re-created under another uid. */
export async function readActivation(
  deps: Pick<StoreDeps, 'objects'>,
  ref: ActivationRef,
): Promise<CustomObject | undefined> {
  const va = await deps.objects.get('VectorActivation', ref.namespace, ref.name);
  return va && va.metadata.uid === ref.uid ? va : undefined;
}

/** A merge patch of the status, unconditional: the writer owns the fields it writes (the run, a close-out, an answer). */
export function patchActivationStatus(
  deps: Pick<StoreDeps, 'objects'>,
  ref: ActivationRef,
  status: Record<string, unknown>,
): Promise<boolean> {
  return deps.objects.patchStatus('VectorActivation', ref.namespace, ref.name, status);
}

/**
 * The workflow's write over the status it knows (decisions/status-write.ts statusPatch): the object
 * as written, undefined when it is gone; a failed `test` (the object not as known) answers 422.
 */
export function patchActivationStatusOver(
  deps: Pick<StoreDeps, 'objects'>,
  ref: ActivationRef,
  ops: object[],
): Promise<CustomObject | undefined> {
  return deps.objects.jsonPatchStatus('VectorActivation', ref.namespace, ref.name, ops);
}

/** Writes phase, reason, message and their conditions, only over the status that `va` holds (its resourceVersion). */
function writeOver(
  deps: StoreDeps,
  ref: ActivationRef,
  va: CustomObject,
  phase: VectorActivationPhase,
  reason: string,
  message: string,
  extra: Record<string, unknown> = {},
): Promise<boolean> {
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
export async function holdActivation(deps: StoreDeps, ref: ActivationRef, message: string): Promise<boolean> {
  const va = await readActivation(deps, ref);
  const status = va?.status ?? {};
  if (
    !va ||
    isFinal(status.phase) ||
    status.workflowId ||
    (status.reason === NAMESPACE_LIMIT_REASON && status.message === message)
  )
    return false;
  return writeOver(deps, ref, va, 'Waiting', NAMESPACE_LIMIT_REASON, message);
}

/**
 * Ends an activation that has no workflow yet as Skipped/Superseded (decisions/supersede.ts), with
 * its Events; conditional on the resourceVersion read (or, for one without any status yet, the
 * one the controller saw), like the hold. True when the activation is final now (this write, or an
 * earlier one: it must not start); false when it is gone, has a workflow, or changed since the read
 * (it starts, and its workflow decides).
 */
export async function skipBeforeStart(
  deps: StoreDeps,
  ref: ActivationRef,
  message: string,
  seen?: CustomObject,
): Promise<boolean> {
  return (await endBeforeStart(deps, ref, { phase: 'Skipped', reason: SUPERSEDED_REASON, message }, seen)) !== 'not';
}

/**
 * Ends an activation that has no workflow yet as Cancelled (a cancel asked while it waited its
 * turn), as skipBeforeStart does; true only when this write ended it (one final by other means
 * answers its request as a final activation does).
 */
export async function cancelBeforeStart(deps: StoreDeps, ref: ActivationRef, message: string): Promise<boolean> {
  return (await endBeforeStart(deps, ref, { phase: 'Cancelled', reason: 'Cancelled', message })) === 'ended';
}

type Ending = { phase: 'Skipped' | 'Cancelled'; reason: string; message: string };

/** 'ended' by this write, 'final' already, or 'not' (gone, has a workflow, or changed since the read). */
async function endBeforeStart(
  deps: StoreDeps,
  ref: ActivationRef,
  ending: Ending,
  seen?: CustomObject,
): Promise<'ended' | 'final' | 'not'> {
  // A burst's loser the controller saw a moment ago without any status is written over as seen,
  // one read less per loser; had anything written it since, the write conflicts and it is read.
  const fresh = seen && seen.metadata.uid === ref.uid && seen.status === undefined ? seen : undefined;
  if (fresh && (await endOver(deps, ref, fresh, ending))) return 'ended';
  const va = await readActivation(deps, ref);
  if (!va) return 'not';
  if (isFinal(va.status?.phase)) return 'final';
  return !va.status?.workflowId && (await endOver(deps, ref, va, ending)) ? 'ended' : 'not';
}

/** Writes the ending over `va` (its resourceVersion) and, when written, its Events and the phase metric. */
async function endOver(deps: StoreDeps, ref: ActivationRef, va: CustomObject, ending: Ending): Promise<boolean> {
  const before = (va.status ?? {}) as StatusView;
  const facts = { name: ref.name, stage: va.spec.stage, stageVersion: va.spec.stageVersion };
  // Said by the write that made the ending (activities/transition-events.ts): conditional on the
  // resourceVersion seen, so no earlier Event can say it and none is looked for.
  const say = (options: RecordOptions) =>
    sendEvents(
      deps.event,
      ref.namespace,
      activationEvents(facts, before, ending),
      { [`VectorActivation/${ref.name}`]: ref.uid },
      deps.log,
      options,
    );
  if (
    !(await writeThenSay(
      () => writeOver(deps, ref, va, ending.phase, ending.reason, ending.message, { completionTime: kubeTime() }),
      say,
      (w) => w,
    ))
  )
    return false;
  recordActivationPhase(va, ending.phase, reasonOf(ending.reason));
  return true;
}

/** An answer to a request annotation. */
export interface RequestAnswer {
  action: AnnotationRequest;
  token: string;
  outcome: 'Accepted' | 'Refused';
  message: string;
  by?: string;
}

/**
 * Writes the answer to an annotation into status.requests (one entry per action, the latest) and
 * an Event; nothing when the activation is gone or re-created. `fence` runs right before the first
 * write (a deposed or resharded controller's throws).
 */
export async function answerRequest(
  deps: StoreDeps,
  ref: ActivationRef,
  a: RequestAnswer,
  fence: () => void = () => undefined,
): Promise<void> {
  const va = await readActivation(deps, ref);
  if (!va) return;
  const entry = {
    action: a.action,
    token: a.token,
    outcome: a.outcome,
    ...(a.by ? { by: a.by } : {}),
    message: a.message.slice(0, 4096),
    time: kubeTime(),
  };
  fence();
  const requests = [
    ...((va.status?.requests ?? []) as { action: string }[]).filter((r) => r.action !== a.action),
    entry,
  ];
  // The Event first: answering again after a crash between the two counts it instead of losing it.
  await recordEvents(
    deps.event,
    ref.namespace,
    [requestEvent(ref.name, a.action, a.token, a.outcome, a.message, a.by)],
    { [`VectorActivation/${ref.name}`]: ref.uid },
  );
  await patchActivationStatus(deps, ref, { requests });
}

/**
 * The final status of an activation closed out without its workflow (Failed, saying why), with its
 * Events: `va` is the object as read before the close-out released what it held.
 */
export async function writeClosedOut(
  deps: StoreDeps,
  ref: ActivationRef,
  va: CustomObject,
  why: { reason: string; message: string },
): Promise<void> {
  const conditions = conditionsAfter(va, 'Failed', why.reason, why.message);
  const before = (va.status ?? {}) as StatusView;
  const firstError = va.status?.firstError ?? why.message;
  const facts = { name: ref.name, stage: va.spec.stage, stageVersion: va.spec.stageVersion };
  await recordEvents(
    deps.event,
    ref.namespace,
    activationEvents(facts, before, {
      ...before,
      phase: 'Failed',
      reason: why.reason,
      message: why.message,
      firstError,
    }),
    { [`VectorActivation/${ref.name}`]: ref.uid },
  );
  await patchActivationStatus(deps, ref, {
    phase: 'Failed',
    reason: why.reason,
    message: why.message,
    firstError,
    completionTime: kubeTime(),
    observedGeneration: va.metadata.generation,
    conditions,
  });
}
