/**
 * What an analysis decides, as pure functions: the query as sent (placeholders filled in), the
 * verdict of one measurement against the success and failure conditions, and the verdict of a run
 * from its counts (Argo Rollouts' rules: a failure limit, an inconclusive limit, a limit of errors
 * in a row). Tables test every rule (test/unit/analysis-decisions.test.ts); workflow code imports it.
 */
import { INCONCLUSIVE_TIMEOUT_SECONDS, MAX_MEASUREMENTS_SHOWN } from '../api/progression-defaults.js';
import { dataPlaneQuery, type DataPlaneMeasurement } from './data-plane-metrics.js';

export type MeasurementVerdict = 'Successful' | 'Failed' | 'Inconclusive' | 'Error';
export type AnalysisPhase = 'Running' | MeasurementVerdict;

/** The parts of an analysis the decisions read (api/progression.ts analysisTemplate, defaults applied). */
export interface AnalysisRules {
  name: string;
  /** The PromQL, placeholders not yet filled in; absent for a built-in measurement (dataPlane). */
  query?: string;
  dataPlane?: DataPlaneMeasurement;
  address?: string;
  intervalSeconds: number;
  count: number;
  initialDelaySeconds?: number;
  successCondition?: string;
  failureCondition?: string;
  failureLimit: number;
  inconclusiveLimit: number;
  consecutiveErrorLimit: number;
  noData: 'Inconclusive' | 'Failed';
}

/** What one query returned: a value, nothing (an empty vector, NaN), or an error. */
export type QueryResult = { value: number } | { noData: string } | { error: string; permanent?: boolean };

// --- the query ------------------------------------------------------------------------------

export interface QueryVars {
  namespace: string;
  stage: string;
  stageVersion: string;
  previousStageVersion?: string;
  activation: string;
  /** The new version's Service (its spec.backend), which a built-in measurement selects. */
  backend?: { service: string; port?: number };
}

/** The query with {{namespace}}, {{stage}}, {{stageVersion}}, {{previousStageVersion}} and {{activation}} filled in. */
export function renderQuery(query: string, v: QueryVars): string {
  const values: Record<string, string> = {
    namespace: v.namespace,
    stage: v.stage,
    stageVersion: v.stageVersion,
    previousStageVersion: v.previousStageVersion ?? '',
    activation: v.activation,
  };
  return query.replace(/\{\{\s*(\w+)\s*\}\}/g, (whole, key: string) => values[key] ?? whole);
}

/**
 * The query an analysis sends for this activation: its own, filled in, or its built-in measurement's
 * for the new version's backend Service (in the Stage's namespace). A built-in without a backend to
 * select is an error a person must fix, not a query that finds nothing.
 */
export function analysisQuery(
  a: Pick<AnalysisRules, 'name' | 'query' | 'dataPlane'>,
  v: QueryVars,
): { query: string } | { error: string } {
  if (!a.dataPlane) return { query: renderQuery(a.query ?? '', v) };
  if (!v.backend) {
    return {
      error: `analysis ${a.name} measures ${a.dataPlane.metric} of StageVersion ${v.stageVersion}'s requests, but it names no Service: set its spec.backend.service`,
    };
  }
  return { query: dataPlaneQuery(a.dataPlane, { namespace: v.namespace, ...v.backend }) };
}

// --- one measurement ------------------------------------------------------------------------

type Op = '<' | '<=' | '>' | '>=' | '==' | '!=';
interface Comparison {
  op: Op;
  bound: number;
}

/** `result < 0.05`, `result >= 0.9 && result <= 1` (the schema's grammar); throws on anything else. */
export function parseCondition(text: string): Comparison[] {
  return text.split('&&').map((part) => {
    const m = /^\s*result\s*(<=|>=|==|!=|<|>)\s*(-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?)\s*$/.exec(part);
    if (!m) throw new Error(`not a condition: ${JSON.stringify(text)} (expected e.g. "result < 0.05")`);
    return { op: m[1] as Op, bound: Number(m[2]) };
  });
}

