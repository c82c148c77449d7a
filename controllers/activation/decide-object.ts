/**
 * What the activation controller decides for one activation as its events arrive, and on its
 * periodic sweep of the unfinished ones, as pure functions: the requests to answer (annotations,
 * before and after the start), whether the namespace's pass must run, what a deletion asks for,
 * which deletions seen while standby are handed over, and what a sweep looks at. Table-tested in
 * test/unit/watcher-passes.test.ts beside the pass (decide-pass.ts).
 */
import { FINALIZER_CLOSE_OUT } from '../../api/group.js';
import { isFinal } from '../../decisions/activation.js';
import { watcherActions, type WatcherAction } from '../../decisions/watcher.js';
import type { StageDeletion } from '../../shared/activation.js';
import { stageOf, workflowIdOf, type CachedActivation } from '../../shared/cached-activation.js';

/** A request to carry out, keyed so that one already in flight is not carried out twice. */
export interface RequestStep {
  key: string;
  action: Exclude<WatcherAction, { kind: 'ensure' }>;
  /** A relay to an activation whose workflow has not started: answered without Temporal (beforeStartAnswer). */
  beforeStart: boolean;
}

export interface ObjectDecision {
  /** The namespace's pass must run: the activation is unfinished and no workflow is known to run it. */
  pass: boolean;
  requests: RequestStep[];
}

/** For one activation, from the object alone (decisions/watcher.ts) and the workflows known to run. */
export function decideObject(cachedActivation: CachedActivation, running: ReadonlySet<string>): ObjectDecision {
  const actions = watcherActions({
    phase: cachedActivation.status?.phase,
    deleting: Boolean(cachedActivation.metadata?.deletionTimestamp),
    closing: cachedActivation.metadata?.finalizers?.includes(FINALIZER_CLOSE_OUT) ?? false,
    annotations: cachedActivation.metadata?.annotations ?? {},
    answered: cachedActivation.status?.requests ?? [],
  });
  const id = workflowIdOf(cachedActivation);
  // The workflow starts only from the namespace's pass (Stage limit, bursts superseded before they
  // start), whatever requests the activation carries.
  const pass = actions.some((action) => action.kind === 'ensure') && !running.has(id);
  const notStarted =
    !isFinal(cachedActivation.status?.phase) && !running.has(id) && !cachedActivation.status?.workflowId;
  const requests = actions.flatMap((action): RequestStep[] =>
    action.kind === 'ensure'
      ? []
      : [
          {
            key: `${cachedActivation.metadata!.uid}/${action.kind}/${'token' in action ? action.token : ''}`,
            action,
            beforeStart: notStarted && action.kind === 'relay',
          },
        ],
  );
  return { pass, requests };
}

/**
 * A deletion seen by the watch: nothing for a Succeeded or Skipped one (nothing runs); else its
 * workflow is told, now when acting, or by whoever acts in the namespace next.
 */
export function decideDeleted(activation: CachedActivation, acting: boolean): 'nothing' | 'signal' | 'later' {
  if (['Succeeded', 'Skipped'].includes(activation.status?.phase ?? '')) return 'nothing';
  return acting ? 'signal' : 'later';
}

/** A Stage as the activation controller caches it: which one it is, and whether it is being deleted. */
export interface CachedStage {
  kind?: string;
  metadata?: {
    name?: string;
    namespace?: string;
    uid?: string;
    resourceVersion?: string;
    deletionTimestamp?: Date | string;
  };
}

/**
 * A Stage's event, when it is deleted or being deleted and its activations were not told yet:
 * the notice, and the workflows of its unfinished activations to send it to (each acts only when it
 * validated that Stage, by uid: an activation of a new Stage of the same name goes on).
 * `told`: the uids of the Stages whose deletion was announced already.
 */
export function decideStageEvent(
  type: 'ADDED' | 'MODIFIED' | 'DELETED',
  stage: CachedStage,
  activations: Iterable<CachedActivation>,
  told: ReadonlySet<string>,
): { notice: StageDeletion; workflowIds: string[] } | undefined {
  const { namespace, name, uid, deletionTimestamp } = stage.metadata ?? {};
  if (!namespace || !name || !uid || told.has(uid)) return undefined;
  if (type !== 'DELETED' && !deletionTimestamp) return undefined;
  const workflowIds = [...activations]
    .filter(
      (activation) =>
        activation.metadata?.namespace === namespace &&
        stageOf(activation) === name &&
        !isFinal(activation.status?.phase),
    )
    .map(workflowIdOf);
  return { notice: { namespace, stage: name, uid, ...(type === 'DELETED' ? {} : { deleting: true }) }, workflowIds };
}

/** Deletions seen while standby are handed to the workflows when it takes over, if this recent. */
export const STANDBY_DELETIONS_KEPT_MS = 5 * 60_000;

/**
 * Of the deletions seen while not acting (by workflow id: when, and what to tell), those to hand to
 * their workflows now (in namespaces it acts in) and those still kept for later; the old ones go.
 */
export function handOver<T extends { at: number }>(
  deletions: ReadonlyMap<string, T>,
  now: number,
  serves: (namespace: string) => boolean,
): { signal: [string, T][]; keep: Map<string, T> } {
  const signal: [string, T][] = [];
  const keep = new Map<string, T>();
  for (const [workflowId, seen] of deletions) {
    if (!serves(workflowId.split('/')[1]!)) keep.set(workflowId, seen);
    else if (now - seen.at <= STANDBY_DELETIONS_KEPT_MS) signal.push([workflowId, seen]);
  }
  return { signal, keep };
}

/**
 * Activations waiting at a progression's gate sit still for hours or days: their workflows are not
 * looked at one by one at every sweep. One visibility query a sweep lists the activation workflows
 * that closed since the sweep before; only those are looked at. Every this many sweeps, all are
 * (a workflow gone without a close, say, after the retention).
 */
export const GATED_FULL_CHECK_EVERY = 20;

/** Whether sweep number `count` (from 0) looks at every workflow; so does the first. */
export const fullSweep = (count: number, since: number | undefined) =>
  count % GATED_FULL_CHECK_EVERY === 0 || since === undefined;

export type SweepStep =
  /** Deleted, waiting for its close-out finalizer: decide again (the deletion reaches its workflow, or a close-out). */
  | 'reconcile'
  /** Not started: held, or its start failed; the namespace's pass decides again. */
  | 'pass'
  /** Its workflow may have closed without finishing it: look, and close it out if so. */
  | 'check'
  | 'skip';

/**
 * What the sweep does for one cached activation in a namespace it acts in. `closed`: the workflows
 * the visibility query found closed since the sweep before; undefined, every one is looked at.
 */
export function sweepStep(
  activation: CachedActivation,
  running: ReadonlySet<string>,
  closed: ReadonlySet<string> | undefined,
): SweepStep {
  if (activation.metadata?.deletionTimestamp)
    return activation.metadata.finalizers?.includes(FINALIZER_CLOSE_OUT) ? 'reconcile' : 'skip';
  if (isFinal(activation.status?.phase)) return 'skip';
  const id = workflowIdOf(activation);
  if (!running.has(id) && !activation.status?.workflowId) return 'pass';
  if (closed && activation.status?.progression?.gate && !closed.has(id)) return 'skip';
  return 'check';
}
