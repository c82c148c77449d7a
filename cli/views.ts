/**
 * The shapes the CLI prints (json) and their text (table), built from what Kubernetes and Temporal
 * report. Pure: tested in test/unit/cli-views.test.ts.
 */
import type { StageResource } from '../api/stage.js';
import type { VectorActivationResource } from '../api/vector-activation.js';
import { isFinal } from '../decisions/activation.js';
import type { ActivationProgress } from '../shared/activation.js';
import { between, formatDuration, formatTable, formatTime } from './table.js';
import { approvable } from '../decisions/step-kinds/index.js';

type Activation = VectorActivationResource;

export interface StepView {
  name: string;
  phase: string;
  tasks: { registration: string; execution?: string; phase: string; message?: string }[];
}

export interface RunningView {
  name: string;
  stageVersion: string;
  phase: string;
  attempt?: number;
  startTime?: string;
  workflowId?: string;
  /** Where the steps come from: the workflow's progress query, or the status Kubernetes has. */
  progressFrom: 'workflow' | 'kubernetes';
  /** Why the workflow's progress is not shown (Temporal unreachable, no answer). */
  note?: string;
  steps: StepView[];
  /** A progressive activation: where it is, what it waits for, its analyses. */
  progression?: ProgressionView;
}

export interface ProgressionView {
  step: number;
  steps: number;
  weight: number;
  gate?: { type: string; since: string; until?: string; message: string };
  analyses: { name: string; phase: string; values: string[] }[];
  last?: { action: string; by?: string; time: string };
}

function progressionView(p: NonNullable<NonNullable<Activation['status']>['progression']>): ProgressionView {
  const last = p.log?.at(-1);
  return {
    step: p.step,
    steps: p.steps,
    weight: p.weight,
    ...(p.gate
      ? {
          gate: {
            type: p.gate.type,
            since: p.gate.since,
            ...(p.gate.until ? { until: p.gate.until } : {}),
            message: p.gate.message,
          },
        }
      : {}),
    analyses: (p.analysisRuns ?? []).map((r) => ({
      name: r.name,
      phase: r.phase,
      values: r.measurements.map((m) => (m.value !== undefined ? String(m.value) : m.verdict)),
    })),
    ...(last ? { last: { action: last.action, ...(last.by ? { by: last.by } : {}), time: last.time } } : {}),
  };
}

export interface QueuedView {
  name: string;
  stageVersion: string;
  phase: string;
  created?: string;
}

export interface StageStatusView {
  stage: string;
  namespace: string;
  vector: string;
  phase?: string;
  active?: string;
  target?: string;
  /**
   * What the managed routes hold, as the Stage controller read them: one line a rule; for a
   * gateway's route, what reached each StageVersion at the gateway lately (withMeasuredShares).
   */
  traffic?: {
    route: string;
    kind: string;
    /** The Landscape whose cluster holds the route (docs/landscapes.md); absent: the control plane's own. */
    landscape?: string;
    weights: Record<string, number>;
    measured?: MeasuredShares;
  }[];
  running?: RunningView;
  waiting: QueuedView[];
  last?: { name: string; stageVersion: string; phase: string; reason?: string; completionTime?: string };
}

const created = (a: Activation) => formatTime(a.metadata.creationTimestamp) ?? '';

/** Newest first: creation time (seconds), then start time, then name, so that the order is stable. */
export function newestFirst(a: Activation, b: Activation): number {
  return (
    created(b).localeCompare(created(a)) ||
    (b.status?.startTime ?? '').localeCompare(a.status?.startTime ?? '') ||
    a.metadata.name!.localeCompare(b.metadata.name!)
  );
}

export interface Usages {
  /** spec.stageVersionRef.name of the "<stage>-active" usage. */
  active?: string;
  target?: string;
}

/**
 * A Stage as people ask about it: what serves (the "active" usage, else the Stage status), what should
 * (the target), what runs with its steps as Kubernetes has them, and what waits (queue order).
 */
