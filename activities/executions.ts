/**
 * ActivationExecutions (ADR-0012): one per task and attempt, owned by the VectorActivation; their
 * status as the core sees it, and the wait for an External executor's final status.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { API_VERSION, LABEL_REGISTRATION, LABEL_VECTOR_ACTIVATION } from '../api/group.js';
import { setCondition } from '../api/index.js';
import { apiStatus } from '../k8s/client.js';
import { labelValue } from '../shared/names.js';
import { kubeTime } from '../shared/format.js';
import type { ActivationRef } from '../shared/activation.js';
import { ownerRef, type CoreDeps } from './deps.js';
import type { CustomObject, CustomObjects } from '../k8s/custom-objects.js';
import type { RuleRecord } from '../api/activation-execution.js';
import { recordOf, recordOnce } from './traffic-record.js';

export interface ExecutionToCreate {
  name: string;
  activation: ActivationRef;
  registration: string;
  type: string;
  step: string;
  action: 'Apply' | 'Revert';
  stage: string;
  stageVersion: string;
  previousStageVersion?: string;
  /** Apply: the traffic every managed rule holds afterwards. */
  assignment?: Record<string, number>;
  /** Revert: the Apply execution whose record is put back. */
  revertOf?: string;
  vectorDeployment?: string;
  config: unknown;
  timeoutSeconds: number;
  /**
   * The status it starts with: Pending (an External executor's controller takes it from there, and
   * the default), InProgress, or none (a Worker executor's Apply writes InProgress with its record).
   */
  initial?: 'Pending' | 'none' | { phase: 'InProgress'; message: string; startTime: string };
}

export interface ExecutionStatusWrite {
  phase: 'Pending' | 'InProgress' | 'Succeeded' | 'Error';
  message: string;
  /** Why it ended, e.g. TimedOut or Cancelled when the core gave up on it. */
  reason?: string;
  /**
   * Only the core and a Worker executor write it, and the executor writes no condition: its
   * conditions are known, and a final write needs no read. An External controller may add its own.
   */
  workerOwned?: boolean;
  startTime?: string;
  completionTime?: string;
}

/** What a landscape's worker observed before its first write, for the core to record. */
export interface RecordToWrite {
  namespace: string;
  name: string;
  rules: RuleRecord[];
  /** The same task's execution in an earlier attempt, whose record a rule nobody moved since keeps. */
  earlier?: string;
  /** The InProgress message written with the record (who runs it). */
  takenUp: string;
}

const isFinal = (phase: unknown) => phase === 'Succeeded' || phase === 'Error';

/** An execution's spec is immutable (api/activation-execution.ts): the generation it is created with is its only one. */
const EXECUTION_GENERATION = 1;

/** The activation's executions: by its label, and owned by its uid (a predecessor of the same name has its own). */
export async function ownExecutions(objects: CustomObjects, ref: ActivationRef): Promise<CustomObject[]> {
  const all = await objects.list(
    'ActivationExecution',
    ref.namespace,
    `${LABEL_VECTOR_ACTIVATION}=${labelValue(ref.name)}`,
  );
  return all.filter((e) => e.metadata.ownerReferences?.some((o) => o.uid === ref.uid));
}

/** The writes of an execution's status, for the activities below and the watcher's close-out. */
export function executionWrites(objects: CustomObjects) {
  /**
   * Writes the core's view of an execution. A final phase is final (the CRD refuses to change it):
   * whoever wrote it first, the core or an External executor, decided it.
   */
  async function writeExecutionStatus(namespace: string, name: string, w: ExecutionStatusWrite): Promise<void> {
    const done = isFinal(w.phase);
    // A final write of an execution only we write needs no read: its one condition, Complete, turns
    // True now whatever it was (a final one the CRD refuses to change, below). Any other write
    // carries the conditions it finds over.
    const ae = done && w.workerOwned ? undefined : await objects.get('ActivationExecution', namespace, name);
    if (!(done && w.workerOwned) && (!ae || isFinal(ae.status?.phase))) return;
    const reason = w.reason ?? w.phase;
    const conditions = setCondition(
      ae?.status?.conditions,
      { type: 'Complete', status: done ? 'True' : 'False', reason, message: w.message },
      EXECUTION_GENERATION,
    );
    const { startTime, completionTime } = w;
    try {
      await objects.patchStatus('ActivationExecution', namespace, name, {
        phase: w.phase,
        reason,
        message: w.message,
        conditions,
        observedGeneration: EXECUTION_GENERATION,
        ...(startTime ? { startTime } : {}),
        ...(completionTime ? { completionTime } : {}),
      });
    } catch (err) {
      // 422: an External executor finished it between our read and our write.
      if (apiStatus(err) === 422 && isFinal((await objects.get('ActivationExecution', namespace, name))?.status?.phase))
        return;
      throw err;
    }
  }

  /**
   * Ends every unfinished execution of these (Error, reason Cancelled), so that an External
   * controller stops: the first thing a close-out does (ADR-0012's order).
   */
  async function endUnfinished(namespace: string, executions: readonly CustomObject[], message: string): Promise<void> {
    for (const ae of executions.filter((e) => !isFinal(e.status?.phase))) {
      await writeExecutionStatus(namespace, ae.metadata.name, {
        phase: 'Error',
        reason: 'Cancelled',
        message: `cancelled: ${message}`,
        completionTime: kubeTime(),
      });
    }
  }

  return { writeExecutionStatus, endUnfinished };
}

