/** Looks up a kind's zod schema for an object read from or sent to the apiserver. */
import { allKinds, resourceSchema, type KindDefinition } from '../../api/index.js';

export function kindOf(kind: string): KindDefinition {
  const def = allKinds.find((k) => k.kind === kind);
  if (!def) throw new Error(`unknown kind ${kind}`);
  return def;
}

export function schemaOf(kind: string) {
  return resourceSchema(kindOf(kind));
}