function compare(value: number, { op, bound }: Comparison): boolean {
  switch (op) {
    case '<':
      return value < bound;
    case '<=':
      return value <= bound;
    case '>':
      return value > bound;
    case '>=':
      return value >= bound;
    case '==':
      return value === bound;
    case '!=':
      return value !== bound;
  }
}

export const holds = (condition: string, value: number) => parseCondition(condition).every((c) => compare(value, c));

/**
 * One measurement's verdict: Failed when the failure condition holds (or, without one, when the
 * success condition does not); Successful when the success condition holds (or, without one, when
 * the failure condition does not); Inconclusive when neither does. No data follows the analysis'
 * rule; a query error is an Error.
 */
export function measurementVerdict(
  a: Pick<AnalysisRules, 'successCondition' | 'failureCondition' | 'noData'>,
  r: QueryResult,
): MeasurementVerdict {
  if ('error' in r) return 'Error';
  if ('noData' in r) return a.noData === 'Failed' ? 'Failed' : 'Inconclusive';
  const failed = a.failureCondition !== undefined ? holds(a.failureCondition, r.value) : undefined;
  const passed = a.successCondition !== undefined ? holds(a.successCondition, r.value) : undefined;
  if (failed === true) return 'Failed';
  if (passed === true) return 'Successful';
  if (passed === false && failed === undefined) return 'Failed';
  if (passed === undefined && failed === false) return 'Successful';
  return 'Inconclusive';
}

// --- a run -----------------------------------------------------------------------------------

export interface Measured {
  time: string;
  value?: number;
  verdict: MeasurementVerdict;
  message?: string;
}

export interface AnalysisRun {
  name: string;
  step?: number;
  background?: boolean;
  phase: AnalysisPhase;
  successful: number;
  failed: number;
  inconclusive: number;
  errors: number;
  /** Query errors in a row (not shown: the limit's counter). */
  consecutiveErrors?: number;
  query?: string;
  measurements: Measured[];
  message?: string;
}

export function startRun(a: AnalysisRules, query: string, step: number, background: boolean): AnalysisRun {
  return {
    name: a.name,
    step,
    ...(background ? { background } : {}),
    phase: 'Running',
    successful: 0,
    failed: 0,
    inconclusive: 0,
    errors: 0,
    consecutiveErrors: 0,
    query,
    measurements: [],
  };
}

const show = (m: Measured) => (m.value !== undefined ? String(m.value) : (m.message ?? m.verdict));

/**
 * The run after one more measurement, and its phase: Failed past the failure limit, Error past the
 * limit of errors in a row (or at once for an error no retry can fix: a refused query), Inconclusive
 * past the inconclusive limit, Successful once an inline run took `count` measurements; else Running.
 * A background run (`background`) has no count: it runs until it is stopped.
 */
