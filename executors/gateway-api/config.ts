/** Configuration of the gateway-api executor: the `spec` of its ActivationTaskRegistrations. */
import { z } from 'zod';
import { objectName } from '../../api/meta.js';

/** A backend named as a backendRef names it; identity is (group, kind, namespace, name). */
const backendRef = z.object({
  name: objectName,
  namespace: objectName.optional().describe("Default: the Stage's namespace."),
  group: z.string().default('').describe('Default: "" (the core group).'),
  kind: z.string().min(1).default('Service'),
});

export const gatewayApiConfig = z.object({
  routes: z
    .array(
      z.object({
        name: objectName,
        namespace: objectName.optional().describe("Default: the Stage's namespace."),
        rules: z.array(z.int().min(0)).optional().describe('Indexes of the rules to manage; default: every rule.'),
      }),
    )
    .min(1),
  backendNamePattern: z
    .string()
    .min(1)
    .default('{stageVersion}')
    .describe('Service name of a StageVersion without spec.backend: {stage}, {stageVersion}, {revision}.'),
  port: z.int().min(1).max(65535).optional().describe("Service port when the StageVersion's spec.backend gives none."),
  weight: z.int().min(0).max(100).default(100).describe('Percent of traffic for the new version; the rest stays.'),
  adopt: z
    .array(backendRef)
    .default([])
    .describe("Backends besides the StageVersions' that this registration takes over: replaced like a StageVersion's."),
});
export type GatewayApiConfig = z.infer<typeof gatewayApiConfig>;
