/**
 * Landscape: a cluster whose routes the activations of some namespaces change, through executor
 * workers that run there (docs/landscapes.md). Objects live in the system namespace, where only
 * the platform team writes: a Stage names its landscape (spec.landscape), and its activations reach
 * it only when the Landscape lists the Stage's namespace. The control plane holds no credentials of
 * a landscape: its workers pull their tasks from Temporal.
 */
import { z } from 'zod';
import { defineKind, resourceSchema } from './kind.js';
import { dnsLabel, objectName, statusOf, timestamp } from './meta.js';
import { trafficRule } from './stage.js';

export const landscapeSpec = z.object({
  allowedNamespaces: z
    .array(
      z
        .string()
        .max(63)
        .regex(/^(\*|[a-z0-9]([-a-z0-9]*[a-z0-9])?)$/, 'a namespace name (a DNS label) or "*"'),
    )
    .min(1)
    .max(1000)
    .meta({ 'x-kubernetes-list-type': 'set' })
    // The apiserver refuses a duplicate of a set's item; zod says the same.
    .refine((names) => new Set(names).size === names.length, 'each namespace once')
    .describe('The namespaces of the control plane whose Stages may route in this landscape; "*": every namespace.'),
  description: z.string().max(1024).optional().describe('For people: which cluster this is, who runs its workers.'),
});

export const landscapePhases = ['Ready'] as const;

/** One Stage in a report: the rules of it that send one of its StageVersions traffic, or why they could not be read. */
export const reportedStage = z.object({
  namespace: dnsLabel.describe("The Stage's namespace on the control plane."),
  stage: objectName,
  rules: z
    .array(trafficRule)
    .max(64)
    .optional()
    .describe("As the Stage's status.traffic holds them; none: no managed rule sends the Stage traffic."),
  unreadable: z
    .string()
    .max(1024)
    .optional()
    .describe('Why the workers could not read the rules, when they could not.'),
});
export type ReportedStage = z.infer<typeof reportedStage>;

/** The most Stages one report holds: a Landscape's reports stay well under etcd's object size limit. */
export const MAX_REPORTED_STAGES = 1000;

/** What the workers of one executor type of the landscape last reported of its Stages' managed rules. */
export const routeReport = z.object({
  type: dnsLabel.describe('Executor type whose workers read these rules.'),
  intervalSeconds: z.int().min(1).max(3600).describe('How often the core asks for a report.'),
  observedAt: timestamp
    .optional()
    .describe(
      'When the report that `stages` hold was asked for: every route change finished before it is in them. Absent: no report yet.',
    ),
  stages: z
    .array(reportedStage)
    .max(MAX_REPORTED_STAGES)
    .optional()
    .describe('Every Stage the report covers; a Stage of the landscape not here is not known to it.'),
  lastFailure: z
    .object({ at: timestamp, message: z.string().max(2048) })
    .optional()
    .describe('The last report that did not arrive (no worker took it, or it failed), when later than observedAt.'),
});
export type RouteReport = z.infer<typeof routeReport>;

export const landscapeStatus = statusOf(landscapePhases, {
  reports: z
    .array(routeReport)
    .max(32)
    .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] })
    .optional()
    .describe(
      "What the landscape's executor workers report of its routes, per executor type (docs/landscapes.md): the Stage controller reads a landscape Stage's traffic from them.",
    ),
});

export const Landscape = defineKind({
  kind: 'Landscape',
  plural: 'landscapes',
  singular: 'landscape',
  shortNames: ['lsc'],
  description:
    'A cluster whose routes the Stages of the namespaces it allows change through executor workers running there.',
  spec: landscapeSpec,
  status: landscapeStatus,
  printerColumns: [{ name: 'Namespaces', type: 'string', jsonPath: '.spec.allowedNamespaces' }],
});
export const landscapeResource = resourceSchema(Landscape);
export type LandscapeResource = z.infer<typeof landscapeResource>;
