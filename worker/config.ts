/** Process configuration from the environment, validated so a typo fails at start with a clear message. */
import { existsSync } from 'node:fs';
import { z } from 'zod';
import { DEFAULT_SYSTEM_NAMESPACE } from '../api/group.js';
import { dnsLabel } from '../api/meta.js';
import { temporalWorkflowUrl } from '../shared/format.js';
import { LEVELS } from '../telemetry/log.js';
import { describeIssues } from '../api/issues.js';

const flag = z
  .enum(['true', 'false', '1', '0', ''])
  .default('false')
  .transform((v) => v === 'true' || v === '1');

const configSchema = z.object({
  TEMPORAL_ADDRESS: z.string().min(1).default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_UI_URL: z.url().optional(),
  /** Unset: ~/.kube/config, else the in-cluster service account. */
  KUBECONFIG: z.string().min(1).optional(),
  KONFIDENCE_SYSTEM_NAMESPACE: z.string().min(1).default(DEFAULT_SYSTEM_NAMESPACE),
  /** Where the core worker asks an analysis that names no Prometheus address of its own. */
  KONFIDENCE_PROMETHEUS_URL: z.url().optional(),
  /** Workflows the core worker keeps in memory between their tasks (default worker/core-worker.ts MAX_CACHED_WORKFLOWS). */
  KONFIDENCE_MAX_CACHED_WORKFLOWS: z.coerce.number().int().min(2).max(100_000).optional(),
  /**
   * A workflow bundle made before (worker/workflow-bundle.ts; the image names the one `npm run build`
   * writes): the core worker starts without bundling. Unset: bundled from the sources at start.
   */
  KONFIDENCE_WORKFLOW_BUNDLE: z
    .string()
    .min(1)
    .refine(
      (path) => existsSync(path),
      'no such file: write it with "node dist/worker/workflow-bundle.js PATH" (npm run build writes dist/workflow-bundle.js), or unset it',
    )
    .optional(),
  KONFIDENCE_WATCH_NAMESPACES: z.string().optional(),
  /** Appended to every task queue name: separate installations (or tests) on one Temporal namespace. */
  KONFIDENCE_QUEUE_SUFFIX: z.string().default(''),
  /**
   * An executor worker's Landscape (docs/landscapes.md): it polls that landscape's task queue of its
   * type, and KUBECONFIG reaches that landscape's cluster only; the core keeps its records.
   */
  KONFIDENCE_LANDSCAPE: dnsLabel.optional(),
  /**
   * The core: how often each Landscape's workers are asked what its routes hold (docs/landscapes.md);
   * three intervals without a report and its Stages say so (LandscapeReported False).
   */
  KONFIDENCE_LANDSCAPE_REPORT_SECONDS: z.coerce.number().int().min(1).max(3600).default(30),
  /**
   * Set: the core worker joins the Worker Deployment konfidence-core<suffix> as this build
   * (Temporal Worker Versioning, docs/scale.md); unset: an unversioned worker, as before.
   */
  KONFIDENCE_BUILD_ID: z
    .string()
    .min(
      1,
      'empty: set it to the build (deploy/base/components/worker-versioning reads the Pod label app.kubernetes.io/version), or unset it',
    )
    .regex(/^[A-Za-z0-9._-]{1,64}$/, 'letters, digits, ".", "_" or "-", at most 64')
    .optional(),
  /**
   * Set: this watcher / Stage controller serves only this shard's namespaces (ShardingConfig
   * `default` in the system namespace, docs/scale.md) and elects its leader on the shard's Lease
   * (election is then always on). Unset: every namespace, as before.
   */
  KONFIDENCE_SHARD: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'a DNS label')
    .max(40)
    .optional(),
  /**
   * Fairness between namespaces (docs/scale.md): at most this many Stages of one namespace have
   * activations running at once; the rest wait with reason NamespaceLimit. 0: no limit.
   */
  KONFIDENCE_STAGES_PER_NAMESPACE: z.coerce.number().int().min(0).max(10_000).default(2),
  /** true: the watcher and the Stage controller elect a leader per role on a Lease (docs/ha.md); false: standalone. */
  KONFIDENCE_LEADER_ELECTION: flag,
  /** This replica's identity in the Leases (and its Temporal client identity when electing); default hostname-pid. */
  KONFIDENCE_IDENTITY: z.string().min(1).optional(),
  KONFIDENCE_LEASE_DURATION_MS: z.coerce.number().int().positive().default(15_000),
  KONFIDENCE_RENEW_DEADLINE_MS: z.coerce.number().int().positive().default(10_000),
  KONFIDENCE_RETRY_PERIOD_MS: z.coerce.number().int().positive().default(2_000),
  /**
   * On SIGTERM a started role stops gracefully within this long, then exits anyway (below the
   * Pods' terminationGracePeriodSeconds, 30 s; above the executor workers' 25 s for tasks in flight).
   */
  KONFIDENCE_SHUTDOWN_GRACE_MS: z.coerce.number().int().positive().default(28_000),
  /** /healthz and /readyz; 0 picks a free port (logged). */
  KONFIDENCE_HEALTH_PORT: z.coerce.number().int().min(0).max(65_535).default(8081),
  /** true: log every apiserver and Temporal write this process sends ("[write] IDENTITY ..."). */
  KONFIDENCE_LOG_WRITES: flag,
  /** trace, debug, info (default), warn or error; the Temporal SDK's logs too (telemetry/log.ts). */
  KONFIDENCE_LOG_LEVEL: z.string().toLowerCase().pipe(z.enum(LEVELS)).optional(),
  /** json or text; default json unless stdout is a terminal. */
  KONFIDENCE_LOG_FORMAT: z
    .string()
    .toLowerCase()
    .pipe(z.enum(['json', 'text']))
    .optional(),
  /**
   * host:port of the Temporal SDK's Prometheus exporter; default a free loopback port. /metrics on
   * the health port serves its metrics with the project's, so it need not be reachable from outside.
   */
  KONFIDENCE_SDK_METRICS_ADDRESS: z
    .string()
    .regex(/^[^:]*:\d+$/, 'host:port')
    .optional(),
});

export type Config = z.infer<typeof configSchema>;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    const problems = describeIssues(parsed.error);
    throw new Error(`invalid configuration: ${problems}`);
  }
  return parsed.data;
}

/** Link to a workflow in the Temporal UI, or undefined when the UI address is not configured. */
export function workflowUrl(config: Config, workflowId: string): string | undefined {
  return config.TEMPORAL_UI_URL
    ? temporalWorkflowUrl(config.TEMPORAL_UI_URL, config.TEMPORAL_NAMESPACE, workflowId)
    : undefined;
}
