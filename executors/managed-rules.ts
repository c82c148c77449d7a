/**
 * What the built-in executors share: routing objects made of rules, each rule a list of weighted
 * entries (backendRefs, route destinations) of which a registration manages some, told apart by
 * their whole reference. A provider says how to find the rules and how to read and write one entry;
 * this file observes, assigns, verifies and restores the same way for every provider.
 */
import { readRoute, updateRoutes } from './routes.js';
import {
  ExecutorError,
  refuseAmbiguous,
  replaceManaged,
  type Executor,
  type ExecutorContext,
  type RouteKind,
  type RuleRecord,
  type StageVersionInfo,
  type TaskInput,
  type TrafficAssignment,
} from './types.js';

/** One managed rule of a routing object's spec, found where it is now. */
export interface FoundRule {
  index: number;
  name?: string;
  /** The rule object itself, edited in place. */
  rule: any;
}

/** A routing object a registration names, its namespace resolved. */
export interface NamedObject {
  namespace: string;
  name: string;
}

export interface Provider<Config, Entry> {
  kind: RouteKind;
  /** The routing objects a config names. */
  objects(input: TaskInput, config: Config): (NamedObject & { select?: readonly (number | string)[] })[];
  /** The rules it manages in an object's spec; throws naming a selected rule that does not exist. */
  rules(spec: any, selected: readonly (number | string)[] | undefined, where: string): FoundRule[];
  /** "rule 0", "route primary": a rule as messages name it. */
  label(rule: { index: number; name?: string }): string;
  entries(rule: any): Entry[];
  setEntries(rule: any, entries: Entry[]): void;
  /** Identity of an entry in an object of `namespace`, every default filled in. */
  identity(entry: Entry, namespace: string): string;
  /** Identity of a StageVersion's entry (relative to the Stage's namespace). */
  stageVersionIdentity(input: TaskInput, sv: StageVersionInfo, config: Config): string;
  /** Identities of the entries the registration adopts. */
  adopted(input: TaskInput, config: Config): string[];
  /** The entry that sends `weight` to a StageVersion, as written into an object of `namespace`. */
  entryFor(input: TaskInput, sv: StageVersionInfo, weight: number, config: Config, namespace: string): Entry;
  /** Settings of the managed entries found (filters, headers) that their replacements keep. */
  carryOver(found: Entry[]): Partial<Entry>;
  weightOf(entry: Entry): number | undefined;
  /** The entry for messages, and all it routes by for comparisons. */
  show(entry: Entry, namespace: string): string;
  exact(entry: Entry, namespace: string): string;
  /** Why a rule that sends traffic to an entry nobody manages is refused, and what to do. */
  ambiguity(entry: Entry, namespace: string, where: string, rule: FoundRule, input: TaskInput): string;
}

const versionsOf = (input: TaskInput) => [
  input.stageVersion,
  ...input.stageVersions.filter((sv) => sv.name !== input.stageVersion.name),
];

/** Fails, before anything is written, on an assignment that is not one: unknown versions, not 100 %. */
export function checkAssignment(
  input: TaskInput,
  assignment: TrafficAssignment,
): { sv: StageVersionInfo; weight: number }[] {
  const versions = versionsOf(input);
  const entries = Object.entries(assignment);
  const unknown = entries.filter(([name]) => !versions.some((sv) => sv.name === name)).map(([name]) => name);
  if (unknown.length)
    throw new ExecutorError(
      `the assignment names ${unknown.join(', ')}, which is no StageVersion of Stage ${input.stage}`,
    );
  const total = entries.reduce((sum, [, w]) => sum + w, 0);
  if (total !== 100 || entries.some(([, w]) => !Number.isInteger(w) || w < 0)) {
    throw new ExecutorError(
      `the assignment ${describeAssignment(assignment)} does not give whole percents that sum to 100`,
    );
  }
  // The version being activated first, then the others by name: one order whoever computed it.
  return entries
    .filter(([, w]) => w > 0)
    .map(([name, weight]) => ({ sv: versions.find((v) => v.name === name)!, weight }))
    .sort(
      (a, b) =>
        Number(b.sv.name === input.stageVersion.name) - Number(a.sv.name === input.stageVersion.name) ||
        a.sv.name.localeCompare(b.sv.name),
    );
}

export const describeAssignment = (a: TrafficAssignment) =>
  Object.entries(a)
    .map(([name, w]) => `${name}:${w}`)
    .join('+') || 'nothing';

