/**
 * The numbers of progressive activation, written once: the schema (api/progression.ts) and the
 * workflow's decisions (decisions/progression.ts) read them here, a module without zod that
 * workflow code can import.
 */

/** Steps of a progression (weights and gates). */
export const MAX_PROGRESSION_STEPS = 32;
/** Analyses a plan defines, and background analyses a progression runs. */
export const MAX_ANALYSES = 16;
export const MAX_BACKGROUND_ANALYSES = 4;
/** The longest pause or approval: 30 days. */
export const MAX_GATE_SECONDS = 30 * 86400;
/** An approval without timeoutSeconds waits this long: a day. */
export const APPROVAL_TIMEOUT_SECONDS = 86400;
/** An inconclusive analysis waits for a person this long, then aborts. */
export const INCONCLUSIVE_TIMEOUT_SECONDS = 86400;
export const ANALYSIS_INTERVAL_SECONDS = 30;
export const ANALYSIS_COUNT = 1;
export const ANALYSIS_CONSECUTIVE_ERROR_LIMIT = 4;
export const WEBHOOK_TIMEOUT_SECONDS = 10;
export const WEBHOOK_RETRIES = 2;
export const ABORT_RAMP_INTERVAL_SECONDS = 30;
/** Measurements of one analysis run the status shows (the latest). */
export const MAX_MEASUREMENTS_SHOWN = 10;
/** Approvals, promotions, aborts and time-outs the status keeps (the latest). */
export const MAX_PROGRESSION_LOG = 32;

/**
 * Built-in measurements of a gateway's requests (an analysis' `dataPlane`): the gateways whose
 * metrics they read, what they measure, and over how long by default.
 */
export const DATA_PLANE_PROVIDERS = ['traefik'] as const;
export const DATA_PLANE_METRICS = ['request-success-rate', 'request-duration-p99'] as const;
export type DataPlaneProvider = (typeof DATA_PLANE_PROVIDERS)[number];
export type DataPlaneMetric = (typeof DATA_PLANE_METRICS)[number];
export const DATA_PLANE_WINDOW_SECONDS = 30;

/** The gates a progression waits at (status.progression.gate.type). */
export const GATE_TYPES = ['Pause', 'Approval', 'Analysis', 'Webhook', 'Inconclusive'] as const;
export type GateType = (typeof GATE_TYPES)[number];
/** What the schema and the workflow both say of a step that is not exactly one thing. */
export const ONE_STEP_KIND_MESSAGE = 'a progression step is exactly one of setWeight, pause, analysis or webhook';
