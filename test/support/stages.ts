/** Helpers for Stage-level tests: the deployment's Ready signal and a fast default plan. */
import { kubeTime } from '../../shared/format.js';
import type { TestSystem } from './system.js';
import { create, object } from './system.js';

/** What a deployment does when a StageVersion is rolled out: condition Ready=True. */
export async function markReady(s: TestSystem, name: string): Promise<void> {
  await s.objects.patchStatus('StageVersion', s.ns, name, {
    phase: 'Ready',
    conditions: [
      {
        type: 'Ready',
        status: 'True',
        reason: 'RolledOut',
        message: 'deployment available',
        lastTransitionTime: kubeTime(),
      },
    ],
  });
}

/**
 * What a deployment does with a StageVersion the Stage controller created: fills in where it
 * receives traffic, then reports it rolled out.
 */
export async function rollOut(
  s: TestSystem,
  name: string,
  backend: { service: string; port?: number; subset?: string },
): Promise<void> {
  const sv = await s.objects.get('StageVersion', s.ns, name);
  if (!sv) throw new Error(`StageVersion ${s.ns}/${name} does not exist`);
  await s.objects.mergeSpec('StageVersion', s.ns, name, { ...sv.spec, backend });
  await markReady(s, name);
}

/** A default plan of one quick task (an executor that only waits), for Stages without routes. */
export async function quickDefaultPlan(s: TestSystem, seconds = 0): Promise<void> {
  await create(
    s,
    object('ActivationTaskRegistration', s.systemNs, 'quick', {
      type: 'sleepy',
      timeoutSeconds: 60,
      spec: { seconds },
    }),
  );
  await create(
    s,
    object('ActivationExecutionPlan', s.systemNs, 'default', { steps: [{ name: 'switch', tasks: ['quick'] }] }),
  );
}
