/**
 * istio executor: points the destinations of VirtualService http routes at a StageVersion, by host
 * or by subset of one host. It manages exactly the destinations (host, subset) of the Stage's
 * StageVersions and those the registration adopts (`spec.adopt`); other destinations, routes,
 * matches, retries and tcp/tls routes stay as they were. A managed route that also sends traffic
 * to a destination it does not manage is refused before any change (docs/activation.md, "Adopting").
 */
import { readRoute, updateRoutes, type RouteKind } from '../routes.js';
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
import { istioConfig, type IstioConfig } from './config.js';

const VIRTUALSERVICE: RouteKind = { group: 'networking.istio.io', version: 'v1', plural: 'virtualservices', kind: 'VirtualService' };

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

/** What one registration manages, with everything resolved for the VirtualServices it names. */
function plan(input: TaskInput, from: StageVersionInfo | undefined, to: StageVersionInfo, config: IstioConfig) {
  const versions = [...input.stageVersions, to, ...(from ? [from] : [])];
  const stageVersions = versions.map((sv) => key(destination(input, sv, config), input.namespace));
  const adopted = config.adopt.map((a) => key(a, input.namespace));
  const managed = new Set([...stageVersions, ...adopted]);
  const desired = split(from && destination(input, from, config), destination(input, to, config), config.weight);
  return {
    isManaged: (d: RouteDestination, vsNamespace: string) => managed.has(key(d.destination, vsNamespace)),
    /** The destinations to write into a VirtualService of `vsNamespace`: a short host is qualified there. */
    entries: (vsNamespace: string): RouteDestination[] =>
      desired.map(({ item, weight }) => ({
        destination: vsNamespace === input.namespace ? item : { ...item, host: qualifiedHost(item.host, input.namespace) },
        weight,
      })),
    virtualServices: config.virtualServices.map((vs) => ({ ...vs, namespace: vs.namespace ?? input.namespace })),
  };
}

const show = (d: Destination) => `${d.host}${d.subset ? `/${d.subset}` : ''}`;
const describe = (list: RouteDestination[]) => list.map((d) => `${show(d.destination)}:${d.weight ?? 100}`).join('+') || 'none';
const exact = (list: RouteDestination[], ns: string) =>
  list.map((d) => `${key(d.destination, ns)}:${d.destination.port?.number ?? ''}:${d.weight ?? 100}`).join(',');

function ambiguity(d: RouteDestination, vsNamespace: string, where: string, http: any, input: TaskInput): string {
  // The adopt entry that names exactly this destination (a short host there means the Stage's namespace).
  const host = vsNamespace === input.namespace ? d.destination.host : qualifiedHost(d.destination.host, vsNamespace);
  const adopt = { host, ...(d.destination.subset ? { subset: d.destination.subset } : {}) };
  const exclude = http.name ? `leave route ${http.name} out with spec.virtualServices[].routes` : 'name this http route and leave it out with spec.virtualServices[].routes';
  return (
    `VirtualService ${where} http route ${http.name ?? '(unnamed)'} sends traffic (weight ${d.weight ?? 'unset'}) to ` +
    `${qualifiedHost(d.destination.host, vsNamespace)}${d.destination.subset ? ` subset ${d.destination.subset}` : ''}, ` +
    `which is neither a StageVersion's destination of Stage ${input.stage} nor adopted by this registration: ` +
    `routing the new StageVersion next to it would leave both serving. Nothing was changed. ` +
    `Add ${JSON.stringify(adopt)} to the registration's spec.adopt to replace it like a StageVersion's destination, or ${exclude}`
  );
}

export const istioExecutor: Executor<IstioConfig> = {
  type: 'istio',
  config: istioConfig,

  routeNamespaces: (config, activationNamespace) => distinct(config.virtualServices.map((vs) => vs.namespace ?? activationNamespace)),

  async route(input, from, to, config, ctx) {
    const p = plan(input, from, to, config);
    const targets = p.virtualServices.map((vs) => {
      const where = `${vs.namespace}/${vs.name}`;
      const next = p.entries(vs.namespace);
      const edit = (spec: any): string[] => {
        const out: string[] = [];
        for (const http of httpRoutes(spec, vs.routes, where)) {
          const entries: RouteDestination[] = http.route ?? [];
          const isManaged = (d: RouteDestination) => p.isManaged(d, vs.namespace);
          refuseAmbiguous(entries, isManaged, (d) => d.weight, (d) => ambiguity(d, vs.namespace, where, http, input));
          const old = entries.filter(isManaged);
          // Already as desired: leave the route byte for byte as it is.
          if (exact(old, vs.namespace) === exact(next, vs.namespace)) continue;
          // Headers and other per-destination settings of the managed destination carry over.
          const extra = Object.fromEntries(Object.entries(old[0] ?? {}).filter(([k]) => k !== 'destination' && k !== 'weight'));
          const replacement = next.map((n) => ({ ...extra, ...n }));
          http.route = replaceManaged(entries, isManaged, replacement);
          out.push(`VirtualService ${where} route ${http.name ?? '(unnamed)'}: ${describe(old)} → ${describe(replacement)}`);
        }
        return out;
      };
      return { namespace: vs.namespace, name: vs.name, edit };
    });
    const messages = await updateRoutes(VIRTUALSERVICE, targets, ctx);
    return { message: messages.length ? messages.join('; ') : `VirtualServices already route to ${to.name}` };
  },

  async verify(input, from, to, config, ctx) {
    const p = plan(input, from, to, config);
    for (const vs of p.virtualServices) {
      const route = await readRoute(VIRTUALSERVICE, vs.namespace, vs.name, ctx);
      const want = exact(p.entries(vs.namespace), vs.namespace);
      for (const http of httpRoutes(route.spec, vs.routes, `${vs.namespace}/${vs.name}`)) {
        const actual = exact(((http.route ?? []) as RouteDestination[]).filter((d) => p.isManaged(d, vs.namespace)), vs.namespace);
        if (actual !== want) {
          throw new ExecutorError(`VirtualService ${vs.namespace}/${vs.name} route ${http.name ?? '(unnamed)'} sends ${actual || 'nothing'}, expected ${want}`, true);
        }
      }
    }
  },
};
