/**
 * The project's Prometheus metrics (docs/observability.md lists them). Every name starts with
 * `konfidence_`; labels take values from small fixed sets (phases, reasons, executor types, error
 * types, components, kinds) or from Stages (namespace, stage), never from activation names, uids or
 * messages, so the series count grows with the number of Stages, not with traffic.
 * The components call the `observe...`/`record...` functions here; /metrics (worker/health.ts) serves
 * `metricsText()` followed by the Temporal SDK's own (telemetry/temporal.ts).
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const registry = new Registry();

const FINAL = new Set(['Succeeded', 'Failed', 'Skipped', 'Cancelled']);

const activations = new Counter({
  name: 'konfidence_activations_total',
  help: 'VectorActivations that entered a phase, by phase and reason (a retried activation enters its phases again).',
  labelNames: ['phase', 'reason'] as const,
  registers: [registry],
});

const activationDuration = new Histogram({
  name: 'konfidence_activation_duration_seconds',
  help: "From the VectorActivation's creation to its final phase (waiting for the Stage included), by final phase.",
  labelNames: ['phase'] as const,
  buckets: [1, 2, 5, 10, 20, 30, 60, 120, 300, 600, 1800, 3600],
  registers: [registry],
});

const handoff = new Histogram({
  name: 'konfidence_stage_handoff_seconds',
  help: "From the release of a Stage's Lease by one activation to its taking by the next one, which was waiting for it.",
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60],
  registers: [registry],
});

/**
 * What a watcher's cache says of one activation: Waiting (no weight), or a progressive one
 * InProgress (its weight and the gate it waits at, if any).
 */
export interface WatchedActivation {
  namespace: string;
  stage: string;
  weight?: number;
  gate?: string;
}
/** Each watcher in this process adds a source; the gauges are computed from them at scrape time. */
const watchedSources = new Set<() => Iterable<WatchedActivation>>();
const watched = function* () {
  for (const source of watchedSources) yield* source();
};
new Gauge({
  name: 'konfidence_activations_waiting',
  help: "VectorActivations in phase Waiting (queued at their Stage's lock), per Stage, as the watcher's cache sees them.",
  labelNames: ['namespace', 'stage'] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const { namespace, stage, weight } of watched()) if (weight === undefined) this.inc({ namespace, stage });
  },
});
new Gauge({
  name: 'konfidence_stage_canary_weight_percent',
  help: "Percent of a Stage's traffic the StageVersion of its running progressive activation receives, as the watcher's cache sees it.",
  labelNames: ['namespace', 'stage'] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const { namespace, stage, weight } of watched())
      if (weight !== undefined) this.set({ namespace, stage }, weight);
  },
});
new Gauge({
  name: 'konfidence_activations_at_gate',
  help: "Progressive activations waiting at a gate, by the gate's type (Pause, Approval, Analysis, Webhook, Inconclusive), as the watcher's cache sees them.",
  labelNames: ['gate'] as const,
  registers: [registry],
  collect() {
    this.reset();
    for (const { gate } of watched()) if (gate) this.inc({ gate });
  },
});

const gateWait = new Histogram({
  name: 'konfidence_gate_wait_seconds',
  help: 'How long a progressive activation waited at a gate, by gate type, observed when the wait ends.',
  labelNames: ['gate'] as const,
  buckets: [1, 10, 60, 300, 1800, 3600, 4 * 3600, 86400, 3 * 86400, 7 * 86400],
  registers: [registry],
});

const analysisRuns = new Counter({
  name: 'konfidence_analysis_runs_total',
  help: "Analysis runs that ended, by analysis name (a plan's spec.analyses) and verdict (Successful, Failed, Inconclusive, Error).",
  labelNames: ['analysis', 'phase'] as const,
  registers: [registry],
});

const analysisMeasurements = new Counter({
  name: 'konfidence_analysis_measurements_total',
  help: 'Analysis measurements, by analysis name and verdict (Successful, Failed, Inconclusive, Error).',
  labelNames: ['analysis', 'verdict'] as const,
  registers: [registry],
});

/** What the metrics read of a progression's status (decisions/activation.ts ProgressionReport). */
export interface ProgressionSeen {
  gate?: { type: string; since: string } | null;
  analysisRuns?: readonly {
    name: string;
    step?: number;
    background?: boolean;
    phase: string;
    measurements: readonly { time: string; verdict: string }[];
  }[];
}

/**
 * After a status write of a progressive activation: the wait at a gate that ended, the analysis
 * runs that ended and the measurements taken since the status written before.
 */
export function recordProgression(
  before: ProgressionSeen | undefined,
  after: ProgressionSeen | undefined,
  now = Date.now(),
): void {
  if (!after) return;
  const gate = before?.gate;
  if (gate && (!after.gate || after.gate.since !== gate.since))
    gateWait.observe({ gate: gate.type }, Math.max(0, (now - Date.parse(gate.since)) / 1000));
  for (const run of after.analysisRuns ?? []) {
    const was = before?.analysisRuns?.find(
      (r) => r.name === run.name && r.step === run.step && r.background === run.background,
    );
    const last = was?.measurements.at(-1)?.time ?? '';
    for (const m of run.measurements)
      if (m.time > last) analysisMeasurements.inc({ analysis: run.name, verdict: m.verdict });
    if (run.phase !== 'Running' && was?.phase !== run.phase) analysisRuns.inc({ analysis: run.name, phase: run.phase });
  }
}

