/**
 * The plan's progression (workflows/progression.ts) for one attempt, with what it asks of the run:
 * the rounds of the plan's steps at a weight, the restore, the status writes. Its run() is 'switch'
 * once the target has all the traffic, else how the attempt ends (not yet written).
 */
import type { ResolvedPlan } from '../../activities/core.js';
import type { StageVersionInfo } from '../../api/stage-version.js';
import { lastRanStep } from '../../decisions/activation.js';
import { Progression, type ProgressionHost } from '../progression/progression.js';
import type { GateOutcome } from './breakers.js';
import type { ActivationRun } from './run.js';
import { ranExecutions } from './steps.js';

/** What the progression asks of its attempt beside the run's parts. */
export interface AttemptHooks {
  passBreakers(step: number): Promise<GateOutcome>;
  stageStillOurs(): Promise<boolean>;
  /** The uid of the Stage the attempt validated. */
  stageUid: string;
}

export function progressionOf(
  run: ActivationRun,
  attempt: AttemptHooks,
  plan: ResolvedPlan,
  stage: { target: StageVersionInfo; stageVersions: StageVersionInfo[] },
  limited: boolean,
): Progression {
  const { ref, va, progress, steps, reporter, access } = run;
  const { previous } = reporter;
  let started = false;
  const ran = () => lastRanStep(progress.steps);
  const context = (round?: { weight: number; index: number }) =>
    run.taskContext(stage, { earlier: ranExecutions(progress.steps), ...(round ? { round } : {}) });
  const host: ProgressionHost = {
    requests: run.requests,
    phase: () => progress.phase,
    round: async (weight, index, down, followed) => {
      const ctx = context({ weight, index });
      const order = plan.steps.map((_, i) => i);
      if (down) order.reverse();
      for (const [n, i] of order.entries()) {
        if (limited && started && !(await attempt.passBreakers(i)).admitted) {
          return steps.failure(plan, ctx, i, { through: Math.max(i, ran()) });
        }
        // Every route write but the attempt's first (read under the Lease just before) reads the
        // Stage first; an abort's way back reads it itself (Progression.abort).
        if (started && !down && !(await attempt.stageStillOurs())) {
          return steps.failure(plan, ctx, i, {
            through: Math.max(i, ran()),
            where: `before step ${plan.steps[i]!.name} at ${weight} %`,
          });
        }
        const first = !started;
        started = true;
        if (await steps.runStep(plan, ctx, i, first, followed || n < order.length - 1)) {
          return steps.failure(plan, ctx, i, { through: Math.max(i, ran()) });
        }
      }
      return undefined;
    },
    restore: () => steps.revertSteps(plan, context(), ran()),
    cancelled: (where) => steps.failure(plan, context(), Math.max(ran(), 0), { where }),
    report: (reason, message) => reporter.report('InProgress', reason, message),
    stageStillOurs: () => attempt.stageStillOurs(),
    stage: { namespace: ref.namespace, stage: va.stage, uid: attempt.stageUid },
    newerWaiting: () => access.newerWaiting,
    holdLease: (seconds) => access.holdLease(seconds),
    vars: {
      namespace: ref.namespace,
      stage: va.stage,
      stageVersion: stage.target.name,
      ...(previous ? { previousStageVersion: previous.name } : {}),
      activation: ref.name,
      ...(stage.target.backend ? { backend: backendOf(stage.target.backend) } : {}),
    },
    webhookBody: (step, stepName, weight) => ({
      activation: { namespace: ref.namespace, name: ref.name, uid: ref.uid },
      stage: va.stage,
      stageVersion: stage.target.name,
      ...(previous ? { previousStageVersion: previous.name } : {}),
      step,
      ...(stepName ? { stepName } : {}),
      weight,
    }),
  };
  return new Progression(plan.progression!, plan.analyses ?? [], host);
}

const backendOf = (backend: NonNullable<StageVersionInfo['backend']>) => ({
  service: backend.service,
  ...(backend.port ? { port: backend.port } : {}),
});
