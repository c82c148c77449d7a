/**
 * gateway-api executor: points the backendRefs of HTTPRoute rules at a StageVersion's Service.
 * It manages exactly the backendRefs that name a Service of one of the Stage's StageVersions;
 * every other backendRef, rule, match and filter stays as it was.
 */
import { readRoute, updateRoute, type RouteKind } from '../routes.js';
import {
  ExecutorError,
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

function backend(input: TaskInput, sv: StageVersionInfo, config: GatewayApiConfig): { name: string; port: number } {
  const name = sv.backend?.service ?? renderPattern(config.backendNamePattern, input.stage, sv);
  const port = sv.backend?.port ?? config.port;
  if (port === undefined) {
    throw new ExecutorError(`no port for StageVersion ${sv.name}: set spec.backend.port on it or spec.port on the registration`);
  }
  return { name, port };
}

const isService = (ref: BackendRef) => (ref.group ?? '') === '' && (ref.kind ?? 'Service') === 'Service';

function rulesOf(route: { spec: any }, wanted: number[] | undefined, where: string): number[] {
  const count = (route.spec.rules ?? []).length;
  const indexes = wanted ?? [...Array(count).keys()];
  const missing = indexes.filter((i) => i >= count);
  if (missing.length) throw new ExecutorError(`HTTPRoute ${where} has ${count} rules; rule ${missing.join(', ')} does not exist`);
  return indexes;
}

function desiredRefs(input: TaskInput, from: StageVersionInfo | undefined, to: StageVersionInfo, config: GatewayApiConfig) {
  return split(from && backend(input, from, config), backend(input, to, config), config.weight);
}

export const gatewayApiExecutor: Executor<GatewayApiConfig> = {
  type: 'gateway-api',
  config: gatewayApiConfig,

  async route(input, from, to, config, ctx) {
    const managedNames = new Set(input.stageVersions.map((sv) => backend(input, sv, config).name));
    const isManaged = (ref: BackendRef) => isService(ref) && managedNames.has(ref.name);
    const desired = desiredRefs(input, from, to, config);
    const messages: string[] = [];
    for (const r of config.routes) {
      const namespace = r.namespace ?? input.namespace;
      const where = `${namespace}/${r.name}`;
      const changes = await updateRoute(HTTPROUTE, namespace, r.name, ctx, (spec) => {
        const out: string[] = [];
        for (const i of rulesOf({ spec }, r.rules, where)) {
          const rule = spec.rules[i];
          const refs: BackendRef[] = rule.backendRefs ?? [];
          const old = refs.filter(isManaged);
          // Per-backend filters of the managed backend carry over to its replacement.
          const filters = old.find((ref) => ref.filters)?.filters;
          const next = desired.map(({ item, weight }) => ({ ...(filters ? { filters } : {}), name: item.name, port: item.port, weight }));
          rule.backendRefs = replaceManaged(refs, isManaged, next);
          const describe = (list: BackendRef[]) => list.map((b) => `${b.name}:${b.weight ?? 1}`).join('+') || 'none';
          if (describe(old) !== describe(next)) out.push(`HTTPRoute ${where} rule ${i}: ${describe(old)} → ${describe(next)}`);
        }
        return out;
      });
      messages.push(...changes);
      ctx.heartbeat();
    }
    return { message: messages.length ? messages.join('; ') : `HTTPRoutes already route to ${to.name}` };
  },

  async verify(input, from, to, config, ctx) {
    const desired = desiredRefs(input, from, to, config).map(({ item, weight }) => `${item.name}:${item.port}:${weight}`);
    const managedNames = new Set(input.stageVersions.map((sv) => backend(input, sv, config).name));
    for (const r of config.routes) {
      const namespace = r.namespace ?? input.namespace;
      const route = await readRoute(HTTPROUTE, namespace, r.name, ctx);
      for (const i of rulesOf(route, r.rules, `${namespace}/${r.name}`)) {
        const actual = ((route.spec.rules[i].backendRefs ?? []) as BackendRef[])
          .filter((ref) => isService(ref) && managedNames.has(ref.name))
          .map((ref) => `${ref.name}:${ref.port}:${ref.weight ?? 1}`);
        if (actual.join(',') !== desired.join(',')) {
          throw new ExecutorError(`HTTPRoute ${namespace}/${r.name} rule ${i} routes to ${actual.join(',') || 'nothing'}, expected ${desired.join(',')}`, true);
        }
      }
    }
  },
};
