/**
 * Reads the project's objects parsed by their api/ schemas, so defaults (timeouts, history limit,
 * onFailure) come from one place and code sees the inferred types. An object that does not match
 * its schema (written around the CRD's validation, or by an older version) fails with its problems.
 */
import type { z } from 'zod';
import {
  activationExecutionPlanResource,
  activationTaskRegistrationResource,
  landscapeResource,
  stageResource,
  stageVersionResource,
  vectorActivationResource,
} from '../api/index.js';
import type { CustomObjects } from './custom-objects.js';
import { describeIssues } from '../api/issues.js';

export const schemas = {
  VectorActivation: vectorActivationResource,
  Stage: stageResource,
  StageVersion: stageVersionResource,
  ActivationTaskRegistration: activationTaskRegistrationResource,
  ActivationExecutionPlan: activationExecutionPlanResource,
  Landscape: landscapeResource,
} as const;
export type TypedKind = keyof typeof schemas;
export type Typed<K extends TypedKind> = z.infer<(typeof schemas)[K]>;

export class InvalidObjectError extends Error {
  override name = 'InvalidObjectError';
}

export function parseTyped<K extends TypedKind>(kind: K, object: unknown): Typed<K> {
  const parsed = schemas[kind].safeParse(object);
  if (parsed.success) return parsed.data as Typed<K>;
  const meta = (object as { metadata?: { namespace?: string; name?: string } }).metadata;
  const problems = describeIssues(parsed.error);
  throw new InvalidObjectError(`${kind} ${meta?.namespace}/${meta?.name} does not match its schema: ${problems}`);
}

export async function getTyped<K extends TypedKind>(
  objects: CustomObjects,
  kind: K,
  namespace: string,
  name: string,
): Promise<Typed<K> | undefined> {
  const o = await objects.get(kind, namespace, name);
  return o ? parseTyped(kind, o) : undefined;
}

export async function listTyped<K extends TypedKind>(
  objects: CustomObjects,
  kind: K,
  namespace: string,
  labelSelector?: string,
): Promise<Typed<K>[]> {
  return (await objects.list(kind, namespace, labelSelector)).map((o) => parseTyped(kind, o));
}
