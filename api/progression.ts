/**
 * Progressive activation: the part of an ActivationExecutionPlan that moves a Stage's traffic to
 * the new StageVersion in steps (weights), stops at gates (pauses, approvals, HTTP checks) and
 * measures the new version (Prometheus analyses), going back by itself when a measurement says so.
 * Every weight runs the plan's steps in order with that weight; the last weight, 100 %, is implied.
 */
import { z } from 'zod';
import { dnsLabel, rule, timestamp } from './meta.js';
import {
  ABORT_RAMP_INTERVAL_SECONDS,
  ANALYSIS_CONSECUTIVE_ERROR_LIMIT,
  ANALYSIS_COUNT,
  ANALYSIS_INTERVAL_SECONDS,
  DATA_PLANE_METRICS,
  DATA_PLANE_PROVIDERS,
  DATA_PLANE_WINDOW_SECONDS,
  GATE_TYPES,
  MAX_ANALYSES,
  MAX_BACKGROUND_ANALYSES,
  MAX_GATE_SECONDS,
  MAX_MEASUREMENTS_SHOWN,
  MAX_PROGRESSION_LOG,
  MAX_PROGRESSION_STEPS,
  ONE_STEP_KIND_MESSAGE,
  WEBHOOK_RETRIES,
  WEBHOOK_TIMEOUT_SECONDS,
} from './progression-defaults.js';

export * from './progression-defaults.js';

const seconds = (max = MAX_GATE_SECONDS) => z.int().min(1).max(max);

/**
 * One comparison of the measured value, or two joined by &&: `result < 0.05`,
 * `result >= 0.9 && result <= 1`. A grammar this small is checked by the schema itself.
 */
const COMPARISON = 'result\\s*(<|<=|>|>=|==|!=)\\s*-?[0-9]+(\\.[0-9]+)?([eE][-+]?[0-9]+)?';
export const analysisCondition = z
  .string()
  .max(256)
  .regex(new RegExp(`^\\s*${COMPARISON}(\\s*&&\\s*${COMPARISON})?\\s*$`))
  .describe('A comparison of the measured value: "result < 0.05", "result >= 0.9 && result <= 1".');

export const noDataRules = ['Inconclusive', 'Failed'] as const;

export const dataPlaneMeasurement = z
  .object({
    provider: z
      .enum(DATA_PLANE_PROVIDERS)
      .default('traefik')
      .describe("The gateway whose request metrics Prometheus scrapes: traefik (Traefik v3's Gateway API provider)."),
    metric: z
      .enum(DATA_PLANE_METRICS)
      .describe(
        "request-success-rate: the share of the new version's requests not answered 5xx, 0 to 1; request-duration-p99: their 99th percentile latency, in seconds.",
      ),
    windowSeconds: z
      .int()
      .min(5)
      .max(3600)
      .default(DATA_PLANE_WINDOW_SECONDS)
      .describe('The requests measured: those of the last windowSeconds.'),
  })
  .describe(
    "A built-in measurement of the new version's requests as the gateway sees them: the query is filled in with the StageVersion's spec.backend (its Service, in the Stage's namespace, and port).",
  );