const executorTask = new Histogram({
  name: 'konfidence_executor_task_duration_seconds',
  help: 'One attempt of an executor task (executeTask activity), by executor type, action (Apply, Revert) and outcome (succeeded, failed, cancelled).',
  labelNames: ['executor', 'action', 'outcome'] as const,
  buckets: [0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300],
  registers: [registry],
});

const executorErrors = new Counter({
  name: 'konfidence_executor_task_errors_total',
  help: 'Failed executor task attempts, by executor type and error type (the failure type the workflow sees, e.g. ExecutorError, InvalidExecutorSpec, CrossNamespaceRefused, Cancelled, Error).',
  labelNames: ['executor', 'type'] as const,
  registers: [registry],
});

const eventLag = new Histogram({
  name: 'konfidence_event_lag_seconds',
  help: "From an object's last change (newest managedFields time, else creationTimestamp; 1 s resolution) to the handler of its watch event, by component and kind.",
  labelNames: ['component', 'kind'] as const,
  buckets: [0.5, 1, 2, 5, 10, 30, 60, 300],
  registers: [registry],
});

/** Circuit breaker states as numbers, so a dashboard can graph them (CircuitBreaker, docs/scale.md). */
export const BREAKER_STATES = { closed: 0, 'half-open': 1, open: 2 } as const;
const breaker = new Gauge({
  name: 'konfidence_circuit_breaker_state',
  help: 'CircuitBreaker state: 0 closed (activations run), 2 open (new activations wait); 1 (half-open) is reserved.',
  labelNames: ['breaker', 'scope'] as const,
  registers: [registry],
});

let processMetrics = false;
/** process_* and nodejs_* (CPU, memory, event loop delay); processes call it once, tests need not. */
export function enableProcessMetrics(): void {
  if (processMetrics) return;
  processMetrics = true;
  collectDefaultMetrics({ register: registry });
}

export interface StatusSeen {
  metadata: { creationTimestamp?: string | Date };
  status?: { phase?: string };
}

/**
 * After a status write of an activation: counts the phase when it changed (a retried write of the
 * same phase is not counted again) and, for a final phase, observes the duration since creation.
 */
export function recordActivationPhase(before: StatusSeen, phase: string, reason: string, now = Date.now()): void {
  if (before.status?.phase === phase) return;
  activations.inc({ phase, reason });
  const created = before.metadata.creationTimestamp ? new Date(before.metadata.creationTimestamp).getTime() : NaN;
  if (FINAL.has(phase) && Number.isFinite(created))
    activationDuration.observe({ phase }, Math.max(0, (now - created) / 1000));
}

export function observeStageHandoff(seconds: number): void {
  handoff.observe(Math.max(0, seconds));
}

/** Registers a watcher's view of its waiting and progressing activations; returns the function that removes it. */
export function addWatchedSource(source: () => Iterable<WatchedActivation>): () => void {
  watchedSources.add(source);
  return () => watchedSources.delete(source);
}

/** Starts timing one executor task attempt; call the result once with its outcome. */
export function timeExecutorTask(
  executor: string,
  action: string,
): (outcome: 'succeeded' | 'failed' | 'cancelled', errorType?: string) => void {
  const end = executorTask.startTimer({ executor, action });
  return (outcome, errorType) => {
    end({ outcome });
    if (outcome !== 'succeeded')
      executorErrors.inc({ executor, type: errorType ?? (outcome === 'cancelled' ? 'Cancelled' : 'Error') });
  };
}

export interface WatchedObject {
  metadata?: {
    creationTimestamp?: string | Date;
    deletionTimestamp?: string | Date;
    managedFields?: { time?: string | Date }[];
  };
}

/** When the object last changed as far as its metadata says (seconds resolution), or undefined. */
export function lastChange(o: WatchedObject): number | undefined {
  const m = o.metadata;
  const times = [m?.creationTimestamp, m?.deletionTimestamp, ...(m?.managedFields ?? []).map((f) => f.time)]
    .filter((t) => t !== undefined)
    .map((t) => new Date(t!).getTime())
    .filter(Number.isFinite);
  return times.length ? Math.max(...times) : undefined;
}

/**
 * Observes how late a watch event's handler runs. Changes from before `since` (the watch's start)
 * are backlog that an initial list delivers, not lag, and are left out; the resolution is 1 s.
 */
export function observeEventLag(
  component: string,
  kind: string,
  o: WatchedObject,
  since: number,
  now = Date.now(),
): void {
  const changed = lastChange(o);
  // The apiserver's times are whole seconds: a change in the second the watch started counts.
  if (changed === undefined || changed < Math.floor(since / 1000) * 1000) return;
  eventLag.observe({ component, kind }, Math.max(0, (now - changed) / 1000));
}

/** Set by whoever writes or reads a breaker's status; `scope` is its namespace or "all". */
export function setCircuitBreakerState(breakerName: string, scope: string, state: keyof typeof BREAKER_STATES): void {
  breaker.set({ breaker: breakerName, scope }, BREAKER_STATES[state]);
}

export const metricsContentType = registry.contentType;

/** The project's metrics in Prometheus text format. */
export function metricsText(): Promise<string> {
  return registry.metrics();
}
