/**
 * gateway-api executor: points the backendRefs of HTTPRoute rules at a StageVersion's Service.
 * It manages exactly the backendRefs that reference (group, kind, namespace, name) a Service of one
 * of the Stage's StageVersions, or a backend the registration adopts (`spec.adopt`); every other
 * backendRef, rule, match and filter stays as it was. A managed rule that also sends traffic to a
 * backend it does not manage is refused before any change (see docs/activation.md, "Adopting").
 */
import { updateRoutes, readRoute, type RouteKind } from '../routes.js';
import {
  distinct,
  ExecutorError,
  refuseAmbiguous,
  renderPattern,
  replaceManaged,
  split,
  type Executor,
  type StageVersionInfo,
  type TaskInput,
} from '../types.js';
import { gatewayApiConfig, type GatewayApiConfig } from './config.js';

const HTTPROUTE: RouteKind = { group: 'gateway.networking.k8s.io', version: 'v1', plural: 'httproutes', kind: 'HTTPRoute' };

interface BackendRef {
  group?: string;
  kind?: string;
  name: string;
  namespace?: string;
  port?: number;
  weight?: number;
  [other: string]: unknown;
}

/** The Service of a StageVersion: in the Stage's namespace, like the StageVersion itself. */
const serviceName = (input: TaskInput, sv: StageVersionInfo, config: GatewayApiConfig) =>
  sv.backend?.service ?? renderPattern(config.backendNamePattern, input.stage, sv);

/** The Service and port to route to (only the StageVersions routed to need a port). */
function backend(input: TaskInput, sv: StageVersionInfo, config: GatewayApiConfig): { name: string; port: number } {
  // The StageVersion knows its own Service best: its port wins over the registration's default.
  const port = sv.backend?.port ?? config.port;
  if (port === undefined) {
    throw new ExecutorError(`no port for StageVersion ${sv.name}: set spec.backend.port on it or spec.port on the registration`);
  }
  return { name: serviceName(input, sv, config), port };
}

/** Identity of a backendRef as the Gateway API defines it: defaults filled from the route. */
const identity = (ref: { group?: string; kind?: string; namespace?: string; name: string }, defaultNamespace: string) =>
  `${ref.group ?? ''}/${ref.kind ?? 'Service'}/${ref.namespace ?? defaultNamespace}/${ref.name}`;

function rulesOf(spec: any, wanted: number[] | undefined, where: string): number[] {
  const count = (spec.rules ?? []).length;
  const indexes = wanted ?? [...Array(count).keys()];
  const missing = indexes.filter((i) => i >= count);
  if (missing.length) throw new ExecutorError(`HTTPRoute ${where} has ${count} rules; rule ${missing.join(', ')} does not exist`);
  return indexes;
}

/** What one registration manages, with everything resolved for the routes it names. */
function plan(input: TaskInput, from: StageVersionInfo | undefined, to: StageVersionInfo, config: GatewayApiConfig) {
  const versions = [...input.stageVersions, to, ...(from ? [from] : [])];
  const stageVersions = versions.map((sv) => identity({ name: serviceName(input, sv, config) }, input.namespace));
  const adopted = config.adopt.map((a) => identity(a, input.namespace));
  const managed = new Set([...stageVersions, ...adopted]);
  const desired = split(from && backend(input, from, config), backend(input, to, config), config.weight);
  return {
    isManaged: (ref: BackendRef, routeNamespace: string) => managed.has(identity(ref, routeNamespace)),
    /** The backendRefs to write into a route in `routeNamespace` (the namespace only when it differs). */
    refs: (routeNamespace: string): BackendRef[] =>
      desired.map(({ item, weight }) => ({ name: item.name, ...(routeNamespace === input.namespace ? {} : { namespace: input.namespace }), port: item.port, weight })),
    routes: config.routes.map((r) => ({ ...r, namespace: r.namespace ?? input.namespace })),
  };
}

