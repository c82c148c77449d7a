/**
 * ShardingConfig: how namespaces are partitioned into shards (ControllerMesh's ShardingConfig,
 * the ControllerMesh design). One object, named `default`, in the system namespace; without it nothing is sharded
 * (every process serves every namespace, or KONFIDENCE_WATCH_NAMESPACES). A process serves one
 * shard (KONFIDENCE_SHARD); which namespaces a shard gets is decided by decisions/shards.ts, and the
 * handover between shards when this object changes by the same file (docs/scale.md, "Shards").
 */
import { z } from 'zod';
import { defineKind, resourceSchema } from './kind.js';
import { dnsLabel, objectName, statusOf } from './meta.js';

/** The one ShardingConfig a process reads. */
export const SHARDING_CONFIG_NAME = 'default';
/** Where namespaces go that no selector matched when no hash shards are configured. */
export const FALLBACK_SHARD = 'default';

/** metav1.LabelSelector, as Deployments and NetworkPolicies have it; empty matches everything. */
export const labelSelector = z.object({
  matchLabels: z
    .record(z.string(), z.string())
    .optional()
    .describe('Labels the namespace must have, with these values.'),
  matchExpressions: z
    .array(
      z.object({
        key: z.string().min(1),
        operator: z.enum(['In', 'NotIn', 'Exists', 'DoesNotExist']),
        values: z.array(z.string()).optional(),
      }),
    )
    .optional(),
});
export type LabelSelector = z.infer<typeof labelSelector>;

export const shardingConfigSpec = z.object({
  namespaceSelector: labelSelector
    .optional()
    .describe(
      'The namespaces this installation serves at all; default every namespace. Others are served by no shard.',
    ),
  canary: z
    .object({
      shard: dnsLabel.describe('The shard that serves the canary namespaces (e.g. one running a new version).'),
      namespaces: z
        .array(objectName)
        .max(1000)
        .describe('Namespaces served by the canary shard whatever else matches them.'),
    })
    .optional(),
  shards: z
    .array(
      z.object({
        name: dnsLabel.describe('The shard: KONFIDENCE_SHARD of the processes that serve it.'),
        namespaceSelector: labelSelector.describe(
          'Namespaces whose labels match go to this shard; the first shard that matches wins.',
        ),
      }),
    )
    .max(100)
    .optional(),
  hashShards: z
    .number()
    .int()
    .min(1)
    .max(256)
    .optional()
    .describe('Namespaces no selector matched go to shard hash-<i>, i = FNV-1a of the name mod hashShards.'),
  fallbackShard: dnsLabel
    .default(FALLBACK_SHARD)
    .describe('Where namespaces go that no selector matched when hashShards is not set.'),
});
export type ShardingConfigSpec = z.infer<typeof shardingConfigSpec>;

export const ShardingConfig = defineKind({
  kind: 'ShardingConfig',
  plural: 'shardingconfigs',
  singular: 'shardingconfig',
  shortNames: ['ksc'],
  description: 'Partitions namespaces into shards, each served by its own elected watcher and Stage controller.',
  spec: shardingConfigSpec,
  status: statusOf(['Active'], {}),
  printerColumns: [{ name: 'Hash', type: 'integer', jsonPath: '.spec.hashShards' }],
});
export const shardingConfigResource = resourceSchema(ShardingConfig);
export type ShardingConfigResource = z.infer<typeof shardingConfigResource>;