export const analysisTemplate = rule(
  rule(
    z.object({
      name: dnsLabel.describe('Name that progression steps and background analyses use.'),
      prometheus: z
        .object({
          address: z
            .url()
            .max(2048)
            .optional()
            .describe("Prometheus' base URL; default: the core worker's KONFIDENCE_PROMETHEUS_URL."),
          query: z
            .string()
            .min(1)
            .max(8192)
            .optional()
            .describe(
              'PromQL returning one value (a scalar or a one-series vector). {{namespace}}, {{stage}}, {{stageVersion}}, ' +
                '{{previousStageVersion}} and {{activation}} are filled in.',
            ),
        })
        .optional()
        .describe('The measurement: an instant query (or, with dataPlane, only where Prometheus is).'),
      dataPlane: dataPlaneMeasurement.optional(),
      intervalSeconds: seconds(86400).default(ANALYSIS_INTERVAL_SECONDS).describe('Time between measurements.'),
      count: z
        .int()
        .min(1)
        .max(1000)
        .default(ANALYSIS_COUNT)
        .describe('Measurements an inline analysis takes; a background one repeats them until it stops.'),
      initialDelaySeconds: seconds(86400)
        .optional()
        .describe('Wait before the first measurement (a fresh version has no data yet).'),
      successCondition: analysisCondition.optional().describe('A measurement passes when this holds.'),
      failureCondition: analysisCondition.optional().describe('A measurement fails when this holds.'),
      failureLimit: z
        .int()
        .min(0)
        .max(1000)
        .default(0)
        .describe('Failed measurements tolerated; one more fails the analysis.'),
      inconclusiveLimit: z
        .int()
        .min(0)
        .max(1000)
        .default(0)
        .describe('Inconclusive measurements tolerated; one more pauses for a person.'),
      consecutiveErrorLimit: z
        .int()
        .min(0)
        .max(100)
        .default(ANALYSIS_CONSECUTIVE_ERROR_LIMIT)
        .describe('Query errors in a row tolerated (Prometheus unreachable); one more fails the analysis.'),
      noData: z
        .enum(noDataRules)
        .default('Inconclusive')
        .describe('A query that returns nothing: Inconclusive (pause for a person past inconclusiveLimit) or Failed.'),
    }),
    {
      rule: 'has(self.successCondition) || has(self.failureCondition)',
      message: 'an analysis needs a successCondition, a failureCondition or both',
      messageExpression: "'analysis ' + self.name + ' needs a successCondition, a failureCondition or both'",
      reason: 'FieldValueRequired',
    },
    (a) => a.successCondition !== undefined || a.failureCondition !== undefined,
  ),
  {
    rule: 'has(self.dataPlane) != (has(self.prometheus) && has(self.prometheus.query))',
    message: 'an analysis measures either a prometheus.query or a dataPlane metric, exactly one',
    messageExpression:
      "'analysis ' + self.name + ' measures either a prometheus.query or a dataPlane metric, exactly one'",
  },
  (a) => (a.dataPlane !== undefined) !== (a.prometheus?.query !== undefined),
);
export type AnalysisTemplate = z.infer<typeof analysisTemplate>;

export const onTimeoutActions = ['Abort', 'Continue'] as const;

export const pauseGate = rule(
  z.object({
    durationSeconds: seconds()
      .optional()
      .describe('A timed pause: traffic stays this long, then the next step runs (approve or promote end it early).'),
    timeoutSeconds: seconds()
      .optional()
      .describe('Without durationSeconds the pause waits for an approval: at most this long (default 24 h).'),
    onTimeout: z
      .enum(onTimeoutActions)
      .optional()
      .describe('What an approval that timed out does: Abort (default) or Continue.'),
  }),
  {
    rule: '!has(self.durationSeconds) || (!has(self.timeoutSeconds) && !has(self.onTimeout))',
    message: 'a pause waits either for its durationSeconds or for an approval (timeoutSeconds, onTimeout), not both',
  },
  (p) => p.durationSeconds === undefined || (p.timeoutSeconds === undefined && p.onTimeout === undefined),
);

export const webhookCheck = z.object({
  url: z.url().max(2048).describe('Called with POST and the activation as JSON; any 2xx passes.'),
  timeoutSeconds: seconds(300).default(WEBHOOK_TIMEOUT_SECONDS).describe('Longest wait for one answer.'),
  retries: z
    .int()
    .min(0)
    .max(10)
    .default(WEBHOOK_RETRIES)
    .describe('Calls repeated after a timeout, a network error or a 5xx; a 4xx refuses at once.'),
});

const GATE_FIELDS = ['setWeight', 'pause', 'analysis', 'webhook'] as const;

export const progressionStep = rule(
  z.object({
    name: dnsLabel.optional().describe('Names the step for background analyses and messages.'),
    setWeight: z
      .int()
      .min(1)
      .max(100)
      .optional()
      .describe("Percent of every managed rule's traffic the new StageVersion receives from this step on."),
    pause: pauseGate.optional(),
    analysis: z
      .object({ name: dnsLabel.describe('An analysis of spec.analyses.') })
      .optional()
      .describe('Measures the new version until the analysis ends.'),
    webhook: webhookCheck.optional().describe('An HTTP check: 2xx goes on, anything else fails the activation.'),
  }),
  {
    rule: GATE_FIELDS.map((f) => `(has(self.${f}) ? 1 : 0)`).join(' + ') + ' == 1',
    message: ONE_STEP_KIND_MESSAGE,
  },
  (s) => GATE_FIELDS.filter((f) => s[f] !== undefined).length === 1,
);
export type ProgressionStep = z.infer<typeof progressionStep>;

export const backgroundAnalysis = z.object({
  analysis: dnsLabel.describe('An analysis of spec.analyses, measured while the steps between from and to run.'),
  from: dnsLabel.optional().describe('Name of the progression step it starts at; default the first.'),
  to: dnsLabel.optional().describe('Name of the progression step it stops before; default: it runs until the switch.'),
});

