/** What a custom resource kind declares beyond its schemas: names, printer columns, descriptions. */
import { z } from 'zod';
import { API_VERSION } from './group.js';
import { objectMeta } from './meta.js';

export interface PrinterColumn {
  name: string;
  type: 'string' | 'integer' | 'number' | 'boolean' | 'date';
  jsonPath: string;
  description?: string;
  priority?: number;
}

export interface KindDefinition<Spec extends z.ZodType = z.ZodType, Status extends z.ZodType = z.ZodType> {
  kind: string;
  plural: string;
  singular: string;
  shortNames: string[];
  description: string;
  spec: Spec;
  status: Status;
  printerColumns: PrinterColumn[];
}

const age: PrinterColumn = { name: 'Age', type: 'date', jsonPath: '.metadata.creationTimestamp' };
const phase: PrinterColumn = { name: 'Phase', type: 'string', jsonPath: '.status.phase' };

/** Declares a kind; every kind shows its phase and age last, as kubectl users expect. */
export function defineKind<Spec extends z.ZodType, Status extends z.ZodType>(
  def: KindDefinition<Spec, Status>,
): KindDefinition<Spec, Status> {
  return { ...def, printerColumns: [...def.printerColumns, phase, age] };
}

/** The zod schema of a whole object of the kind, as read from or written to the apiserver. */
export function resourceSchema<Spec extends z.ZodType, Status extends z.ZodType>(def: KindDefinition<Spec, Status>) {
  return z.object({
    apiVersion: z.literal(API_VERSION),
    kind: z.literal(def.kind),
    metadata: objectMeta,
    spec: def.spec,
    status: def.status.optional(),
  });
}
