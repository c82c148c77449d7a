/**
 * Landscape: a cluster whose routes the activations of some namespaces change, through executor
 * workers that run there (docs/landscapes.md). Objects live in the system namespace, where only
 * the platform team writes: a Stage names its landscape (spec.landscape), and its activations reach
 * it only when the Landscape lists the Stage's namespace. The control plane holds no credentials of
 * a landscape: its workers pull their tasks from Temporal.
 */
import { z } from 'zod';
import { defineKind, resourceSchema } from './kind.js';
import { statusOf } from './meta.js';

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

export const landscapeStatus = statusOf(landscapePhases, {});

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