export const progressionSpec = rule(
  rule(
    z.object({
      steps: z
        .array(progressionStep)
        .min(1)
        .max(MAX_PROGRESSION_STEPS)
        .describe('Weights and gates, in order; 100 % follows the last.'),
      background: z
        .array(backgroundAnalysis)
        .max(MAX_BACKGROUND_ANALYSES)
        .optional()
        .describe('Analyses that run beside the steps.'),
      abort: z
        .object({
          weights: z
            .array(z.int().min(1).max(99))
            .max(10)
            .optional()
            .describe(
              'Weights the new version goes down through before the recorded traffic is put back; none: at once.',
            ),
          intervalSeconds: seconds(3600)
            .default(ABORT_RAMP_INTERVAL_SECONDS)
            .describe('Time at each of those weights.'),
        })
        .optional()
        .describe('How an abort, or a failed analysis, puts the traffic back.'),
    }),
    {
      rule: 'self.steps.all(s, !has(s.name) || self.steps.exists_one(o, has(o.name) && o.name == s.name))',
      message: 'progression step names must be unique',
      fieldPath: '.steps',
    },
    (p) => {
      const names = p.steps.flatMap((s) => (s.name ? [s.name] : []));
      return new Set(names).size === names.length;
    },
  ),
  {
    rule: '!has(self.background) || self.background.all(b, (!has(b.from) || self.steps.exists(s, has(s.name) && s.name == b.from)) && (!has(b.to) || self.steps.exists(s, has(s.name) && s.name == b.to)))',
    message: "a background analysis' from and to name steps of the progression",
    fieldPath: '.background',
  },
  (p) =>
    (p.background ?? []).every((b) =>
      [b.from, b.to].every((n) => n === undefined || p.steps.some((s) => s.name === n)),
    ),
);
export type ProgressionSpec = z.infer<typeof progressionSpec>;

// --- what a VectorActivation's status shows of it ------------------------------------------

export const gateTypes = GATE_TYPES;
export const measurementVerdicts = ['Successful', 'Failed', 'Inconclusive', 'Error'] as const;
export const analysisPhases = ['Running', ...measurementVerdicts] as const;
export const progressionActions = ['Approved', 'Promoted', 'Aborted', 'TimedOut', 'Continued', 'Superseded'] as const;

const text = z.string().max(4096);

export const measurement = z.object({
  time: timestamp,
  value: z.number().optional().describe('The value measured; absent when the query returned nothing.'),
  verdict: z.enum(measurementVerdicts),
  message: text.optional(),
});

export const analysisRunStatus = z.object({
  name: dnsLabel,
  step: z.int().min(0).optional().describe('The progression step it runs at (inline) or from (background).'),
  background: z.boolean().optional(),
  phase: z.enum(analysisPhases),
  successful: z.int().min(0),
  failed: z.int().min(0),
  inconclusive: z.int().min(0),
  errors: z.int().min(0),
  query: z.string().max(8192).optional().describe('The query as sent, placeholders filled in.'),
  measurements: z.array(measurement).max(MAX_MEASUREMENTS_SHOWN).describe('The latest measurements.'),
  message: text.optional(),
});

export const progressionLogEntry = z.object({
  time: timestamp,
  step: z.int().min(0),
  action: z.enum(progressionActions),
  by: z.string().max(512).optional().describe('Who asked: the Update caller, the annotation writer or the CLI user.'),
  message: text,
});

export const progressionStatus = z.object({
  step: z
    .int()
    .min(0)
    .describe('Index of the progression step running or waiting; the number of steps: the final switch.'),
  steps: z.int().min(1),
  stepName: dnsLabel.optional(),
  weight: z.int().min(0).max(100).describe('Percent the new StageVersion receives now.'),
  gate: z
    .object({
      type: z.enum(gateTypes),
      since: timestamp,
      until: timestamp.optional().describe('When a timed pause ends, or an approval times out.'),
      message: text,
    })
    .optional()
    .describe('What the activation waits for, and since when.'),
  analysisRuns: z
    .array(analysisRunStatus)
    .max(MAX_ANALYSES + MAX_BACKGROUND_ANALYSES)
    .optional(),
  log: z
    .array(progressionLogEntry)
    .max(MAX_PROGRESSION_LOG)
    .optional()
    .describe('Approvals, promotions, aborts and time-outs: who and when.'),
});
export type ProgressionStatus = z.infer<typeof progressionStatus>;
