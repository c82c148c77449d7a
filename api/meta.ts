/**
 * Building blocks shared by every kind: object metadata, Kubernetes conditions, and the helpers that
 * keep a CEL rule (enforced by the apiserver) and its zod twin (enforced in code) in one place.
 */
import { z } from 'zod';

/** A Kubernetes object name (DNS-1123 subdomain). */
export const objectName = z
  .string()
  .min(1)
  .max(253)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/);

/** A DNS-1123 label: names that become part of other names (task queues, services). */
export const dnsLabel = z
  .string()
  .min(1)
  .max(63)
  .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);

/** A routing object (HTTPRoute, VirtualService, …) by its whole reference. */
export const routeRef = z.object({
  group: z.string().max(253),
  kind: z.string().min(1).max(63),
  namespace: dnsLabel,
  name: objectName,
});
export type RouteRef = z.infer<typeof routeRef>;

/** metav1.Time as the apiserver writes it. */
export const timestamp = z.iso.datetime({ offset: true });

export const objectMeta = z.looseObject({
  name: z.string().optional(),
  generateName: z.string().optional(),
  namespace: z.string().optional(),
  uid: z.string().optional(),
  resourceVersion: z.string().optional(),
  generation: z.number().int().optional(),
  // @kubernetes/client-node turns metadata timestamps into Dates; raw JSON has strings.
  creationTimestamp: z.union([z.string(), z.date()]).optional(),
  deletionTimestamp: z.union([z.string(), z.date()]).optional(),
  labels: z.record(z.string(), z.string()).optional(),
  annotations: z.record(z.string(), z.string()).optional(),
  finalizers: z.array(z.string()).optional(),
  ownerReferences: z
    .array(
      z.looseObject({
        apiVersion: z.string(),
        kind: z.string(),
        name: z.string(),
        uid: z.string(),
        controller: z.boolean().optional(),
        blockOwnerDeletion: z.boolean().optional(),
      }),
    )
    .optional(),
});
export type ObjectMeta = z.infer<typeof objectMeta>;

/** metav1.Condition, field for field. */
export const condition = z.object({
  type: z
    .string()
    .min(1)
    .max(316)
    .regex(
      /^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$/,
    ),
  status: z.enum(['True', 'False', 'Unknown']),
  reason: z
    .string()
    .min(1)
    .max(1024)
    .regex(/^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$/),
  message: z.string().max(32768),
  lastTransitionTime: timestamp,
  observedGeneration: z.number().int().min(0).optional(),
});
export type Condition = z.infer<typeof condition>;

/** Conditions are a map keyed by type, as kubebuilder's `+listType=map` declares. */
export const conditions = z
  .array(condition)
  .max(32)
  .meta({ 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['type'] });

/** A CEL validation rule as the CRD carries it (`x-kubernetes-validations`). */
export interface CelRule {
  rule: string;
  message: string;
  /** CEL expression for a message that names the offending value. */
  messageExpression?: string;
  /** JSONPath-like path (".spec.x") of the field the error is reported on. */
  fieldPath?: string;
  reason?: 'FieldValueInvalid' | 'FieldValueForbidden' | 'FieldValueRequired' | 'FieldValueDuplicate';
}

type Meta = Record<string, unknown>;

// zod methods return new instances without the old one's metadata: carry it over by hand.
function withCel<T extends z.ZodType>(schema: T, meta: Meta | undefined, celRule: CelRule): T {
  const rules = (meta?.['x-kubernetes-validations'] as CelRule[] | undefined) ?? [];
  return schema.meta({ ...meta, 'x-kubernetes-validations': [...rules, celRule] }) as T;
}

/**
 * Attaches a rule that spans fields: the CEL text goes into the CRD, `check` enforces the same rule
 * in zod with the same message, so both the apiserver and our code refuse the same objects.
 */
export function rule<T extends z.ZodType>(schema: T, cel: CelRule, check: (value: z.output<T>) => boolean): T {
  const path = cel.fieldPath ? cel.fieldPath.replace(/^\./, '').split('.') : [];
  const refined = schema.refine(check, { message: cel.message, path }) as unknown as T;
  return withCel(refined, schema.meta(), cel);
}

/**
 * A transition rule (compares with the stored object), enforced only by the apiserver: zod sees one
 * object at a time and has nothing to compare with.
 */
export function transitionRule<T extends z.ZodType>(schema: T, cel: CelRule): T {
  return withCel(schema, schema.meta(), cel);
}

/** Field is set once and never changed afterwards. */
export function immutable<T extends z.ZodType>(schema: T, what: string): T {
  return transitionRule(schema, { rule: 'self == oldSelf', message: `${what} is immutable` });
}

/** An object whose fields the apiserver must keep even though the schema does not name them. */
export const freeform = () => z.record(z.string(), z.unknown()).meta({ 'x-kubernetes-preserve-unknown-fields': true });

/**
 * The status every kind shares: a phase for humans and printer columns, conditions for machines,
 * and the generation they describe.
 */
export function statusOf<const P extends readonly [string, ...string[]], E extends z.ZodRawShape>(phases: P, extra: E) {
  return z.object({
    phase: z.enum(phases).optional(),
    reason: z.string().max(1024).optional(),
    message: z.string().max(32768).optional(),
    observedGeneration: z.number().int().min(0).optional(),
    conditions: conditions.optional(),
    ...extra,
  });
}
