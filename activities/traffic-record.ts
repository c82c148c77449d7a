/**
 * The record a task keeps in its ActivationExecution's status: what the rules it manages held
 * before its first write. Written once (the CRD refuses a change of it), so a retried attempt, a
 * restarted worker or a repeat of the whole activity keeps the first record: a revert then puts
 * back what was there before the task, not what an earlier attempt of it left.
 */
import { ExecutorError, type RuleRecord, type TrafficAssignment } from '../executors/types.js';
import { apiError } from '../executors/routes.js';
import type { CustomObjects } from '../k8s/custom-objects.js';
import { apiStatus } from '../k8s/client.js';
import { kubeTime } from '../shared/format.js';
import { inheritedRecord } from '../decisions/traffic.js';

/** The execution is gone: its VectorActivation was deleted, and nothing may act for it any more. */
export class ExecutionGoneError extends ExecutorError {
  constructor(namespace: string, name: string) {
    super(
      `ActivationExecution ${namespace}/${name} is gone (its VectorActivation was deleted): nothing more is changed for it`,
    );
  }
}

/**
 * The record of `name`: what `observe` finds now, written before it is returned; or the one
 * written already (by an earlier attempt of this task), which the CRD keeps: a write of another
 * record is refused (422), and the one there is read and kept. Nothing may be changed before
 * this returns.
 */
export async function recordOnce(
  objects: CustomObjects,
  namespace: string,
  name: string,
  observe: () => Promise<RuleRecord[]>,
  /** The same task's execution in an earlier attempt, whose record a rule nobody moved since keeps. */
  earlier?: string,
  /** The InProgress message written with the record (who runs it). */
  takenUp?: string,
): Promise<RuleRecord[]> {
  // Both reads at once: a progression's every round after the first has an earlier record.
  const [before, found] = await Promise.all([
    earlier ? objects.get('ActivationExecution', namespace, earlier).catch(() => undefined) : undefined,
    observe(),
  ]);
  const inherited =
    before?.status?.record && before.spec?.assignment
      ? { record: before.status.record.rules as RuleRecord[], assignment: before.spec.assignment }
      : undefined;
  const rules = inheritedRecord(found, inherited);
  // One request on the common path (the first attempt): the write itself, not a read before it.
  // It also takes the execution up (InProgress): a Worker execution is created without a status,
  // and one that ended meanwhile (the core gave up on it) refuses the write, so nothing is changed.
  const now = kubeTime();
  const status = {
    record: { rules, time: now },
    ...(takenUp ? { phase: 'InProgress', message: takenUp, startTime: now } : {}),
  };
  const written = await objects
    .patchStatus('ActivationExecution', namespace, name, status)
    .catch(async (err: unknown) => {
      if (apiStatus(err) !== 422) throw apiError(err, `recording what ActivationExecution ${namespace}/${name} found`);
      const ae = await objects.get('ActivationExecution', namespace, name);
      if (!ae?.status?.record) throw apiError(err, `recording what ActivationExecution ${namespace}/${name} found`);
      return ae.status.record.rules as RuleRecord[];
    });
  if (written === false) throw new ExecutionGoneError(namespace, name);
  return written === true ? rules : written;
}

/**
 * The record of an Apply execution a revert puts back; undefined when it recorded nothing, or was
 * never created: then it changed nothing.
 */
export async function recordOf(
  objects: CustomObjects,
  namespace: string,
  name: string,
): Promise<{ rules: RuleRecord[]; assignment?: TrafficAssignment } | undefined> {
  const ae = await objects.get('ActivationExecution', namespace, name).catch((err: unknown) => {
    throw apiError(err, `reading ActivationExecution ${namespace}/${name}`);
  });
  const rules = ae?.status?.record?.rules as RuleRecord[] | undefined;
  return rules
    ? { rules, ...(ae?.spec?.assignment ? { assignment: ae.spec.assignment as TrafficAssignment } : {}) }
    : undefined;
}
