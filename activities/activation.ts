/**
 * The activation workflow's Kubernetes side: reading the VectorActivation, its Stage and plan,
 * creating ActivationExecutions and usages, mirroring the lock into a Lease and writing status.
 * Every activity is safe to repeat: creates tolerate "exists", deletes "gone", writes converge.
 */
import { ApplicationFailure, Context } from '@temporalio/activity';
import { ANNOTATION_ACTIVATED_BY, ANNOTATION_SERVING, API_VERSION, LABEL_REGISTRATION, LABEL_USAGE, LABEL_VECTOR_ACTIVATION } from '../api/group.js';
import { setCondition, type Condition, type VectorActivationPhase } from '../api/index.js';
import { apiStatus, k8s } from '../k8s/client.js';
import { CustomObjects, type CustomObject } from '../k8s/custom-objects.js';
import { executorFor } from '../executors/index.js';
import type { StageVersionInfo } from '../executors/types.js';
import { activationUsageName, activeUsageName, stageLeaseName } from '../shared/names.js';
import type { ActivationRef } from '../shared/activation.js';

export interface PlannedTask {
  registration: string;
  type: string;
  executor: 'Worker' | 'External';
  config: unknown;
  timeoutSeconds: number;
  heartbeatTimeoutSeconds?: number;
}

export interface ResolvedPlan {
  /** For people: "plan konfidence-system/default" or "every registration (no plan)". */
  source: string;
  onFailure: 'Stop' | 'Revert';
  steps: { name: string; tasks: PlannedTask[] }[];
}

export interface LoadedActivation {
  uid: string;
  generation: number;
  stage: string;
  stageVersion: string;
  vector?: string;
  vectorDeployment?: string;
  executionPlan?: string;
}

export interface ActivationStatusUpdate {
  phase: VectorActivationPhase;
  reason: string;
  message: string;
  workflowId: string;
  workflowUrl?: string;
  attempt: number;
  previousStageVersion?: string;
  firstError?: string;
  startTime?: string;
  completionTime?: string;
  steps?: unknown[];
}

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
  vectorDeployment?: string;
  config: unknown;
  timeoutSeconds: number;
}

const FINAL = new Set(['Succeeded', 'Failed', 'Skipped', 'Cancelled']);

/** A failure no retry can mend: the workflow reports it instead of retrying. */
function invalid(type: string, message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, type);
}

function ownerRef(kind: string, name: string, uid: string) {
  return { apiVersion: API_VERSION, kind, name, uid, blockOwnerDeletion: true };
}

function toInfo(sv: CustomObject): StageVersionInfo {
  return { name: sv.metadata.name, revision: sv.spec.revision, vector: sv.spec.vector, ...(sv.spec.backend ? { backend: sv.spec.backend } : {}) };
}

function conditionsFor(phase: VectorActivationPhase, reason: string, message: string): Pick<Condition, 'type' | 'status' | 'reason' | 'message'>[] {
  const final = FINAL.has(phase);
  return [
    { type: 'Progressing', status: final ? 'False' : 'True', reason, message },
    { type: 'Succeeded', status: phase === 'Succeeded' ? 'True' : final ? 'False' : 'Unknown', reason, message },
  ];
}

export interface ActivationActivityDeps {
  kubeConfig: k8s.KubeConfig;
  systemNamespace: string;
}