/** observe, route, verify and restore of an Executor, for one provider. */
export function managedRules<Config, Entry>(
  p: Provider<Config, Entry>,
): Pick<Executor<Config>, 'routeKinds' | 'observe' | 'route' | 'verify' | 'restore'> {
  const kindName = p.kind.kind;
  /** Which entries a task manages, and which StageVersion each of them is. */
  function scope(input: TaskInput, config: Config, extra: string[] = []) {
    const byIdentity = new Map(versionsOf(input).map((sv) => [p.stageVersionIdentity(input, sv, config), sv.name]));
    const managed = new Set([...byIdentity.keys(), ...p.adopted(input, config), ...extra]);
    return {
      isManaged: (e: Entry, ns: string) => managed.has(p.identity(e, ns)),
      /** A StageVersion's name, or the entry itself for one that is no StageVersion's. */
      nameOf: (e: Entry, ns: string) => byIdentity.get(p.identity(e, ns)) ?? p.show(e, ns),
    };
  }
  const exact = (list: Entry[], ns: string) => list.map((e) => p.exact(e, ns)).join(',');
  const describe = (list: Entry[], ns: string) =>
    list.map((e) => `${p.show(e, ns)}:${p.weightOf(e) ?? 'unset'}`).join('+') || 'none';
  const where = (o: NamedObject) => `${o.namespace}/${o.name}`;

  /**
   * The managed rules of every object, refusing an ambiguous one unless `lenient` (a report of
   * what the rules hold, not a change); `spec` is edited in place by callers.
   */
  function managedOf(
    input: TaskInput,
    config: Config,
    s: ReturnType<typeof scope>,
    o: NamedObject & { select?: readonly (number | string)[] },
    spec: any,
    lenient = false,
  ) {
    return p.rules(spec, o.select, where(o)).map((found) => {
      const entries = p.entries(found.rule);
      const isManaged = (e: Entry) => s.isManaged(e, o.namespace);
      if (!lenient)
        refuseAmbiguous(entries, isManaged, p.weightOf, (e) => p.ambiguity(e, o.namespace, where(o), found, input));
      return { found, entries, isManaged, managed: entries.filter(isManaged) };
    });
  }

  return {
    routeKinds: [p.kind],

    async observe(input, config, ctx, options = {}) {
      const s = scope(input, config);
      const out: RuleRecord[] = [];
      for (const o of p.objects(input, config)) {
        const route = await readRoute(p.kind, o.namespace, o.name, ctx);
        for (const { found, managed } of managedOf(input, config, s, o, route.spec, options.lenient)) {
          const weights: Record<string, number> = {};
          for (const e of managed)
            weights[s.nameOf(e, o.namespace)] = (weights[s.nameOf(e, o.namespace)] ?? 0) + (p.weightOf(e) ?? 1);
          out.push({
            route: { group: p.kind.group, kind: kindName, namespace: o.namespace, name: o.name },
            index: found.index,
            ...(found.name ? { name: found.name } : {}),
            entries: structuredClone(managed) as Record<string, unknown>[],
            traffic: weights,
          });
        }
      }
      return out;
    },

    async route(input, assignment, config, ctx) {
      const wanted = checkAssignment(input, assignment);
      const s = scope(input, config);
      // Every entry is made (a port for each StageVersion) before any route is written.
      const objects = p.objects(input, config).map((o) => ({
        o,
        desired: wanted.map(({ sv, weight }) => p.entryFor(input, sv, weight, config, o.namespace)),
      }));
      const targets = objects.map(({ o, desired }) => ({
        namespace: o.namespace,
        name: o.name,
        edit: (spec: any): string[] => {
          const out: string[] = [];
          for (const { found, entries, isManaged, managed } of managedOf(input, config, s, o, spec)) {
            // Already as assigned: leave the rule byte for byte as it is (apiserver defaults included).
            if (exact(managed, o.namespace) === exact(desired, o.namespace)) continue;
            const kept = p.carryOver(managed);
            const next = desired.map((d) => ({ ...kept, ...d }));
            p.setEntries(found.rule, replaceManaged(entries, isManaged, next));
            out.push(
              `${kindName} ${where(o)} ${p.label(found)}: ${describe(managed, o.namespace)} → ${describe(next, o.namespace)}`,
            );
          }
          return out;
        },
      }));
      const messages = await updateRoutes(p.kind, targets, ctx);
      return {
        message: messages.length ? messages.join('; ') : `${kindName}s already send ${describeAssignment(assignment)}`,
      };
    },

    async verify(input, assignment, config, ctx) {
      const wanted = checkAssignment(input, assignment);
      const s = scope(input, config);
      for (const o of p.objects(input, config)) {
        const route = await readRoute(p.kind, o.namespace, o.name, ctx);
        const want = exact(
          wanted.map(({ sv, weight }) => p.entryFor(input, sv, weight, config, o.namespace)),
          o.namespace,
        );
        for (const found of p.rules(route.spec, o.select, where(o))) {
          const actual = exact(
            p.entries(found.rule).filter((e) => s.isManaged(e, o.namespace)),
            o.namespace,
          );
          if (actual !== want)
            throw new ExecutorError(
              `${kindName} ${where(o)} ${p.label(found)} sends ${actual || 'nothing'}, expected ${want}`,
              true,
            );
        }
      }
    },

    async restore(input, record, config, ctx) {
      const objects = p.objects(input, config);
      // A record names only objects this registration manages: anything else is not ours to write.
      const foreign = record.find(
        (r) =>
          r.route.kind !== kindName ||
          !objects.some((o) => o.namespace === r.route.namespace && o.name === r.route.name),
      );
      if (foreign)
        throw new ExecutorError(
          `the record names ${foreign.route.kind} ${foreign.route.namespace}/${foreign.route.name}, which this registration does not manage; nothing was restored`,
        );
      const ofObject = (o: NamedObject) =>
        record.filter((r) => r.route.namespace === o.namespace && r.route.name === o.name);
      const scoped = (o: NamedObject) =>
        scope(
          input,
          config,
          ofObject(o).flatMap((r) => (r.entries as Entry[]).map((e) => p.identity(e, o.namespace))),
        );
      /** The recorded rule where it is now: by name when it has one, else by position. */
      const locate = (spec: any, o: NamedObject, r: RuleRecord): FoundRule => {
        const all = p.rules(spec, undefined, where(o));
        const found = r.name ? all.find((f) => f.name === r.name) : all.find((f) => f.index === r.index);
        if (!found)
          throw new ExecutorError(
            `cannot restore ${kindName} ${where(o)} ${p.label(r)}: the rule is gone; it was recorded sending ${describe(r.entries as Entry[], o.namespace)}`,
          );
        return found;
      };
      const targets = objects
        .filter((o) => ofObject(o).length > 0)
        .map((o) => ({
          namespace: o.namespace,
          name: o.name,
          edit: (spec: any): string[] => {
            const s = scoped(o);
            const out: string[] = [];
            for (const r of ofObject(o)) {
              const found = locate(spec, o, r);
              const entries = p.entries(found.rule);
              const isManaged = (e: Entry) => s.isManaged(e, o.namespace);
              const managed = entries.filter(isManaged);
              const recorded = structuredClone(r.entries) as Entry[];
              if (exact(managed, o.namespace) === exact(recorded, o.namespace)) continue;
              p.setEntries(found.rule, replaceManaged(entries, isManaged, recorded));
              out.push(
                `${kindName} ${where(o)} ${p.label(found)}: ${describe(managed, o.namespace)} → ${describe(recorded, o.namespace)} (as recorded)`,
              );
            }
            return out;
          },
        }));
      const messages = await updateRoutes(p.kind, targets, ctx).catch((err: unknown) => {
        if (!(err instanceof ExecutorError)) throw err;
        throw new ExecutorError(
          `${err.message}; the rules recorded in ${record.map((r) => `${r.route.namespace}/${r.route.name} ${p.label(r)}`).join(', ')} may still be changed`,
          err.retryable,
        );
      });
      // Read back, afresh: a restore that did not take must say so, naming the rule.
      const fresh: ExecutorContext = {
        kubeConfig: ctx.kubeConfig,
        signal: ctx.signal,
        heartbeat: ctx.heartbeat,
        routes: new Map(),
      };
      for (const o of objects.filter((x) => ofObject(x).length > 0)) {
        const route = await readRoute(p.kind, o.namespace, o.name, fresh);
        const s = scoped(o);
        for (const r of ofObject(o)) {
          const found = locate(route.spec, o, r);
          const actual = exact(
            p.entries(found.rule).filter((e) => s.isManaged(e, o.namespace)),
            o.namespace,
          );
          const want = exact(r.entries as Entry[], o.namespace);
          if (actual !== want)
            throw new ExecutorError(
              `${kindName} ${where(o)} ${p.label(found)} sends ${actual || 'nothing'} after the restore, recorded ${want || 'nothing'}`,
              true,
            );
        }
      }
      return { message: messages.length ? messages.join('; ') : `${kindName}s already as recorded` };
    },
  };
}
