/**
 * ControllerStatus: where a person or a client finds, in one request, the replica that currently
 * leads a role (and shard) of konfidence-activation. One object per role and shard in the system
 * namespace; the leader writes `status.activeController` about itself while it leads
 * (worker/publisher.ts, rules in decisions/publish.ts and docs/ha-publishing.md).
 */
import { z } from 'zod';
import { defineKind, resourceSchema } from './kind.js';
import { dnsLabel, immutable, statusOf, timestamp } from './meta.js';

/** The roles that run with leader election: one active replica each. */
export const controllerRoles = ['watcher', 'stage-controller'] as const;
export type ControllerRole = (typeof controllerRoles)[number];

/** The shard of a role until roles are sharded: one object per role. */
export const DEFAULT_SHARD = 'default';

// An http(s) URL with a host: the same text is a JavaScript and an apiserver (Go RE2) pattern.
export const ENDPOINT_PATTERN = '^https?://[^\\s/?#@]+(/\\S*)?$';

export const controllerStatusSpec = immutable(
  z.object({
    role: z.enum(controllerRoles).describe('The role whose active replica this object names.'),
    shard: dnsLabel.default(DEFAULT_SHARD).describe('The shard of the role; "default" while roles are not sharded.'),
  }),
  'spec of a ControllerStatus',
);

export const activeController = z.object({
  identity: z
    .string()
    .min(1)
    .max(253)
    .describe("The leader's identity, as in its Lease's holderIdentity (e.g. the pod name)."),
  endpoint: z
    .string()
    .max(2048)
    .regex(new RegExp(ENDPOINT_PATTERN))
    .describe('URL where the leader serves its health and metrics, e.g. http://127.0.0.5:8081 (its /healthz).'),
  version: z.string().min(1).max(128).describe('Version of konfidence-activation the leader runs.'),
  leaderSince: timestamp.describe('Since when this identity leads.'),
  lastUpdated: timestamp.describe(
    'When the leader last wrote this field: a freshness signal, rewritten only when the rest changes.',
  ),
});
export type ActiveController = z.infer<typeof activeController>;

export const controllerStatusPhases = ['Active'] as const;

export const controllerStatusStatus = statusOf(controllerStatusPhases, {
  activeController: activeController
    .optional()
    .describe(
      'The replica that leads this role and shard, written by that replica while it leads; absent without leader election.',
    ),
  serving: z
    .object({
      identity: z.string().min(1).max(253).describe('The leader that serves them (its Lease holderIdentity).'),
      generation: z
        .number()
        .int()
        .min(0)
        .describe('metadata.generation of the ShardingConfig it applied (0: none exists).'),
      namespaces: z
        .array(z.string().max(63))
        .max(20000)
        .describe('The namespaces it serves (or may start serving) right now.'),
    })
    .optional()
    .describe(
      'Sharded processes only (KONFIDENCE_SHARD): what this shard serves; a shard drops a namespace before it is removed here and adds it here before it starts (worker/shards.ts).',
    ),
});

export const ControllerStatus = defineKind({
  kind: 'ControllerStatus',
  plural: 'controllerstatuses',
  singular: 'controllerstatus',
  shortNames: ['kcs'],
  description:
    'Names the active (leading) replica of a role and shard of konfidence-activation, and where it serves health and metrics.',
  spec: controllerStatusSpec,
  status: controllerStatusStatus,
  printerColumns: [
    { name: 'Role', type: 'string', jsonPath: '.spec.role' },
    { name: 'Shard', type: 'string', jsonPath: '.spec.shard' },
    { name: 'Active', type: 'string', jsonPath: '.status.activeController.identity' },
    { name: 'Endpoint', type: 'string', jsonPath: '.status.activeController.endpoint' },
    { name: 'Since', type: 'date', jsonPath: '.status.activeController.leaderSince' },
    { name: 'Updated', type: 'date', jsonPath: '.status.activeController.lastUpdated' },
    { name: 'Version', type: 'string', jsonPath: '.status.activeController.version', priority: 1 },
  ],
});
export const controllerStatusResource = resourceSchema(ControllerStatus);
export type ControllerStatusResource = z.infer<typeof controllerStatusResource>;

/** The object of a role and shard: `<role>`, or `<role>-<shard>` for a shard other than the default. */
export function controllerStatusName(role: ControllerRole, shard: string = DEFAULT_SHARD): string {
  return shard === DEFAULT_SHARD ? role : `${role}-${shard}`;
}