export function createActivationActivities({ kubeConfig, systemNamespace }: ActivationActivityDeps) {
  const objects = new CustomObjects(kubeConfig);
  const leases = kubeConfig.makeApiClient(k8s.CoordinationV1Api);

  async function stageVersionsOf(namespace: string, stage: string): Promise<StageVersionInfo[]> {
    const all = await objects.list('StageVersion', namespace);
    return all.filter((sv) => sv.spec?.stage === stage).map(toInfo).sort((a, b) => a.revision - b.revision);
  }

  async function registration(name: string): Promise<PlannedTask> {
    const reg = await objects.get('ActivationTaskRegistration', systemNamespace, name);
    if (!reg) throw invalid('InvalidPlan', `ActivationTaskRegistration ${systemNamespace}/${name} does not exist`);
    const spec = reg.spec;
    const executor = executorFor(spec.type);
    if (spec.executor !== 'External' && executor) {
      const parsed = executor.config.safeParse(spec.spec ?? {});
      if (!parsed.success) {
        const problems = parsed.error.issues.map((i) => `${['spec', ...i.path].join('.')}: ${i.message}`).join('; ');
        throw invalid('InvalidExecutorSpec', `ActivationTaskRegistration ${systemNamespace}/${name} (type ${spec.type}) has an invalid spec: ${problems}`);
      }
    }
    return {
      registration: name,
      type: spec.type,
      executor: spec.executor ?? 'Worker',
      config: spec.spec ?? {},
      timeoutSeconds: spec.timeoutSeconds ?? 300,
      ...(spec.heartbeatTimeoutSeconds ? { heartbeatTimeoutSeconds: spec.heartbeatTimeoutSeconds } : {}),
    };
  }

  return {
    /** The VectorActivation, or undefined when it is gone (or re-created under a new uid). */
    async loadActivation(ref: ActivationRef): Promise<LoadedActivation | undefined> {
      const va = await objects.get('VectorActivation', ref.namespace, ref.name);
      if (!va || va.metadata.uid !== ref.uid) return undefined;
      return { uid: ref.uid, generation: va.metadata.generation ?? 1, ...va.spec };
    },

    /** The Stage's StageVersions (oldest first); throws when the Stage or the StageVersion is missing. */
    async describeStage(namespace: string, stage: string, stageVersion: string): Promise<{ stageUid: string; stageVersions: StageVersionInfo[]; target: StageVersionInfo }> {
      const st = await objects.get('Stage', namespace, stage);
      if (!st) throw invalid('StageNotFound', `Stage ${namespace}/${stage} does not exist`);
      const stageVersions = await stageVersionsOf(namespace, stage);
      const target = stageVersions.find((sv) => sv.name === stageVersion);
      if (!target) {
        const other = await objects.get('StageVersion', namespace, stageVersion);
        throw invalid(
          'StageVersionNotFound',
          other ? `StageVersion ${namespace}/${stageVersion} belongs to Stage ${other.spec.stage}, not ${stage}` : `StageVersion ${namespace}/${stageVersion} does not exist`,
        );
      }
      return { stageUid: st.metadata.uid!, stageVersions, target };
    },

    /** Name of the StageVersion the Stage's "active" usage points at, if any. */
    async readActiveStageVersion(namespace: string, stage: string): Promise<string | undefined> {
      const usage = await objects.get('StageVersionUsage', namespace, activeUsageName(stage));
      return usage?.spec?.stageVersionRef?.name;
    },

    /** The steps to run; refuses a plan that names a missing registration or an invalid executor spec. */
    async resolvePlan(planName: string | undefined): Promise<ResolvedPlan> {
      const name = planName ?? 'default';
      const plan = await objects.get('ActivationExecutionPlan', systemNamespace, name);
      if (!plan && planName) throw invalid('InvalidPlan', `ActivationExecutionPlan ${systemNamespace}/${planName} does not exist`);
      if (plan) {
        const steps = [];
        for (const step of plan.spec.steps as { name: string; tasks: string[] }[]) {
          steps.push({ name: step.name, tasks: await Promise.all(step.tasks.map(registration)) });
        }
        return { source: `plan ${systemNamespace}/${name}`, onFailure: plan.spec.onFailure ?? 'Stop', steps };
      }
      // No plan: every registration, one per step, in name order (routing order matters; make it known).
      const regs = (await objects.list('ActivationTaskRegistration', systemNamespace)).map((r) => r.metadata.name).sort();
      if (regs.length === 0) throw invalid('InvalidPlan', `no ActivationExecutionPlan and no ActivationTaskRegistration in ${systemNamespace}`);
      const tasks = await Promise.all(regs.map(registration));
      return { source: 'every registration, in name order (no plan)', onFailure: 'Stop', steps: tasks.map((t) => ({ name: t.registration, tasks: [t] })) };
    },

    /** The "activation" usage (owner: the VectorActivation) that holds the StageVersion during the switch. */
    async holdActivationUsage(ref: ActivationRef, stage: string, stageVersion: string): Promise<void> {
      await objects.create({
        apiVersion: API_VERSION,
        kind: 'StageVersionUsage',
        metadata: {
          name: activationUsageName(ref.name),
          namespace: ref.namespace,
          labels: { [LABEL_USAGE]: 'activation', 'konfidence.cloud/stage-name': stage },
          ownerReferences: [ownerRef('VectorActivation', ref.name, ref.uid)],
        },
        spec: { reason: `activation ${ref.name} switches Stage ${stage} to it`, stageVersionRef: { name: stageVersion } },
      });
    },

    /**
     * Marks the StageVersion as in activation (the admission policy then refuses spec changes and
     * deletion) and reports whether it was already being deleted. Mark first, then read: a delete
     * before the mark shows in the read, a delete after it is refused.
     */
    async markStageVersion(namespace: string, name: string, holder: string): Promise<{ terminating: boolean }> {
      await objects.mergeMetadata('StageVersion', namespace, name, { annotations: { [ANNOTATION_ACTIVATED_BY]: holder } });
      const sv = await objects.get('StageVersion', namespace, name);
      return { terminating: !sv || Boolean(sv.metadata.deletionTimestamp) };
    },

    /** Moves the serving mark (no deletion while serving) to `to`, or clears it from `from`. */
    async markServing(namespace: string, name: string, stage: string | null): Promise<void> {
      await objects.mergeMetadata('StageVersion', namespace, name, { annotations: { [ANNOTATION_SERVING]: stage } });
    },

    /** Clears the mark if it is still ours; a StageVersion deleted meanwhile is fine. */
    async unmarkStageVersion(namespace: string, name: string, holder: string): Promise<void> {
      const sv = await objects.get('StageVersion', namespace, name);
      if (sv?.metadata.annotations?.[ANNOTATION_ACTIVATED_BY] !== holder) return;
      await objects.mergeMetadata('StageVersion', namespace, name, { annotations: { [ANNOTATION_ACTIVATED_BY]: null } });
    },

    async releaseActivationUsage(ref: ActivationRef): Promise<void> {
      await objects.delete('StageVersionUsage', ref.namespace, activationUsageName(ref.name));
    },

    /** Points the Stage's "active" usage (owner: the Stage) at the StageVersion, creating it if needed. */
    async pointActiveUsage(namespace: string, stage: string, stageUid: string, stageVersion: string): Promise<void> {
      const spec = { reason: `serves the traffic of Stage ${stage}`, stageVersionRef: { name: stageVersion } };
      const { object, created } = await objects.create({
        apiVersion: API_VERSION,
        kind: 'StageVersionUsage',
        metadata: {
          name: activeUsageName(stage),
          namespace,
          labels: { [LABEL_USAGE]: 'active', 'konfidence.cloud/stage-name': stage },
          ownerReferences: [ownerRef('Stage', stage, stageUid)],
        },
        spec,
      });
      if (!created && object.spec?.stageVersionRef?.name !== stageVersion) {
        await objects.mergeSpec('StageVersionUsage', namespace, activeUsageName(stage), { ...spec, stageVersionSelector: null });
      }
    },

    /** Writes phase, conditions and progress; false when the VectorActivation is gone. */
    async writeActivationStatus(ref: ActivationRef, update: ActivationStatusUpdate): Promise<boolean> {
      const va = await objects.get('VectorActivation', ref.namespace, ref.name);
      if (!va || va.metadata.uid !== ref.uid) return false;
      let conditions: Condition[] = va.status?.conditions ?? [];
      for (const c of conditionsFor(update.phase, update.reason, update.message)) {
        conditions = setCondition(conditions, c, va.metadata.generation);
      }
      return objects.patchStatus('VectorActivation', ref.namespace, ref.name, {
        ...update,
        observedGeneration: va.metadata.generation,
        conditions,
      });
    },

    async createExecution(e: ExecutionToCreate): Promise<void> {
      const { created } = await objects.create({
        apiVersion: API_VERSION,
        kind: 'ActivationExecution',
        metadata: {
          name: e.name,
          namespace: e.activation.namespace,
          labels: { [LABEL_REGISTRATION]: e.registration, [LABEL_VECTOR_ACTIVATION]: e.activation.name },
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
          step: e.step,
          action: e.action,
          spec: e.config,
          timeoutSeconds: e.timeoutSeconds,
        },
      });
      if (created) {
        await objects.patchStatus('ActivationExecution', e.activation.namespace, e.name, { phase: 'Pending', message: 'waiting for its executor' });
      }
    },

    async writeExecutionStatus(namespace: string, name: string, phase: string, message: string, times: { startTime?: string; completionTime?: string } = {}): Promise<void> {
      const ae = await objects.get('ActivationExecution', namespace, name);
      if (!ae) return;
      // An execution that reached a final phase keeps it: a late write must not reopen it.
      if (ae.status?.phase === 'Succeeded' || (ae.status?.phase === 'Error' && phase !== 'Error')) return;
      const conditions = setCondition(ae.status?.conditions, { type: 'Complete', status: phase === 'Succeeded' || phase === 'Error' ? 'True' : 'False', reason: phase, message }, ae.metadata.generation);
      await objects.patchStatus('ActivationExecution', namespace, name, { phase, message, conditions, observedGeneration: ae.metadata.generation, ...times });
    },

    /** Waits for an outside controller to finish an External execution; heartbeats so cancel reaches it. */
    async awaitExternalExecution(namespace: string, name: string): Promise<{ phase: string; message: string }> {
      const ctx = Context.current();
      for (;;) {
        const ae = await objects.get('ActivationExecution', namespace, name);
        if (!ae) throw invalid('ExecutionDeleted', `ActivationExecution ${namespace}/${name} was deleted`);
        const phase = ae.status?.phase;
        if (phase === 'Succeeded' || phase === 'Error') return { phase, message: ae.status?.message ?? '' };
        ctx.heartbeat(phase);
        await ctx.sleep(250);
      }
    },

    /** Mirrors the lock into a coordination.k8s.io Lease so kubectl shows who holds the Stage. */
    async holdStageLease(namespace: string, stage: string, holder: string, durationSeconds: number): Promise<void> {
      const name = stageLeaseName(stage);
      const now = new k8s.V1MicroTime();
      for (let attempt = 0; attempt < 5; attempt++) {
        let lease: k8s.V1Lease | undefined;
        try {
          lease = await leases.readNamespacedLease({ name, namespace });
        } catch (err) {
          if (apiStatus(err) !== 404) throw err;
        }
        if (!lease) {
          try {
            await leases.createNamespacedLease({
              namespace,
              body: {
                metadata: { name, namespace, labels: { 'konfidence.cloud/stage-name': stage } },
                spec: { holderIdentity: holder, leaseDurationSeconds: durationSeconds, acquireTime: now, renewTime: now, leaseTransitions: 0 },
              },
            });
            return;
          } catch (err) {
            if (apiStatus(err) === 409) continue;
            throw err;
          }
        }
        const spec = lease.spec ?? {};
        const transition = spec.holderIdentity !== holder;
        lease.spec = {
          ...spec,
          holderIdentity: holder,
          leaseDurationSeconds: durationSeconds,
          renewTime: now,
          ...(transition ? { acquireTime: now, leaseTransitions: (spec.leaseTransitions ?? 0) + 1 } : {}),
        };
        try {
          await leases.replaceNamespacedLease({ name, namespace, body: lease });
          return;
        } catch (err) {
          if (apiStatus(err) !== 409) throw err;
        }
      }
      throw new Error(`Lease ${namespace}/${name} kept changing under us`);
    },

    /** Clears the Lease's holder if it is still ours (a later holder's claim is left alone). */
    async releaseStageLease(namespace: string, stage: string, holder: string): Promise<void> {
      const name = stageLeaseName(stage);
      try {
        const lease = await leases.readNamespacedLease({ name, namespace });
        if (lease.spec?.holderIdentity !== holder) return;
        lease.spec = { ...lease.spec, holderIdentity: undefined, renewTime: undefined };
        await leases.replaceNamespacedLease({ name, namespace, body: lease });
      } catch (err) {
        if (apiStatus(err) !== 404 && apiStatus(err) !== 409) throw err;
      }
    },
  };
}

export type ActivationActivities = ReturnType<typeof createActivationActivities>;
