/**
 * The record a task keeps in its ActivationExecution's status: what the rules it manages held
 * before its first write. Written once (the CRD refuses a change of it), so a retried attempt, a
 * restarted worker or a repeat of the whole activity finds the first record and keeps it: a revert
 * then puts back what was there before the task, not what an earlier attempt of it left.
 */
import { ExecutorError, type RuleRecord } from '../executors/types.js';
import { apiError } from '../executors/routes.js';
import type { CustomObjects } from '../k8s/custom-objects.js';
import { kubeTime } from '../shared/format.js';
import { inheritedRecord } from '../decisions/traffic.js';

/** The execution is gone: its VectorActivation was deleted, and nothing may act for it any more. */
export class ExecutionGoneError extends ExecutorError {
  constructor(namespace: string, name: string) {
    super(`ActivationExecution ${namespace}/${name} is gone (its VectorActivation was deleted): nothing more is changed for it`);
  }
}

const ATTEMPTS = 5;

/**
 * The record of `name`: the one written already, or what `observe` finds now, written before it is
 * returned. Nothing may be changed before this returns.
 */
export async function recordOnce(
  objects: CustomObjects,
  namespace: string,
  name: string,
  observe: () => Promise<RuleRecord[]>,
  /** The same task's execution in an earlier attempt, whose record a rule nobody moved since keeps. */
  earlier?: string,
): Promise<RuleRecord[]> {
  const before = earlier ? await objects.get('ActivationExecution', namespace, earlier).catch(() => undefined) : undefined;
  const inherited = before?.status?.record && before.spec?.assignment ? { record: before.status.record.rules as RuleRecord[], assignment: before.spec.assignment } : undefined;
  for (let attempt = 1; ; attempt++) {
    const ae = await objects.get('ActivationExecution', namespace, name).catch((err: unknown) => {
      throw apiError(err, `reading ActivationExecution ${namespace}/${name}`);
    });
    if (!ae || ae.metadata.deletionTimestamp) throw new ExecutionGoneError(namespace, name);
    if (ae.status?.record) return ae.status.record.rules as RuleRecord[];
    const rules = inheritedRecord(await observe(), inherited);
    // Conditional on what was read: a status written meanwhile (the core's, an earlier attempt's
    // record) makes us read again instead of writing over it.
    const written = await objects.patchStatusAt('ActivationExecution', namespace, name, ae.metadata.resourceVersion!, { record: { rules, time: kubeTime() } }).catch((err: unknown) => {
      throw apiError(err, `recording what ActivationExecution ${namespace}/${name} found`);
    });
    if (written) return rules;
    if (attempt >= ATTEMPTS) throw new ExecutorError(`could not record what ActivationExecution ${namespace}/${name} found: it changed ${ATTEMPTS} times while recording`, true);
  }
}

/**
 * The record of an Apply execution a revert puts back; undefined when it recorded nothing, or was
 * never created: then it changed nothing.
 */
export async function recordOf(objects: CustomObjects, namespace: string, name: string): Promise<RuleRecord[] | undefined> {
  const ae = await objects.get('ActivationExecution', namespace, name).catch((err: unknown) => {
    throw apiError(err, `reading ActivationExecution ${namespace}/${name}`);
  });
  return ae?.status?.record?.rules as RuleRecord[] | undefined;
}
