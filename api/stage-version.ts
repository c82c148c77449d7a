/** StageVersion: one deployed vector of a Stage; what usages hold and activations switch traffic to. */
import { z } from 'zod';
import { defineKind, resourceSchema } from './kind.js';
import { dnsLabel, immutable, objectName, statusOf } from './meta.js';
import { vector } from './stage.js';

export const backend = z
  .object({
    service: dnsLabel.describe('Service that serves this StageVersion (HTTPRoute backendRef name, Istio host).'),
    port: z.int().min(1).max(65535).optional().describe('Service port; when absent the executor spec gives it.'),
    subset: dnsLabel.optional().describe('Istio DestinationRule subset, for executors that route by subset.'),
  })
  .describe('Where this StageVersion receives traffic. When absent, executors derive it from their spec.');

export const stageVersionSpec = z.object({
  stage: immutable(objectName.describe('Name of the Stage this version belongs to.'), 'spec.stage'),
  vector: immutable(vector, 'spec.vector'),
  revision: immutable(
    z.int().min(1).describe('Orders the StageVersions of a Stage: higher is newer. Set once by the Stage controller.'),
    'spec.revision',
  ),
  backend: backend.optional(),
  artifacts: z
    .array(
      z.object({
        name: dnsLabel,
        image: z.string().min(1).max(1024),
      }),
    )
    .max(64)
    .optional()
    .describe('Deployed artifacts; protected from change while an activation uses this StageVersion.'),
});

export const stageVersionPhases = ['Pending', 'Ready', 'Failed'] as const;

export const stageVersionStatus = statusOf(stageVersionPhases, {});

export const StageVersion = defineKind({
  kind: 'StageVersion',
  plural: 'stageversions',
  singular: 'stageversion',
  shortNames: ['sv'],
  description: 'A deployed vector of a Stage. Ready when its condition Ready is True.',
  spec: stageVersionSpec,
  status: stageVersionStatus,
  printerColumns: [
    { name: 'Stage', type: 'string', jsonPath: '.spec.stage' },
    { name: 'Revision', type: 'integer', jsonPath: '.spec.revision' },
    { name: 'Vector', type: 'string', jsonPath: '.spec.vector' },
  ],
});
export const stageVersionResource = resourceSchema(StageVersion);
export type StageVersionResource = z.infer<typeof stageVersionResource>;

/**
 * What an activation and its executors need of a StageVersion: its name and the spec fields that
 * order it (revision) and route to it (backend). Plain data, passed to workflows and activities.
 */
export interface StageVersionInfo {
  name: string;
  /** Its uid, when read from the object: the Events of a switch regard it without a look-up. */
  uid?: string;
  revision: number;
  vector: string;
  backend?: z.infer<typeof backend>;
}

/** A StageVersion object as the activation and its executors see it. */
export function stageVersionInfo(sv: Pick<StageVersionResource, 'metadata' | 'spec'>): StageVersionInfo {
  return {
    name: sv.metadata.name!,
    ...(sv.metadata.uid ? { uid: sv.metadata.uid } : {}),
    revision: sv.spec.revision,
    vector: sv.spec.vector,
    ...(sv.spec.backend ? { backend: sv.spec.backend } : {}),
  };
}
