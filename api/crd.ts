/**
 * Generates CustomResourceDefinitions from the zod schemas, so the CRDs cannot drift from the types
 * the code uses. zod's JSON Schema output is close to a structural OpenAPI schema; this file removes
 * what Kubernetes does not accept and adds what it needs.
 */
import { z } from 'zod';
import { GROUP, VERSION } from './group.js';
import type { KindDefinition } from './kind.js';

type Schema = Record<string, unknown>;

const SAFE_INT = Number.MAX_SAFE_INTEGER;

/** Rewrites one node of zod's output into a structural schema node, children first. */
function structural(node: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(node)) {
    if (key === '$schema' || key === 'id') continue;
    // zod bounds every integer to the safe range; Kubernetes integers are int64 already.
    if ((key === 'maximum' && value === SAFE_INT) || (key === 'minimum' && value === -SAFE_INT)) continue;
    // zod spells out ISO timestamps as a long regex; the apiserver checks format date-time itself.
    if (key === 'pattern' && node.format === 'date-time') continue;
    if (key === 'properties') {
      out.properties = Object.fromEntries(
        Object.entries(value as Record<string, Schema>).map(([k, v]) => [k, structural(v)]),
      );
    } else if (key === 'items' || (key === 'additionalProperties' && typeof value === 'object')) {
      out[key] = structural(value as Schema);
    } else {
      out[key] = value;
    }
  }
  if (out['x-kubernetes-preserve-unknown-fields'] === true) delete out.additionalProperties;
  if (out.additionalProperties === false) delete out.additionalProperties;
  // An empty array of required fields is not allowed in a CRD.
  if (Array.isArray(out.required) && out.required.length === 0) delete out.required;
  for (const rule of (out['x-kubernetes-validations'] as Schema[] | undefined) ?? []) {
    // `message` is the fallback when a messageExpression fails; drop undefined keys.
    for (const k of Object.keys(rule)) if (rule[k] === undefined) delete rule[k];
  }
  return out;
}

export function openApiSchema(schema: z.ZodType): Schema {
  // io 'input': fields with defaults are optional for the writer; the apiserver fills the default in.
  const json = z.toJSONSchema(schema, { target: 'openapi-3.0', io: 'input', unrepresentable: 'throw' });
  return structural(json as Schema);
}

export function crdName(def: KindDefinition): string {
  return `${def.plural}.${GROUP}`;
}

export function customResourceDefinition(def: KindDefinition): Schema {
  return {
    apiVersion: 'apiextensions.k8s.io/v1',
    kind: 'CustomResourceDefinition',
    metadata: {
      name: crdName(def),
      labels: { 'app.kubernetes.io/part-of': 'konfidence-activation' },
    },
    spec: {
      group: GROUP,
      names: {
        kind: def.kind,
        listKind: `${def.kind}List`,
        plural: def.plural,
        singular: def.singular,
        shortNames: def.shortNames,
        categories: ['konfidence'],
      },
      scope: 'Namespaced',
      versions: [
        {
          name: VERSION,
          served: true,
          storage: true,
          subresources: { status: {} },
          additionalPrinterColumns: def.printerColumns,
          schema: {
            openAPIV3Schema: {
              type: 'object',
              description: def.description,
              required: ['spec'],
              properties: {
                apiVersion: { type: 'string' },
                kind: { type: 'string' },
                metadata: { type: 'object' },
                spec: openApiSchema(def.spec),
                status: openApiSchema(def.status),
              },
            },
          },
        },
      ],
    },
  };
}
