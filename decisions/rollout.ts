/**
 * The rules of a core worker rollout (docs/scale.md, "Controller versions"): which build a
 * namespace's new activation is pinned to, the steps of `konfidence rollout run`, and when it stops.
 * Pure: table-tested in test/unit/rollout-decisions.test.ts.
 */
import type { CoreRollout } from '../api/core-rollout.js';
import { CORE_TASK_QUEUE } from '../shared/task-queues.js';

/** The Worker Deployment of the core worker: one per installation (queue suffix). */
export function coreDeploymentName(queueSuffix = ''): string {
  return CORE_TASK_QUEUE + queueSuffix;
}

export interface PinnedVersion {
  deploymentName: string;
  buildId: string;
}

/**
 * The version a new activation of `namespace` starts pinned to: the canary build for a canary
 * namespace; undefined for the others, which the server routes to the current (or ramping) version.
 */
export function pinnedVersion(rollout: CoreRollout | undefined, namespace: string): PinnedVersion | undefined {
  if (!rollout?.canary || !rollout.canary.namespaces.includes(namespace)) return undefined;
  return { deploymentName: rollout.deploymentName, buildId: rollout.canary.buildId };
}

export type RolloutStep =
  { kind: 'canary'; namespaces: string[]; group: number } | { kind: 'ramp'; percent: number } | { kind: 'promote' };

/** `a,b;c,d`: groups of namespaces (a shard's namespaces are a group); an error says what is wrong. */
export function parseGroups(text: string): string[][] | { error: string } {
  const groups = text.split(';').map((g) =>
    g
      .split(',')
      .map((n) => n.trim())
      .filter(Boolean),
  );
  if (groups.some((g) => g.length === 0))
    return { error: `--groups "${text}": every group needs a namespace (groups separated by ";", namespaces by ",")` };
  const all = groups.flat();
  const twice = all.find((n, i) => all.indexOf(n) !== i);
  if (twice) return { error: `--groups "${text}": namespace ${twice} is in more than one group` };
  return groups;
}

/** `10,50`: ramp percentages, rising, each above 0 and below 100 (100 is the promotion). */
export function parsePercents(text: string): number[] | { error: string } {
  const values = text
    .split(',')
    .map((p) => p.trim())
    .filter(Boolean)
    .map(Number);
  if (values.some((v) => !Number.isFinite(v) || v <= 0 || v >= 100))
    return { error: `--ramp "${text}": percentages between 0 and 100 (exclusive), e.g. 10,50` };
  if (values.some((v, i) => i > 0 && v <= values[i - 1]!)) return { error: `--ramp "${text}": percentages must rise` };
  return values;
}

/** Canary group by group (each step adds a group to the canary), then ramp, then promote. */
export function rolloutSteps(groups: string[][], ramps: number[]): RolloutStep[] {
  return [
    ...groups.map((_, i) => ({ kind: 'canary' as const, namespaces: groups.slice(0, i + 1).flat(), group: i + 1 })),
    ...ramps.map((percent) => ({ kind: 'ramp' as const, percent })),
    { kind: 'promote' as const },
  ];
}

export interface RunObservation {
  /** CircuitBreaker objects of the system namespace (none when the kind is not installed). */
  breakers: { name: string; phase?: string }[];
  /** Activations that ran on the build being rolled out: namespace/name and phase. */
  canaryActivations: { name: string; phase?: string }[];
}

/** Why the run must stop now, or undefined to go on: an open breaker, or a canary activation that failed. */
export function stopReason(o: RunObservation): string | undefined {
  const open = o.breakers.filter((b) => b.phase === 'Open').map((b) => b.name);
  if (open.length) return `CircuitBreaker ${open.join(', ')} is Open`;
  const failed = o.canaryActivations.filter((a) => a.phase === 'Failed').map((a) => a.name);
  if (failed.length)
    return `${failed.length} activation(s) on the new build failed: ${failed.slice(0, 5).join(', ')}${failed.length > 5 ? ', …' : ''}`;
  return undefined;
}

/** What a step does, in the words `rollout run` prints. */
export function describeStep(step: RolloutStep, build: string): string {
  if (step.kind === 'canary')
    return `canary ${build} on group ${step.group} (namespaces ${step.namespaces.join(', ')})`;
  if (step.kind === 'ramp') return `ramp ${build} to ${step.percent}% of the other namespaces' new activations`;
  return `promote ${build}: current version, every new activation`;
}