export function stageStatusView(stage: StageResource, usages: Usages, activations: Activation[]): StageStatusView {
  const mine = activations.filter((a) => a.spec.stage === stage.metadata.name).sort(newestFirst);
  const running = mine.find((a) => a.status?.phase === 'InProgress');
  const waiting = mine
    .filter((a) => !isFinal(a.status?.phase) && a !== running && !a.metadata.deletionTimestamp)
    .reverse();
  const last = mine.find((a) => isFinal(a.status?.phase));
  // The usages are the record (the Stage status copies them, a moment later): they come first.
  const active = usages.active ?? stage.status?.activeStageVersion;
  const target = usages.target ?? stage.status?.targetStageVersion;
  return {
    stage: stage.metadata.name!,
    namespace: stage.metadata.namespace!,
    vector: stage.spec.vector,
    ...(stage.status?.phase ? { phase: stage.status.phase } : {}),
    ...(active ? { active } : {}),
    ...(target ? { target } : {}),
    ...(stage.status?.traffic
      ? {
          traffic: stage.status.traffic.map((t) => ({
            route:
              `${t.route.kind} ${t.route.namespace}/${t.route.name} rule ${t.name ?? t.rule}` +
              (stage.spec.landscape ? ` in Landscape ${stage.spec.landscape}` : ''),
            kind: t.route.kind,
            ...(stage.spec.landscape ? { landscape: stage.spec.landscape } : {}),
            weights: t.weights,
          })),
        }
      : {}),
    ...(running ? { running: runningView(running) } : {}),
    waiting: waiting.map((a) => ({
      name: a.metadata.name!,
      stageVersion: a.spec.stageVersion,
      phase: a.status?.phase ?? 'Pending',
      ...(created(a) ? { created: created(a) } : {}),
    })),
    ...(last
      ? {
          last: {
            name: last.metadata.name!,
            stageVersion: last.spec.stageVersion,
            phase: last.status!.phase!,
            ...(last.status?.reason ? { reason: last.status.reason } : {}),
            ...(last.status?.completionTime ? { completionTime: last.status.completionTime } : {}),
          },
        }
      : {}),
  };
}

function runningView(a: Activation): RunningView {
  return {
    name: a.metadata.name!,
    stageVersion: a.spec.stageVersion,
    phase: a.status!.phase!,
    ...(a.status?.attempt ? { attempt: a.status.attempt } : {}),
    ...(a.status?.startTime ? { startTime: a.status.startTime } : {}),
    ...(a.status?.workflowId ? { workflowId: a.status.workflowId } : {}),
    progressFrom: 'kubernetes',
    steps: (a.status?.steps ?? []).map((s) => ({
      name: s.name,
      phase: s.phase,
      tasks: s.tasks.map((t) => ({ ...t })),
    })),
    ...(a.status?.progression ? { progression: progressionView(a.status.progression) } : {}),
  };
}

/** The running activation with the steps its workflow reports (fresher than the status). */
export function withProgress(running: RunningView, progress: ActivationProgress): RunningView {
  const { note: _dropped, ...rest } = running;
  return {
    ...rest,
    phase: progress.phase,
    attempt: progress.attempt,
    progressFrom: 'workflow',
    steps: progress.steps.map((s) => ({ ...s, tasks: s.tasks.map((t) => ({ ...t })) })),
  };
}

export function withNote(running: RunningView, note: string): RunningView {
  return { ...running, progressFrom: 'kubernetes', note };
}

/** What reached each StageVersion at the gateway: requests a second, and each one's share of them. */
export interface MeasuredShares {
  windowSeconds: number;
  requestsPerSecond: number;
  percent: Record<string, number>;
}

/**
 * The shares of the rates measured per StageVersion (undefined: the gateway has no series for it).
 * No request at all is no measurement: a share of nothing would read as 0 %.
 */
export function measuredShares(
  rates: Record<string, number | undefined>,
  windowSeconds: number,
): MeasuredShares | undefined {
  const total = Object.values(rates).reduce<number>((sum, r) => sum + (r ?? 0), 0);
  if (!(total > 0)) return undefined;
  const percent = Object.fromEntries(
    Object.entries(rates).map(([sv, r]) => [sv, Math.round(((r ?? 0) / total) * 1000) / 10]),
  );
  return { windowSeconds, requestsPerSecond: Math.round(total * 10) / 10, percent };
}

