/** Configuration of the istio executor: the `spec` of its ActivationTaskRegistrations. */
import { z } from 'zod';
import { objectName } from '../../api/meta.js';

export const istioConfig = z.object({
  virtualServices: z
    .array(
      z.object({
        name: objectName,
        namespace: objectName.optional().describe("Default: the Stage's namespace."),
        routes: z
          .array(z.string().min(1))
          .optional()
          .describe('Names of the http routes to manage; default: every one.'),
      }),
    )
    .min(1),
  host: z.string().min(1).optional().describe('Route by subset of this host; without it, by host per StageVersion.'),
  hostPattern: z.string().min(1).default('{stageVersion}').describe('Host of a StageVersion when routing by host.'),
  subsetPattern: z
    .string()
    .min(1)
    .default('{stageVersion}')
    .describe('Subset of a StageVersion when routing by subset.'),
  port: z
    .int()
    .min(1)
    .max(65535)
    .optional()
    .describe("Destination port when the StageVersion's spec.backend gives none."),
  weight: z.int().min(0).max(100).default(100).describe('Percent of traffic for the new version; the rest stays.'),
  adopt: z
    .array(
      z.object({
        host: z.string().min(1).describe("A short host is a Service of the Stage's namespace."),
        subset: z.string().min(1).optional().describe('Without it, only the destination without a subset.'),
      }),
    )
    .default([])
    .describe(
      "Destinations besides the StageVersions' that this registration takes over: replaced like a StageVersion's.",
    ),
});
export type IstioConfig = z.infer<typeof istioConfig>;
