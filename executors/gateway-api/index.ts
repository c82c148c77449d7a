/**
 * gateway-api executor: sets the backendRefs of HTTPRoute rules to an assignment of StageVersions'
 * Services (StageVersion → percent), and puts back what it recorded on a revert.
 * It manages exactly the backendRefs that reference (group, kind, namespace, name) a Service of one
 * of the Stage's StageVersions, or a backend the registration adopts (`spec.adopt`); every other
 * backendRef, rule, match and filter stays as it was. A managed rule that also sends traffic to a
 * backend it does not manage is refused before any change (see docs/activation.md, "Adopting").
 */
import { managedRules, type Provider } from '../managed-rules.js';
import { implementationVerdict } from './acceptance.js';
import {
  distinct,
  ExecutorError,
  renderPattern,
  type Executor,
  type StageVersionInfo,
  type TaskInput,
  type RouteKind,
} from '../types.js';
import { gatewayApiConfig, type GatewayApiConfig } from './config.js';

const HTTPROUTE: RouteKind = {
  group: 'gateway.networking.k8s.io',
  version: 'v1',
  plural: 'httproutes',
  kind: 'HTTPRoute',
};

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
    throw new ExecutorError(
      `no port for StageVersion ${sv.name}: set spec.backend.port on it or spec.port on the registration`,
    );
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
  if (missing.length)
    throw new ExecutorError(`HTTPRoute ${where} has ${count} rules; rule ${missing.join(', ')} does not exist`);
  return indexes;
}

/** A backendRef for messages: kind (when not a Service), namespace (when not the route's), name. */
function show(ref: BackendRef, routeNamespace: string): string {
  const kind = ref.kind ?? 'Service';
  const group = ref.group ?? '';
  const prefix = kind === 'Service' && group === '' ? '' : `${kind}${group ? `.${group}` : ''} `;
  return `${prefix}${ref.namespace && ref.namespace !== routeNamespace ? `${ref.namespace}/` : ''}${ref.name}`;
}

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

const provider: Provider<GatewayApiConfig, BackendRef> = {
  kind: HTTPROUTE,
  objects: (input, config) =>
    config.routes.map((r) => ({
      name: r.name,
      namespace: r.namespace ?? input.namespace,
      ...(r.rules ? { select: r.rules } : {}),
    })),
  rules: (spec, selected, where) =>
    rulesOf(spec, selected as number[] | undefined, where).map((index) => ({ index, rule: spec.rules[index] })),
  label: (r) => `rule ${r.index}`,
  entries: (rule) => rule.backendRefs ?? [],
  setEntries: (rule, entries) => {
    rule.backendRefs = entries;
  },
  identity: (ref, ns) => identity(ref, ns),
  stageVersionIdentity: (input, sv, config) => identity({ name: serviceName(input, sv, config) }, input.namespace),
  adopted: (input, config) => config.adopt.map((a) => identity(a, input.namespace)),
  entryFor: (input, sv, weight, config, ns) => {
    const b = backend(input, sv, config);
    // The namespace only when the route is elsewhere (it then needs a ReferenceGrant).
    return { name: b.name, ...(ns === input.namespace ? {} : { namespace: input.namespace }), port: b.port, weight };
  },
  // Per-backend filters of the managed backend carry over to its replacement.
  carryOver: (found) => {
    const filters = found.find((ref) => ref.filters)?.filters;
    return filters ? { filters } : {};
  },
  weightOf: (ref) => ref.weight,
  show,
  exact: (ref, ns) => `${show(ref, ns)}:${ref.port ?? ''}:${ref.weight ?? 1}`,
  ambiguity: (ref, ns, where, rule, input) => ambiguity(ref, ns, where, rule.index, input),
};

const rules = managedRules(provider);

export const gatewayApiExecutor: Executor<GatewayApiConfig> = {
  type: 'gateway-api',
  config: gatewayApiConfig,
  routeNamespaces: (config, activationNamespace) =>
    distinct(config.routes.map((r) => r.namespace ?? activationNamespace)),
  ...rules,
  /**
   * The write holds (read back), and each gateway implementation that serves a route's parents
   * accepted the generation written and resolved its backends (./acceptance.ts): a route it refuses
   * fails the task with its own message.
   */
  async verify(input, assignment, config, ctx) {
    await rules.verify(input, assignment, config, ctx);
    const said = await Promise.all(
      provider.objects(input, config).map((o) => implementationVerdict(HTTPROUTE, o.namespace, o.name, ctx)),
    );
    return said.join('; ');
  },
};
