/**
 * istio executor: sets the destinations of VirtualService http routes to an assignment of
 * StageVersions (StageVersion → percent), by host or by subset of one host, and puts back what it
 * recorded on a revert. It manages exactly the destinations (host, subset) of the Stage's
 * StageVersions and those the registration adopts (`spec.adopt`); other destinations, routes,
 * matches, retries and tcp/tls routes stay as they were. A managed route that also sends traffic
 * to a destination it does not manage is refused before any change (docs/activation.md, "Adopting").
 */
import { managedRules, type Provider } from '../managed-rules.js';
import {
  distinct,
  ExecutorError,
  renderPattern,
  type Executor,
  type StageVersionInfo,
  type TaskInput,
  type RouteKind,
} from '../types.js';
import { istioConfig, type IstioConfig } from './config.js';

const VIRTUALSERVICE: RouteKind = {
  group: 'networking.istio.io',
  version: 'v1',
  plural: 'virtualservices',
  kind: 'VirtualService',
};

interface Destination {
  host: string;
  subset?: string;
  port?: { number: number };
}
interface RouteDestination {
  destination: Destination;
  weight?: number;
  [other: string]: unknown;
}

/**
 * Istio's own rule: a host without a dot is a Service of the namespace of the object that names it;
 * every other host is taken as written. So `shop` in namespace a is `shop.a.svc.cluster.local`, and
 * is not `shop` in namespace b.
 */
export function qualifiedHost(host: string, namespace: string): string {
  const h = host.toLowerCase();
  return h.includes('.') || h.includes('*') ? h : `${h}.${namespace}.svc.cluster.local`;
}

/** A StageVersion's destination, its host relative to the Stage's namespace. */
function destination(input: TaskInput, sv: StageVersionInfo, config: IstioConfig): Destination {
  // The StageVersion knows its own Service best: its port wins over the registration's default.
  const port = sv.backend?.port ?? config.port;
  const base = config.host
    ? { host: config.host, subset: sv.backend?.subset ?? renderPattern(config.subsetPattern, input.stage, sv) }
    : { host: sv.backend?.service ?? renderPattern(config.hostPattern, input.stage, sv) };
  return port ? { ...base, port: { number: port } } : base;
}

const key = (d: Destination, namespace: string) => `${qualifiedHost(d.host, namespace)}|${d.subset ?? ''}`;

function httpRoutes(spec: any, wanted: string[] | undefined, where: string): any[] {
  const routes: any[] = spec.http ?? [];
  if (!wanted) return routes;
  const missing = wanted.filter((n) => !routes.some((r) => r.name === n));
  if (missing.length) throw new ExecutorError(`VirtualService ${where} has no http route named ${missing.join(', ')}`);
  return routes.filter((r) => wanted.includes(r.name));
}

const show = (d: Destination) => `${d.host}${d.subset ? `/${d.subset}` : ''}`;

function ambiguity(d: RouteDestination, vsNamespace: string, where: string, http: any, input: TaskInput): string {
  // The adopt entry that names exactly this destination (a short host there means the Stage's namespace).
  const host = vsNamespace === input.namespace ? d.destination.host : qualifiedHost(d.destination.host, vsNamespace);
  const adopt = { host, ...(d.destination.subset ? { subset: d.destination.subset } : {}) };
  const exclude = http.name
    ? `leave route ${http.name} out with spec.virtualServices[].routes`
    : 'name this http route and leave it out with spec.virtualServices[].routes';
  return (
    `VirtualService ${where} http route ${http.name ?? '(unnamed)'} sends traffic (weight ${d.weight ?? 'unset'}) to ` +
    `${qualifiedHost(d.destination.host, vsNamespace)}${d.destination.subset ? ` subset ${d.destination.subset}` : ''}, ` +
    `which is neither a StageVersion's destination of Stage ${input.stage} nor adopted by this registration: ` +
    `routing the new StageVersion next to it would leave both serving. Nothing was changed. ` +
    `Add ${JSON.stringify(adopt)} to the registration's spec.adopt to replace it like a StageVersion's destination, or ${exclude}`
  );
}

/** An http route's position among all of them, found by identity: a rule's index in records. */
const indexed = (spec: any, routes: any[]) =>
  routes.map((rule) => ({ index: (spec.http ?? []).indexOf(rule), ...(rule.name ? { name: rule.name } : {}), rule }));

const provider: Provider<IstioConfig, RouteDestination> = {
  kind: VIRTUALSERVICE,
  objects: (input, config) =>
    config.virtualServices.map((vs) => ({
      name: vs.name,
      namespace: vs.namespace ?? input.namespace,
      ...(vs.routes ? { select: vs.routes } : {}),
    })),
  rules: (spec, selected, where) => indexed(spec, httpRoutes(spec, selected as string[] | undefined, where)),
  label: (r) => `route ${r.name ?? `(unnamed, #${r.index})`}`,
  entries: (rule) => rule.route ?? [],
  setEntries: (rule, entries) => {
    rule.route = entries;
  },
  identity: (d, ns) => key(d.destination, ns),
  stageVersionIdentity: (input, sv, config) => key(destination(input, sv, config), input.namespace),
  adopted: (input, config) => config.adopt.map((a) => key(a, input.namespace)),
  // A short host is qualified when the VirtualService is in another namespace than the Stage.
  entryFor: (input, sv, weight, config, ns) => {
    const d = destination(input, sv, config);
    return { destination: ns === input.namespace ? d : { ...d, host: qualifiedHost(d.host, input.namespace) }, weight };
  },
  // Headers and other per-destination settings of the managed destination carry over.
  carryOver: (found) =>
    Object.fromEntries(Object.entries(found[0] ?? {}).filter(([k]) => k !== 'destination' && k !== 'weight')),
  weightOf: (d) => d.weight,
  show: (d) => show(d.destination),
  exact: (d, ns) => `${key(d.destination, ns)}:${d.destination.port?.number ?? ''}:${d.weight ?? 100}`,
  ambiguity: (d, ns, where, rule, input) => ambiguity(d, ns, where, rule.rule, input),
};

export const istioExecutor: Executor<IstioConfig> = {
  type: 'istio',
  config: istioConfig,
  routeNamespaces: (config, activationNamespace) =>
    distinct(config.virtualServices.map((vs) => vs.namespace ?? activationNamespace)),
  ...managedRules(provider),
};
