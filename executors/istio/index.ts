/**
 * istio executor: points the destinations of VirtualService http routes at a StageVersion, by host
 * or by subset of one host. It manages exactly the destinations of the Stage's StageVersions; other
 * destinations, routes, matches, retries and tcp/tls routes stay as they were.
 */
import { readRoute, updateRoute, type RouteKind } from '../routes.js';
import { ExecutorError, renderPattern, replaceManaged, split, type Executor, type StageVersionInfo, type TaskInput } from '../types.js';
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

function destination(input: TaskInput, sv: StageVersionInfo, config: IstioConfig): Destination {
  const port = config.port ?? sv.backend?.port;
  const base = config.host
    ? { host: config.host, subset: sv.backend?.subset ?? renderPattern(config.subsetPattern, input.stage, sv) }
    : { host: sv.backend?.service ?? renderPattern(config.hostPattern, input.stage, sv) };
  return port ? { ...base, port: { number: port } } : base;
}

const key = (d: Destination) => `${d.host}|${d.subset ?? ''}`;

function httpRoutes(spec: any, wanted: string[] | undefined, where: string): any[] {
  const routes: any[] = spec.http ?? [];
  if (!wanted) return routes;
  const missing = wanted.filter((n) => !routes.some((r) => r.name === n));
  if (missing.length) throw new ExecutorError(`VirtualService ${where} has no http route named ${missing.join(', ')}`);
  return routes.filter((r) => wanted.includes(r.name));
}

function desired(input: TaskInput, from: StageVersionInfo | undefined, to: StageVersionInfo, config: IstioConfig) {
  return split(from && destination(input, from, config), destination(input, to, config), config.weight);
}

const describe = (list: RouteDestination[]) =>
  list.map((d) => `${d.destination.host}${d.destination.subset ? `/${d.destination.subset}` : ''}:${d.weight ?? 100}`).join('+') || 'none';

export const istioExecutor: Executor<IstioConfig> = {
  type: 'istio',
  config: istioConfig,

  async route(input, from, to, config, ctx) {
    const managed = new Set(input.stageVersions.map((sv) => key(destination(input, sv, config))));
    const isManaged = (d: RouteDestination) => managed.has(key(d.destination));
    const next = desired(input, from, to, config).map(({ item, weight }) => ({ destination: item, weight }));
    const messages: string[] = [];
    for (const vs of config.virtualServices) {
      const namespace = vs.namespace ?? input.namespace;
      const where = `${namespace}/${vs.name}`;
      const changes = await updateRoute(VIRTUALSERVICE, namespace, vs.name, ctx, (spec) => {
        const out: string[] = [];
        for (const http of httpRoutes(spec, vs.routes, where)) {
          const old = ((http.route ?? []) as RouteDestination[]).filter(isManaged);
          // Headers and other per-destination settings of the managed destination carry over.
          const extra = Object.fromEntries(Object.entries(old[0] ?? {}).filter(([k]) => k !== 'destination' && k !== 'weight'));
          const entries = next.map((n) => ({ ...extra, ...n }));
          http.route = replaceManaged(http.route ?? [], isManaged, entries);
          if (describe(old) !== describe(entries)) out.push(`VirtualService ${where} route ${http.name ?? '(unnamed)'}: ${describe(old)} → ${describe(entries)}`);
        }
        return out;
      });
      messages.push(...changes);
      ctx.heartbeat();
    }
    return { message: messages.length ? messages.join('; ') : `VirtualServices already route to ${to.name}` };
  },

  async verify(input, from, to, config, ctx) {
    const want = desired(input, from, to, config).map(({ item, weight }) => `${key(item)}:${weight}`).join(',');
    const managed = new Set(input.stageVersions.map((sv) => key(destination(input, sv, config))));
    for (const vs of config.virtualServices) {
      const namespace = vs.namespace ?? input.namespace;
      const route = await readRoute(VIRTUALSERVICE, namespace, vs.name, ctx);
      for (const http of httpRoutes(route.spec, vs.routes, `${namespace}/${vs.name}`)) {
        const actual = ((http.route ?? []) as RouteDestination[])
          .filter((d) => managed.has(key(d.destination)))
          .map((d) => `${key(d.destination)}:${d.weight ?? 100}`)
          .join(',');
        if (actual !== want) {
          throw new ExecutorError(`VirtualService ${namespace}/${vs.name} route ${http.name ?? ''} sends ${actual || 'nothing'}, expected ${want}`, true);
        }
      }
    }
  },
};