const renderShares = (m: MeasuredShares) =>
  `${Object.entries(m.percent)
    .map(([sv, p]) => `${sv} ${p}%`)
    .join(', ')} (${m.requestsPerSecond} req/s)`;

export function renderStatus(views: StageStatusView[], now: Date): string {
  return views.map((v) => renderStage(v, now)).join('\n\n');
}

function renderStage(v: StageStatusView, now: Date): string {
  const lines = [
    `Stage ${v.namespace}/${v.stage}${v.phase ? ` (${v.phase})` : ''}`,
    `  vector:   ${v.vector}`,
    `  active:   ${v.active ?? '(none)'}`,
    `  target:   ${v.target ?? '(none)'}`,
  ];
  if (v.traffic?.length) {
    lines.push('  traffic:');
    for (const t of v.traffic) {
      lines.push(
        `    ${t.route}: ${
          Object.entries(t.weights)
            .map(([sv, w]) => `${sv} ${w}%`)
            .join(', ') || 'nothing'
        }`,
      );
      if (t.measured)
        lines.push(`      measured at the gateway, last ${t.measured.windowSeconds}s: ${renderShares(t.measured)}`);
    }
  } else if (v.traffic) lines.push('  traffic:  (no managed route sends this Stage traffic)');
  const r = v.running;
  if (r) {
    const since = r.startTime ? `, started ${formatDuration(between(r.startTime, now) ?? 0)} ago` : '';
    lines.push(
      `  running:  ${r.name} → ${r.stageVersion} (${r.phase}${r.attempt && r.attempt > 1 ? `, attempt ${r.attempt}` : ''}${since})`,
    );
    if (r.note) lines.push(`    note: ${r.note}`);
    lines.push(
      `    steps (from ${r.progressFrom === 'workflow' ? "the workflow's progress query" : 'the VectorActivation status'}):`,
    );
    if (!r.steps.length) lines.push('      (none reported yet)');
    for (const [i, s] of r.steps.entries()) {
      lines.push(`      ${i + 1}. ${s.name}: ${s.phase}`);
      for (const t of s.tasks)
        lines.push(`         - ${t.registration}: ${t.phase}${t.message ? ` (${t.message})` : ''}`);
    }
    if (r.progression) lines.push(...renderProgression(r.name, v.namespace, r.stageVersion, r.progression, now));
  } else lines.push('  running:  (none)');
  if (v.waiting.length) {
    lines.push('  waiting:');
    for (const w of v.waiting) lines.push(`    ${w.name} → ${w.stageVersion} (${w.phase})`);
  } else lines.push('  waiting:  (none)');
  if (v.last)
    lines.push(
      `  last:     ${v.last.name} → ${v.last.stageVersion} (${v.last.phase}${v.last.reason ? `, ${v.last.reason}` : ''}${v.last.completionTime ? `, ${v.last.completionTime}` : ''})`,
    );
  return lines.join('\n');
}

function renderProgression(
  name: string,
  namespace: string,
  stageVersion: string,
  p: ProgressionView,
  now: Date,
): string[] {
  const at = p.step < p.steps ? `step ${p.step + 1}/${p.steps}` : 'the switch to 100 %';
  const lines = [`    progression: ${at}, ${p.weight} % to ${stageVersion}`];
  if (p.gate) {
    const until = p.gate.until ? `, until ${p.gate.until}` : '';
    lines.push(
      `      waiting:  ${p.gate.type} for ${formatDuration(between(p.gate.since, now) ?? 0)}${until}: ${p.gate.message}`,
    );
    if (approvable(p.gate.type))
      lines.push(`      approve:  konfidence approve ${name} -n ${namespace}   (or promote, abort)`);
  }
  for (const a of p.analyses)
    lines.push(`      analysis ${a.name}: ${a.phase}${a.values.length ? ` (${a.values.join(', ')})` : ''}`);
  if (p.last) lines.push(`      last answer: ${p.last.action}${p.last.by ? ` by ${p.last.by}` : ''} at ${p.last.time}`);
  return lines;
}

