/** Process configuration from the environment, validated so a typo fails at start with a clear message. */
import { z } from 'zod';
import { DEFAULT_SYSTEM_NAMESPACE } from '../api/group.js';
import { temporalWorkflowUrl } from '../shared/format.js';

const configSchema = z.object({
  TEMPORAL_ADDRESS: z.string().min(1).default('127.0.0.1:7233'),
  TEMPORAL_NAMESPACE: z.string().min(1).default('default'),
  TEMPORAL_UI_URL: z.url().optional(),
  /** Unset: ~/.kube/config, else the in-cluster service account. */
  KUBECONFIG: z.string().min(1).optional(),
  KONFIDENCE_SYSTEM_NAMESPACE: z.string().min(1).default(DEFAULT_SYSTEM_NAMESPACE),
  KONFIDENCE_WATCH_NAMESPACES: z.string().optional(),
  /** Appended to every task queue name: separate installations (or tests) on one Temporal namespace. */
  KONFIDENCE_QUEUE_SUFFIX: z.string().default(''),
});

export type Config = z.infer<typeof configSchema>;

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = configSchema.safeParse(env);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ');
    throw new Error(`invalid configuration: ${problems}`);
  }
  return parsed.data;
}

/** Link to a workflow in the Temporal UI, or undefined when the UI address is not configured. */
export function workflowUrl(config: Config, workflowId: string): string | undefined {
  return config.TEMPORAL_UI_URL ? temporalWorkflowUrl(config.TEMPORAL_UI_URL, config.TEMPORAL_NAMESPACE, workflowId) : undefined;
}