export function executionActivities({ objects }: CoreDeps) {
  const { writeExecutionStatus, endUnfinished } = executionWrites(objects);
  /**
   * Of these executions, which recorded a rule (a revert puts those back) and which are gone: a
   * deleted one took its record along, so what it changed cannot be put back.
   */
  async function executionRecords(namespace: string, names: string[]): Promise<{ recorded: string[]; gone: string[] }> {
    const found = await Promise.all(names.map((name) => objects.get('ActivationExecution', namespace, name)));
    return {
      recorded: names.filter((_, i) => (found[i]?.status?.record?.rules?.length ?? 0) > 0),
      gone: names.filter((_, i) => !found[i]),
    };
  }
  return {
    async createExecution(e: ExecutionToCreate): Promise<void> {
      const { created } = await objects.createOwned(
        {
          apiVersion: API_VERSION,
          kind: 'ActivationExecution',
          metadata: {
            name: e.name,
            namespace: e.activation.namespace,
            labels: {
              [LABEL_REGISTRATION]: labelValue(e.registration),
              [LABEL_VECTOR_ACTIVATION]: labelValue(e.activation.name),
            },
            ownerReferences: [ownerRef('VectorActivation', e.activation.name, e.activation.uid)],
          },
          spec: {
            type: e.type,
            registration: e.registration,
            vectorActivation: e.activation.name,
            ...(e.vectorDeployment ? { vectorDeployment: e.vectorDeployment } : {}),
            stage: e.stage,
            stageVersion: e.stageVersion,
            ...(e.previousStageVersion ? { previousStageVersion: e.previousStageVersion } : {}),
            ...(e.assignment ? { assignment: e.assignment } : {}),
            ...(e.revertOf ? { revertOf: e.revertOf } : {}),
            step: e.step,
            action: e.action,
            spec: e.config,
            timeoutSeconds: e.timeoutSeconds,
          },
        },
        e.activation.uid,
      );
      const initial =
        e.initial === undefined || e.initial === 'Pending'
          ? { phase: 'Pending', message: 'waiting for its executor' }
          : e.initial;
      if (created && initial !== 'none')
        await objects.patchStatus('ActivationExecution', e.activation.namespace, e.name, initial);
    },

    writeExecutionStatus,

    /** Ends every unfinished execution of the activation (endUnfinished). */
    async endExecutions(ref: ActivationRef, message: string): Promise<void> {
      await endUnfinished(ref.namespace, await ownExecutions(objects, ref), message);
    },

    /**
     * Which of these executions recorded a rule before they changed anything: the ones a revert
     * puts back. One that recorded none (or was never created) changed no route.
     */
    async recordedExecutions(namespace: string, names: string[]): Promise<string[]> {
      return (await executionRecords(namespace, names)).recorded;
    },

    executionRecords,

    /**
     * A landscape's task: the record its worker observed, written by the core (the worker holds no
     * credentials of the control plane) before the worker may change anything; the record already
     * written by an earlier attempt stands (traffic-record.ts). Returns the record kept.
     */
    async recordExecution(i: RecordToWrite): Promise<RuleRecord[]> {
      return recordOnce(objects, i.namespace, i.name, async () => i.rules, i.earlier, i.takenUp);
    },

    /** A landscape's revert: the record of the Apply execution it puts back, read for its worker. */
    async readExecutionRecord(namespace: string, name: string) {
      return recordOf(objects, namespace, name);
    },

    /** Waits for an outside controller to finish an External execution; heartbeats so cancel reaches it. */
    async awaitExternalExecution(namespace: string, name: string): Promise<{ phase: string; message: string }> {
      const ctx = Context.current();
      for (;;) {
        const ae = await objects.get('ActivationExecution', namespace, name);
        if (!ae)
          throw ApplicationFailure.nonRetryable(
            `ActivationExecution ${namespace}/${name} was deleted`,
            'ExecutionDeleted',
          );
        const phase = ae.status?.phase;
        if (isFinal(phase)) return { phase, message: ae.status?.message ?? '' };
        ctx.heartbeat(phase);
        await ctx.sleep(250);
      }
    },
  };
}