/** A backendRef for messages: kind (when not a Service), namespace (when not the route's), name. */
function show(ref: BackendRef, routeNamespace: string): string {
  const kind = ref.kind ?? 'Service';
  const group = ref.group ?? '';
  const prefix = kind === 'Service' && group === '' ? '' : `${kind}${group ? `.${group}` : ''} `;
  return `${prefix}${ref.namespace && ref.namespace !== routeNamespace ? `${ref.namespace}/` : ''}${ref.name}`;
}
const describe = (list: BackendRef[], ns: string) => list.map((b) => `${show(b, ns)}:${b.weight ?? 1}`).join('+') || 'none';
const exact = (list: BackendRef[], ns: string) => list.map((b) => `${show(b, ns)}:${b.port ?? ''}:${b.weight ?? 1}`).join(',');

function ambiguity(ref: BackendRef, routeNamespace: string, where: string, rule: number, input: TaskInput): string {
  const namespace = ref.namespace ?? routeNamespace;
  // The adopt entry that names exactly this backend (its namespace defaults to the Stage's).
  const adopt = {
    name: ref.name,
    ...(namespace !== input.namespace ? { namespace } : {}),
    ...((ref.kind ?? 'Service') !== 'Service' ? { kind: ref.kind } : {}),
    ...(ref.group ? { group: ref.group } : {}),
  };
  return (
    `HTTPRoute ${where} rule ${rule} sends traffic (weight ${ref.weight ?? '1, unset'}) to ${ref.kind ?? 'Service'} ${namespace}/${ref.name}, ` +
    `which is neither a StageVersion's backend of Stage ${input.stage} nor adopted by this registration: ` +
    `routing the new StageVersion next to it would leave both serving. Nothing was changed. ` +
    `Add ${JSON.stringify(adopt)} to the registration's spec.adopt to replace it like a StageVersion's backend, ` +
    `or leave rule ${rule} out with spec.routes[].rules (or the route out of spec.routes)`
  );
}

export const gatewayApiExecutor: Executor<GatewayApiConfig> = {
  type: 'gateway-api',
  config: gatewayApiConfig,

  routeNamespaces: (config, activationNamespace) => distinct(config.routes.map((r) => r.namespace ?? activationNamespace)),

  async route(input, from, to, config, ctx) {
    const p = plan(input, from, to, config);
    const targets = p.routes.map((r) => {
      const where = `${r.namespace}/${r.name}`;
      const edit = (spec: any): string[] => {
        const out: string[] = [];
        for (const i of rulesOf(spec, r.rules, where)) {
          const rule = spec.rules[i];
          const refs: BackendRef[] = rule.backendRefs ?? [];
          const isManaged = (ref: BackendRef) => p.isManaged(ref, r.namespace);
          refuseAmbiguous(refs, isManaged, (ref) => ref.weight, (ref) => ambiguity(ref, r.namespace, where, i, input));
          const old = refs.filter(isManaged);
          // Already as desired: leave the rule byte for byte as it is (apiserver defaults included).
          if (exact(old, r.namespace) === exact(p.refs(r.namespace), r.namespace)) continue;
          // Per-backend filters of the managed backend carry over to its replacement.
          const filters = old.find((ref) => ref.filters)?.filters;
          const next = p.refs(r.namespace).map((ref) => ({ ...(filters ? { filters } : {}), ...ref }));
          rule.backendRefs = replaceManaged(refs, isManaged, next);
          out.push(`HTTPRoute ${where} rule ${i}: ${describe(old, r.namespace)} → ${describe(next, r.namespace)}`);
        }
        return out;
      };
      return { namespace: r.namespace, name: r.name, edit };
    });
    const messages = await updateRoutes(HTTPROUTE, targets, ctx);
    return { message: messages.length ? messages.join('; ') : `HTTPRoutes already route to ${to.name}` };
  },

  async verify(input, from, to, config, ctx) {
    const p = plan(input, from, to, config);
    for (const r of p.routes) {
      const route = await readRoute(HTTPROUTE, r.namespace, r.name, ctx);
      const want = exact(p.refs(r.namespace), r.namespace);
      for (const i of rulesOf(route.spec, r.rules, `${r.namespace}/${r.name}`)) {
        const actual = exact(((route.spec.rules[i].backendRefs ?? []) as BackendRef[]).filter((ref) => p.isManaged(ref, r.namespace)), r.namespace);
        if (actual !== want) {
          throw new ExecutorError(`HTTPRoute ${r.namespace}/${r.name} rule ${i} routes to ${actual || 'nothing'}, expected ${want}`, true);
        }
      }
    }
  },
};