export function measured(a: AnalysisRules, run: AnalysisRun, m: Measured, permanentError = false): AnalysisRun {
  const next: AnalysisRun = {
    ...run,
    successful: run.successful + (m.verdict === 'Successful' ? 1 : 0),
    failed: run.failed + (m.verdict === 'Failed' ? 1 : 0),
    inconclusive: run.inconclusive + (m.verdict === 'Inconclusive' ? 1 : 0),
    errors: run.errors + (m.verdict === 'Error' ? 1 : 0),
    consecutiveErrors: m.verdict === 'Error' ? (run.consecutiveErrors ?? 0) + 1 : 0,
    measurements: [...run.measurements, m].slice(-MAX_MEASUREMENTS_SHOWN),
  };
  const values = next.measurements.map(show).join(', ');
  const cond = [
    a.successCondition && `success: ${a.successCondition}`,
    a.failureCondition && `failure: ${a.failureCondition}`,
  ]
    .filter(Boolean)
    .join('; ');
  const about = `analysis ${a.name} (${cond}) measured ${values}; query: ${run.query ?? a.query ?? ''}`;
  if (next.failed > a.failureLimit)
    return {
      ...next,
      phase: 'Failed',
      message: `${about}: ${next.failed} failed measurements, more than the failureLimit ${a.failureLimit}`,
    };
  if (m.verdict === 'Error' && (permanentError || (next.consecutiveErrors ?? 0) > a.consecutiveErrorLimit)) {
    const why = permanentError
      ? 'an error no retry can fix'
      : `${next.consecutiveErrors} query errors in a row, more than the consecutiveErrorLimit ${a.consecutiveErrorLimit}`;
    return { ...next, phase: 'Error', message: `${about}: ${why}: ${m.message ?? ''}`.trim() };
  }
  if (next.inconclusive > a.inconclusiveLimit) {
    return {
      ...next,
      phase: 'Inconclusive',
      message: `${about}: ${next.inconclusive} inconclusive measurements, more than the inconclusiveLimit ${a.inconclusiveLimit}`,
    };
  }
  const taken = next.successful + next.failed + next.inconclusive + next.errors;
  if (!run.background && taken >= a.count) return { ...next, phase: 'Successful', message: `${about}: passed` };
  return {
    ...next,
    phase: 'Running',
    message: `${about}: ${taken}${run.background ? '' : ` of ${a.count}`} measurements`,
  };
}

/** A background run stopped at its end (`to`, or the switch): Successful unless it already ended otherwise. */
export function stopped(run: AnalysisRun): AnalysisRun {
  return run.phase === 'Running'
    ? { ...run, phase: 'Successful', message: `${run.message ?? `analysis ${run.name}`}; stopped at its last step` }
    : run;
}

/** Whether a run's phase stops the activation: Failed and Error abort it, Inconclusive waits for a person. */
export const aborts = (phase: AnalysisPhase) => phase === 'Failed' || phase === 'Error';

export { INCONCLUSIVE_TIMEOUT_SECONDS };

// --- what Prometheus answered ----------------------------------------------------------------

/**
 * The value of an instant query's answer (GET /api/v1/query): a scalar, or a vector of one series.
 * An empty vector and NaN are no data; several series, a range or a string are errors no retry can
 * fix (the query must be aggregated), as is a query Prometheus refuses (bad_data).
 */
export function resultOf(httpStatus: number, body: unknown): QueryResult {
  const b = body as
    | { status?: string; errorType?: string; error?: string; data?: { resultType?: string; result?: unknown } }
    | undefined;
  if (httpStatus >= 400 || b?.status !== 'success') {
    const why = b?.error ? `${b.errorType ?? 'error'}: ${b.error}` : `HTTP ${httpStatus}`;
    return {
      error: `Prometheus refused the query: ${why}`,
      permanent: httpStatus === 400 || b?.errorType === 'bad_data',
    };
  }
  const { resultType, result } = b.data ?? {};
  let raw: unknown;
  if (resultType === 'scalar') raw = (result as unknown[])?.[1];
  else if (resultType === 'vector') {
    const series = (result as { value?: unknown[] }[]) ?? [];
    if (series.length === 0) return { noData: 'the query returned no series' };
    if (series.length > 1)
      return {
        error: `the query returned ${series.length} series; aggregate it to one value (sum, max, avg)`,
        permanent: true,
      };
    raw = series[0]!.value?.[1];
  } else
    return {
      error: `the query returned a ${resultType ?? 'result of no type'}; an instant query must return a scalar or one series`,
      permanent: true,
    };
  // Prometheus writes infinities as +Inf and -Inf, which Number() does not read.
  const value = raw === '+Inf' ? Infinity : raw === '-Inf' ? -Infinity : Number(raw);
  if (typeof raw !== 'string' || Number.isNaN(value))
    return { noData: `the query returned ${String(raw)} (no data, or a division by zero)` };
  return { value };
}