export interface HistoryRow {
  name: string;
  stageVersion: string;
  phase?: string;
  reason?: string;
  attempt?: number;
  created?: string;
  startTime?: string;
  completionTime?: string;
  /** From start to completion (or to now while it runs). */
  durationSeconds?: number;
}

/** A Stage's VectorActivations, newest first. */
export function historyRows(activations: Activation[], stage: string, now: Date): HistoryRow[] {
  return activations
    .filter((a) => a.spec.stage === stage)
    .sort(newestFirst)
    .map((a) => {
      const s = a.status;
      const ms = between(s?.startTime, s?.completionTime ?? (isFinal(s?.phase) ? undefined : now));
      return {
        name: a.metadata.name!,
        stageVersion: a.spec.stageVersion,
        ...(s?.phase ? { phase: s.phase } : {}),
        ...(s?.reason ? { reason: s.reason } : {}),
        ...(s?.attempt ? { attempt: s.attempt } : {}),
        ...(created(a) ? { created: created(a) } : {}),
        ...(s?.startTime ? { startTime: s.startTime } : {}),
        ...(s?.completionTime ? { completionTime: s.completionTime } : {}),
        ...(ms !== undefined ? { durationSeconds: Math.round(ms / 1000) } : {}),
      };
    });
}

export function renderHistory(rows: HistoryRow[]): string {
  return formatTable(
    ['NAME', 'STAGEVERSION', 'PHASE', 'REASON', 'ATTEMPT', 'STARTED', 'FINISHED', 'DURATION'],
    rows.map((r) => [
      r.name,
      r.stageVersion,
      r.phase ?? 'Pending',
      r.reason,
      r.attempt,
      r.startTime,
      r.completionTime,
      r.durationSeconds === undefined ? undefined : formatDuration(r.durationSeconds * 1000),
    ]),
  );
}

export interface PhaseEvent {
  time: string;
  name: string;
  stage: string;
  stageVersion: string;
  phase: string;
  reason?: string;
  attempt?: number;
  message?: string;
  /** A progressive activation's weight, and the gate it waits at. */
  weight?: number;
  gate?: string;
}

/** What was last printed per object: a watch prints a line only when phase, reason or attempt changed. */
export type Seen = Map<string, string>;

/** The event to print for an object the watch delivered, or undefined when nothing people follow changed. */
export function phaseEvent(seen: Seen, type: string, a: Activation, now: Date): PhaseEvent | undefined {
  const uid = a.metadata.uid ?? a.metadata.name!;
  const phase = type === 'DELETED' ? 'Deleted' : (a.status?.phase ?? 'Pending');
  const p = a.status?.progression;
  const key = `${phase}/${a.status?.reason ?? ''}/${a.status?.attempt ?? ''}/${p?.weight ?? ''}/${p?.gate?.since ?? ''}`;
  if (seen.get(uid) === key) return undefined;
  if (type === 'DELETED') seen.delete(uid);
  else seen.set(uid, key);
  return {
    time: formatTime(now)!,
    name: a.metadata.name!,
    stage: a.spec.stage,
    stageVersion: a.spec.stageVersion,
    phase,
    ...(a.status?.reason ? { reason: a.status.reason } : {}),
    ...(a.status?.attempt ? { attempt: a.status.attempt } : {}),
    ...(a.status?.message && phase !== 'Deleted' ? { message: a.status.message } : {}),
    ...(p && phase !== 'Deleted' ? { weight: p.weight, ...(p.gate ? { gate: p.gate.type } : {}) } : {}),
  };
}

export function renderPhaseEvent(e: PhaseEvent): string {
  const extra = [
    e.reason,
    e.attempt && e.attempt > 1 ? `attempt ${e.attempt}` : undefined,
    e.weight !== undefined ? `${e.weight} %` : undefined,
  ]
    .filter(Boolean)
    .join(', ');
  // A final phase says how it ended; a gate says what it waits for.
  const said = e.message && (isFinal(e.phase) || e.gate) ? `: ${e.message}` : '';
  return `${e.time}  ${e.name}  ${e.stage} → ${e.stageVersion}  ${e.phase}${extra ? ` (${extra})` : ''}${said}`;
}
