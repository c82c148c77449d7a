/**
 * What the Stage controller decides (ADR-0013, ADR-0012 step 1), as pure functions: given what one
 * pass read of a namespace, the objects to create, the metadata and spec patches, the deletes, and
 * the status patch of each object whose status should change. No I/O and no clock: the controller
 * (controllers/stage/controller.ts) lists, calls decideNamespace, acts, so every rule is tested as a
 * table row (test/unit/stage-decisions.test.ts) without a cluster.
 */
import {
  ANNOTATION_ACTIVATED_BY,
  ANNOTATION_DRAIN_SINCE,
  ANNOTATION_SERVING,
  API_VERSION,
  DEFAULT_SYSTEM_NAMESPACE,
  FINALIZER_IN_USE,
  LABEL_STAGE_NAME,
  LABEL_USAGE,
  LABEL_VECTOR,
} from '../api/group.js';
import { setCondition, type ConditionInput } from '../api/conditions.js';
import type { StageReporting } from './landscape.js';
import { controllerStatusName } from '../api/controller-status.js';
import { vectorLabelValue } from '../api/labels.js';
import type { StageResource } from '../api/stage.js';
import type { StageVersionResource } from '../api/stage-version.js';
import type { StageVersionUsageResource } from '../api/stage-version-usage.js';
import type { VectorActivationResource } from '../api/vector-activation.js';
import type { RouteRef } from '../api/meta.js';
import { activeUsageName, joinName, labelValue, targetUsageName } from '../shared/names.js';

type Stage = StageResource;
type StageVersion = StageVersionResource;
type Usage = StageVersionUsageResource;
type Activation = VectorActivationResource;

/** One managed rule and the percent it sends each StageVersion (a Stage's status.traffic). */
export interface TrafficRule {
  route: RouteRef;
  rule: number;
  name?: string;
  weights: Record<string, number>;
}

export { sameRule } from './traffic.js';

/** What the routes hold for one Stage; `complete` when every registration's rules could be read. */
export interface ObservedTraffic {
  rules: TrafficRule[];
  complete: boolean;
  /**
   * The routes may hold what nobody sees now (a landscape whose reports stopped): no version is let
   * go, not even one a switch said it moved all the traffic off, since a person may have sent it
   * traffic again where nobody looks.
   */
  unseen?: boolean;
}

/** What a pass read of one namespace. */
export interface Observed {
  namespace: string;
  stages: Stage[];
  stageVersions: StageVersion[];
  usages: Usage[];
  activations: Activation[];
  /**
   * By Stage, what its managed routes hold (controllers/stage/traffic.ts); undefined for a Stage
   * whose routes could not be read now. Without the map, no decision looks at the routes.
   */
  traffic?: ReadonlyMap<string, ObservedTraffic | undefined>;
  /** By Stage in a Landscape: whether its workers' reports are fresh (its LandscapeReported condition). */
  reporting?: ReadonlyMap<string, StageReporting>;
}

export interface Create {
  object: StageVersion | Usage | Activation;
  why: string;
}
/** Finalizers and annotations (null removes one); with resourceVersion, the patch is conditional. */
export interface MetadataPatch {
  kind: 'StageVersion';
  name: string;
  metadata: { finalizers?: string[]; annotations?: Record<string, string | null> };
  resourceVersion?: string;
  why: string;
}
export interface SpecPatch {
  kind: 'StageVersionUsage';
  name: string;
  spec: Record<string, unknown>;
  why: string;
}
/** Deletes the object only while it has this uid: a re-created namesake is not the one decided on. */
export interface Delete {
  kind: 'StageVersion';
  name: string;
  uid?: string;
  why: string;
}
/** A JSON merge patch of the status: only the fields that change (null removes one). */
export interface StatusPatch {
  kind: 'Stage' | 'StageVersion' | 'StageVersionUsage';
  name: string;
  patch: Record<string, unknown>;
}

/** What the decisions need to know of the controller that runs them. */
export interface DecisionOptions {
  /**
   * The system namespace (KONFIDENCE_SYSTEM_NAMESPACE), where the Stage controller's
   * ControllerStatus lives; each Stage's status.controllerStatus points there. Default
   * konfidence-system.
   */
  systemNamespace?: string;
  /** The shard this controller serves (KONFIDENCE_SHARD): its ControllerStatus is the shard's. */
  shard?: string;
}

/** Act in this order: protection first, a StageVersion exists before a usage points at it. */
export interface NamespaceDecision {
  metadata: MetadataPatch[];
  creates: Create[];
  specs: SpecPatch[];
  deletes: Delete[];
  /** At most one per object, none when nothing changes. */
  statuses: StatusPatch[];
  /** When a pass must run again though nothing changes (a drain ends), epoch ms. */
  wakeAt?: number;
}

const FINAL = new Set(['Succeeded', 'Failed', 'Skipped', 'Cancelled']);
const nameOf = (o: { metadata: { name?: string } }) => o.metadata.name ?? '';
const deleting = (o: { metadata: { deletionTimestamp?: unknown } }) => Boolean(o.metadata.deletionTimestamp);
const byRevisionDesc = (a: StageVersion, b: StageVersion) =>
  b.spec.revision - a.spec.revision || nameOf(a).localeCompare(nameOf(b));

export const isReady = (sv: StageVersion) =>
  !deleting(sv) && (sv.status?.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True');

/** A selector holds every StageVersion of its namespace that carries all of its labels. */
export function selects(usage: Usage, sv: StageVersion): boolean {
  const wanted = usage.spec.stageVersionSelector?.matchLabels ?? {};
  const labels = sv.metadata.labels ?? {};
  return Object.keys(wanted).length > 0 && Object.entries(wanted).every(([k, v]) => labels[k] === v);
}

export function references(usage: Usage, sv: StageVersion): boolean {
  if (deleting(usage)) return false;
  const ref = usage.spec.stageVersionRef?.name;
  return ref !== undefined ? ref === nameOf(sv) : selects(usage, sv);
}

/** The StageVersions a usage resolves to, newest first. */
export const resolve = (usage: Usage, svs: StageVersion[]) =>
  svs.filter((sv) => references(usage, sv)).sort(byRevisionDesc);
export const usersOf = (sv: StageVersion, usages: Usage[]) => usages.filter((u) => references(u, sv));

/** The StageVersions of a Stage that an unfinished activation is about. */
const activating = (stage: string, activations: Activation[]) =>
  new Set(
    activations
      .filter((va) => va.spec.stage === stage && !FINAL.has(va.status?.phase ?? ''))
      .map((va) => va.spec.stageVersion),
  );

/** The StageVersions a managed rule sends traffic to. */
export function servingIn(traffic: ObservedTraffic | undefined): Set<string> {
  return new Set(
    (traffic?.rules ?? []).flatMap((r) => Object.entries(r.weights).flatMap(([name, w]) => (w > 0 ? [name] : []))),
  );
}

/** A StageVersion no managed rule sends traffic to any more, protected until its drain has passed. */
export interface Draining {
  stageVersion: string;
  /** When a pass first saw no rule send it traffic (ISO time). */
  since: string;
}

/** The serving marks to set or clear, the drains still running, and when the next one ends (epoch ms). */
export interface MarksDecision {
  patches: MetadataPatch[];
  draining: Draining[];
  wakeAt?: number;
}

/**
 * Serving marks from what the routes hold, whatever path got them there: a StageVersion that a
 * managed rule sends traffic to is marked serving (the admission policy then refuses its
 * deletion). Once no rule sends it any it drains: for the Stage's drainSeconds from the pass that
 * first saw it so it keeps its mark, and, when its deletion was asked already, its in-use finalizer
 * (protection), for a data plane applies a route change after its own delay and finishes the
 * requests it had sent (a version let go at once would fail them). A version drains that was marked
 * or that the last pass saw served (one being deleted is never marked). A switch that moved all the
 * traffic off a version starts its drain itself (ANNOTATION_DRAIN_SINCE), and vouches for it where
 * this controller cannot read the routes (an executor type it does not run). The mark goes when the
 * drain has passed, and only when the traffic is known whole (or a switch vouched), the StageVersion
 * is not the active one and no activation of the Stage is unfinished: a rule this controller cannot
 * read may still send it traffic, and a running activation may send it traffic again.
 */
export function servingMarks(
  stage: Stage,
  svs: StageVersion[],
  traffic: ObservedTraffic | undefined,
  active: string | undefined,
  activations: Activation[],
  now: Date,
): MarksDecision {
  const name = nameOf(stage);
  const before = stage.status?.draining ?? [];
  if (!traffic) return { patches: [], draining: [...before] };
  const servedBefore = new Set(stage.status?.servingStageVersions ?? []);
  const serving = servingIn(traffic);
  const pending = activating(name, activations);
  const drainMs = (stage.spec.drainSeconds ?? 0) * 1000;
  // Known whole: every registration's rules were read (a Stage whose registrations manage no route
  // has none; its versions but the active one then get no traffic we know of, and drain too).
  const known = traffic.complete;
  const out: MarksDecision = { patches: [], draining: [] };
  for (const sv of svs.filter((x) => x.spec.stage === name)) {
    const version = nameOf(sv);
    const mark = sv.metadata.annotations?.[ANNOTATION_SERVING];
    const switchedOff = sv.metadata.annotations?.[ANNOTATION_DRAIN_SINCE];
    if (serving.has(version)) {
      // The target of an unfinished activation is held by its in-activation mark, and its switch
      // writes the serving mark in that mark's place: one writer, and one write. Once the activation
      // is final, a version its routes still send traffic to is marked here.
      const held = pending.has(version) && sv.metadata.annotations?.[ANNOTATION_ACTIVATED_BY] !== undefined;
      // Served again (a later activation, a person): no drain runs.
      if ((mark !== name || switchedOff) && !deleting(sv) && !held) {
        const annotations = { [ANNOTATION_SERVING]: name, ...(switchedOff ? { [ANNOTATION_DRAIN_SINCE]: null } : {}) };
        out.patches.push({
          kind: 'StageVersion',
          name: version,
          metadata: { annotations },
          why: `StageVersion ${version}: Stage ${name}'s routes send it traffic, marking it serving`,
        });
      }
      continue;
    }
    const marked = mark === name;
    if (version === active || !(marked || servedBefore.has(version) || before.some((d) => d.stageVersion === version)))
      continue;
    // A drain starts on traffic known whole, or when a switch says it moved all the traffic off;
    // one already running goes on whatever is read now.
    const since =
      before.find((d) => d.stageVersion === version)?.since ?? switchedOff ?? (known ? now.toISOString() : undefined);
    if (since === undefined) continue;
    const ends = new Date(since).getTime() + drainMs;
    if (ends <= now.getTime() && (known || (switchedOff && !traffic.unseen)) && pending.size === 0) {
      if (marked || switchedOff) {
        const annotations = { [ANNOTATION_SERVING]: null, ...(switchedOff ? { [ANNOTATION_DRAIN_SINCE]: null } : {}) };
        out.patches.push({
          kind: 'StageVersion',
          name: version,
          metadata: { annotations },
          why: `StageVersion ${version}: no route of Stage ${name} sends it traffic any more and it has drained, clearing the serving mark`,
        });
      }
      continue;
    }
    out.draining.push({ stageVersion: version, since });
    // An unfinished activation wakes the Stage when it ends; a drain wakes it when it passes.
    if (ends > now.getTime()) out.wakeAt = Math.min(out.wakeAt ?? Infinity, ends);
  }
  return out;
}

/**
 * StageVersions of a Stage that may be deleted: not referenced by any usage, not the target, not in
 * or named by an unfinished activation, not serving (marked, or sent traffic by a managed rule),
 * and beyond the `keep` newest of such unused ones.
 */
export function cleanupCandidates(
  stage: string,
  svs: StageVersion[],
  usages: Usage[],
  activations: Activation[],
  keep: number,
  target?: string,
  serving: ReadonlySet<string> = new Set(),
): StageVersion[] {
  const pending = activating(stage, activations);
  const held = (sv: StageVersion) =>
    nameOf(sv) === target ||
    pending.has(nameOf(sv)) ||
    serving.has(nameOf(sv)) ||
    Boolean(sv.metadata.annotations?.[ANNOTATION_ACTIVATED_BY] || sv.metadata.annotations?.[ANNOTATION_SERVING]);
  const unused = svs
    .filter((sv) => sv.spec.stage === stage && !deleting(sv) && !held(sv) && usersOf(sv, usages).length === 0)
    .sort(byRevisionDesc);
  return unused.slice(keep);
}

/** Highest revision the Stage ever had: its status remembers the revisions of deleted StageVersions. */
export function latestRevision(stage: Stage, svs: StageVersion[]): number {
  const own = svs.filter((sv) => sv.spec.stage === nameOf(stage)).map((sv) => sv.spec.revision);
  return Math.max(stage.status?.latestRevision ?? 0, ...own);
}

const ownerRef = (stage: Stage) => ({
  apiVersion: API_VERSION,
  kind: 'Stage',
  name: nameOf(stage),
  uid: stage.metadata.uid ?? '',
  controller: true,
  blockOwnerDeletion: true,
});

/**
 * The Stage's target StageVersion. The newest one (highest revision, not being deleted) when it has
 * spec.vector; otherwise a new one with revision latest + 1, even if an older StageVersion has that
 * vector: a rollback (v1 → v2 → v1) then activates something newer than the active one, as the
 * activation requires. Names taken by other objects are skipped.
 */
export function decideTarget(
  stage: Stage,
  svs: StageVersion[],
  namespace: string,
): { target: StageVersion; create: boolean; latestRevision: number } {
  const name = nameOf(stage);
  const latest = latestRevision(stage, svs);
  const newest = svs.filter((sv) => sv.spec.stage === name && !deleting(sv)).sort(byRevisionDesc)[0];
  if (newest && newest.spec.vector === stage.spec.vector)
    return { target: newest, create: false, latestRevision: latest };
  const taken = new Set(svs.map(nameOf));
  let revision = latest + 1;
  while (taken.has(joinName(name, revision))) revision++;
  const target: StageVersion = {
    apiVersion: API_VERSION,
    kind: 'StageVersion',
    metadata: {
      name: joinName(name, revision),
      namespace,
      labels: { [LABEL_STAGE_NAME]: labelValue(name), [LABEL_VECTOR]: vectorLabelValue(stage.spec.vector) },
      finalizers: [FINALIZER_IN_USE],
      ownerReferences: [ownerRef(stage)],
    },
    spec: { stage: name, vector: stage.spec.vector, revision },
  };
  return { target, create: true, latestRevision: revision };
}

/** The "target" usage follows the target; the old target stays held by the active usage if it serves. */
export function targetUsage(
  stage: Stage,
  target: string,
  usages: Usage[],
  namespace: string,
): Create | SpecPatch | undefined {
  const name = targetUsageName(nameOf(stage));
  const spec = { reason: `target vector of Stage ${nameOf(stage)}`, stageVersionRef: { name: target } };
  const existing = usages.find((u) => nameOf(u) === name);
  if (!existing) {
    const labels = { [LABEL_USAGE]: 'target', [LABEL_STAGE_NAME]: labelValue(nameOf(stage)) };
    const object: Usage = {
      apiVersion: API_VERSION,
      kind: 'StageVersionUsage',
      metadata: { name, namespace, labels, ownerReferences: [ownerRef(stage)] },
      spec,
    };
    return { object, why: `creating the target usage of Stage ${nameOf(stage)} on ${target}` };
  }
  if (existing.spec.stageVersionRef?.name === target) return undefined;
  return {
    kind: 'StageVersionUsage',
    name,
    spec: { ...spec, stageVersionSelector: null },
    why: `moving the target usage of Stage ${nameOf(stage)} to ${target}`,
  };
}

/** A Ready target that does not serve yet gets one VectorActivation (ADR-0012 step 1), unless one exists. */
export function activationFor(
  stage: Stage,
  target: StageVersion,
  active: string | undefined,
  activations: Activation[],
  namespace: string,
): Create | undefined {
  if (!isReady(target) || active === nameOf(target)) return undefined;
  if (activations.some((va) => va.spec.stage === nameOf(stage) && va.spec.stageVersion === nameOf(target)))
    return undefined;
  const object: Activation = {
    apiVersion: API_VERSION,
    kind: 'VectorActivation',
    metadata: { name: joinName('activate', nameOf(target)), namespace, ownerReferences: [ownerRef(stage)] },
    spec: { stage: nameOf(stage), stageVersion: nameOf(target), vector: target.spec.vector },
  };
  return { object, why: `StageVersion ${nameOf(target)} is Ready, activating it on Stage ${nameOf(stage)}` };
}

/**
 * Stage status: Ready when the target serves, Degraded when its activation ended without it, else
 * Progressing; controllerStatus names the ControllerStatus of the Stage controller serving the
 * Stage (docs/ha-publishing.md), so one more request finds the replica that leads.
 */
export function stageStatus(
  stage: Stage,
  s: {
    latestRevision: number;
    target: StageVersion;
    active?: string;
    activations: Activation[];
    systemNamespace: string;
    shard?: string;
    traffic?: ObservedTraffic;
    stageVersions?: StageVersion[];
    draining?: Draining[];
    /** A landscape Stage's LandscapeReported condition. */
    reported?: ConditionInput;
  },
  now: Date,
) {
  const target = nameOf(s.target);
  const ended = s.activations.filter(
    (va) => va.spec.stage === nameOf(stage) && va.spec.stageVersion === target && FINAL.has(va.status?.phase ?? ''),
  );
  const failed =
    ended.length > 0 && ended.every((va) => va.status?.phase !== 'Succeeded') ? ended[ended.length - 1] : undefined;
  const [phase, condition]: [string, ConditionInput] =
    s.active === target
      ? [
          'Ready',
          {
            type: 'Ready',
            status: 'True',
            reason: 'TargetActive',
            message: `StageVersion ${target} serves the traffic`,
          },
        ]
      : failed
        ? [
            'Degraded',
            {
              type: 'Ready',
              status: 'False',
              reason: 'ActivationFailed',
              message:
                `activation ${nameOf(failed)} of ${target} ended ${failed.status?.phase}: ${failed.status?.message ?? ''}`.trim(),
            },
          ]
        : isReady(s.target)
          ? [
              'Progressing',
              {
                type: 'Ready',
                status: 'False',
                reason: 'Activating',
                message: `switching traffic to ${target}${s.active ? ` from ${s.active}` : ''}`,
              },
            ]
          : [
              'Progressing',
              {
                type: 'Ready',
                status: 'False',
                reason: 'WaitingForStageVersion',
                message: `waiting for StageVersion ${target} to become Ready`,
              },
            ];
  const generation = stage.metadata.generation;
  return {
    phase,
    reason: condition.reason,
    message: condition.message,
    observedGeneration: generation,
    latestRevision: s.latestRevision,
    targetStageVersion: target,
    activeStageVersion: s.active,
    controllerStatus: { namespace: s.systemNamespace, name: controllerStatusName('stage-controller', s.shard) },
    conditions: s.reported
      ? setCondition(setCondition(stage.status?.conditions, condition, generation, now), s.reported, generation, now)
      : setCondition(stage.status?.conditions, condition, generation, now),
    // What the routes hold, when they could be read (else the last reading stays).
    ...(s.traffic
      ? {
          traffic: s.traffic.rules.slice(0, 64),
          servingStageVersions: newestFirst(servingIn(s.traffic), s.stageVersions ?? []),
        }
      : {}),
    // Absent (null in the patch) when nothing drains.
    draining: s.draining?.length ? s.draining.slice(0, 64) : undefined,
  };
}

const newestFirst = (names: Set<string>, svs: StageVersion[]) =>
  [...names]
    .sort(
      (a, b) =>
        (svs.find((x) => nameOf(x) === b)?.spec.revision ?? 0) -
          (svs.find((x) => nameOf(x) === a)?.spec.revision ?? 0) || a.localeCompare(b),
    )
    .slice(0, 64);

/** Usage status: what it resolves to and the StageVersionReady / StageVersionNotFound conditions. */
export function usageStatus(usage: Usage, svs: StageVersion[], now: Date) {
  const resolved = resolve(usage, svs);
  const found = resolved.length > 0;
  const notReady = resolved.filter((sv) => !isReady(sv));
  const generation = usage.metadata.generation;
  // StageVersionNotFound is present only while True.
  let conditions = (usage.status?.conditions ?? []).filter((c) => c.type !== 'StageVersionNotFound' || !found);
  if (!found) {
    const what = usage.spec.stageVersionRef
      ? `StageVersion ${usage.spec.stageVersionRef.name}`
      : 'no StageVersion matches the selector';
    conditions = setCondition(
      conditions,
      { type: 'StageVersionNotFound', status: 'True', reason: 'StageVersionNotFound', message: `${what} not found` },
      generation,
      now,
    );
  }
  const ready: ConditionInput = !found
    ? {
        type: 'StageVersionReady',
        status: 'False',
        reason: 'StageVersionNotFound',
        message: 'no StageVersion to be ready',
      }
    : notReady.length > 0
      ? {
          type: 'StageVersionReady',
          status: 'False',
          reason: 'StageVersionNotReady',
          message: `not Ready: ${notReady.map(nameOf).join(', ')}`,
        }
      : {
          type: 'StageVersionReady',
          status: 'True',
          reason: 'StageVersionReady',
          message: 'StageVersion is rolled out and ready for traffic',
        };
  return {
    phase: !found ? 'NotFound' : notReady.length > 0 ? 'NotReady' : 'Ready',
    stageVersions: resolved.map(nameOf),
    observedGeneration: generation,
    conditions: setCondition(conditions, ready, generation, now),
  };
}

/**
 * Protection of one StageVersion: the in-use finalizer while it lives; on deletion, removed once no
 * route sends it traffic, it has drained (servingMarks) and no usage references it (conditional on
 * resourceVersion: a concurrent change makes the next pass decide again), else the status says
 * what holds it. The serving mark of a Stage that is gone is
 * cleared so that garbage collection can take the StageVersion.
 */
export function protection(
  sv: StageVersion,
  usages: Usage[],
  livingStages: Set<string>,
  serving: ReadonlySet<string> = new Set(),
  draining: ReadonlyMap<string, string> = new Map(),
): { patch?: MetadataPatch; waitMessage?: string } {
  const metadata: MetadataPatch['metadata'] = {};
  const why: string[] = [];
  const finalizers = sv.metadata.finalizers ?? [];
  const users = usersOf(sv, usages);
  let waitMessage: string | undefined;
  if (!deleting(sv) && !finalizers.includes(FINALIZER_IN_USE)) {
    metadata.finalizers = [...finalizers, FINALIZER_IN_USE];
    why.push('adding the in-use finalizer');
  } else if (deleting(sv) && finalizers.includes(FINALIZER_IN_USE)) {
    if (serving.has(nameOf(sv))) {
      waitMessage = `deletion waits: a route of Stage ${sv.spec.stage} still sends it traffic`;
    } else if (draining.has(nameOf(sv))) {
      waitMessage = `deletion waits: it drains (a gateway may still send it requests) since ${draining.get(nameOf(sv))}`;
    } else if (users.length === 0) {
      metadata.finalizers = finalizers.filter((f) => f !== FINALIZER_IN_USE);
      why.push('no usage left, removing the in-use finalizer');
    } else {
      waitMessage = `deletion waits: in use by StageVersionUsage ${users.map(nameOf).sort().join(', ')}`;
    }
  }
  if (sv.metadata.annotations?.[ANNOTATION_SERVING] && !livingStages.has(sv.spec.stage)) {
    metadata.annotations = { [ANNOTATION_SERVING]: null };
    why.push(`Stage ${sv.spec.stage} is gone, clearing the serving mark`);
  }
  if (why.length === 0) return { waitMessage };
  const conditional = metadata.finalizers ? { resourceVersion: sv.metadata.resourceVersion } : {};
  return {
    patch: {
      kind: 'StageVersion',
      name: nameOf(sv),
      metadata,
      ...conditional,
      why: `StageVersion ${nameOf(sv)}: ${why.join('; ')}`,
    },
    waitMessage,
  };
}

/** Canonical JSON: the apiserver may return keys in another order. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v && typeof v === 'object' && !(v instanceof Date)) {
    const entries = Object.entries(v)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => a.localeCompare(b));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** The merge patch from `observed` to `desired` over the fields `desired` names; undefined if none changes. */
export function statusPatch(
  observed: Record<string, unknown> | undefined,
  desired: Record<string, unknown>,
): Record<string, unknown> | undefined {
  const patch: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(desired)) {
    if (canonical(observed?.[key] ?? null) !== canonical(value ?? null)) patch[key] = value ?? null;
  }
  return Object.keys(patch).length > 0 ? patch : undefined;
}

/** Everything one pass over a namespace should do. */
export function decideNamespace(observed: Observed, now: Date, options: DecisionOptions = {}): NamespaceDecision {
  const systemNamespace = options.systemNamespace ?? DEFAULT_SYSTEM_NAMESPACE;
  const namespaceDecision: NamespaceDecision = { metadata: [], creates: [], specs: [], deletes: [], statuses: [] };
  const status = (
    kind: StatusPatch['kind'],
    name: string,
    current: object | undefined,
    desired: Record<string, unknown>,
  ) => {
    const patch = statusPatch(current as Record<string, unknown> | undefined, desired);
    if (patch) namespaceDecision.statuses.push({ kind, name, patch });
  };

  const living = new Set(observed.stages.filter((st) => !deleting(st)).map(nameOf));
  const servingOf = (stage: string) => servingIn(observed.traffic?.get(stage));
  const activeOf = (stage: string) =>
    observed.usages.find((u) => nameOf(u) === activeUsageName(stage))?.spec.stageVersionRef?.name;
  // Marks and drains first: a draining version keeps its in-use finalizer (protection).
  const marks = new Map(
    observed.stages
      .filter((st) => !deleting(st))
      .map((st) => [
        nameOf(st),
        servingMarks(
          st,
          observed.stageVersions,
          observed.traffic?.get(nameOf(st)),
          activeOf(nameOf(st)),
          observed.activations,
          now,
        ),
      ]),
  );
  const drainingOf = (stage: string) =>
    new Map((marks.get(stage)?.draining ?? []).map((d) => [d.stageVersion, d.since]));
  for (const sv of observed.stageVersions) {
    const { patch, waitMessage } = protection(
      sv,
      observed.usages,
      living,
      servingOf(sv.spec.stage),
      drainingOf(sv.spec.stage),
    );
    if (patch) namespaceDecision.metadata.push(patch);
    if (waitMessage) status('StageVersion', nameOf(sv), sv.status, { message: waitMessage });
  }

  const targets = new Map<string, string>();
  for (const stage of observed.stages.filter((st) => !deleting(st))) {
    const decision = decideTarget(stage, observed.stageVersions, observed.namespace);
    const target = nameOf(decision.target);
    targets.set(nameOf(stage), target);
    if (decision.create)
      namespaceDecision.creates.push({
        object: decision.target,
        why: `Stage ${nameOf(stage)}: StageVersion revision ${decision.latestRevision} for ${stage.spec.vector}`,
      });
    const usage = targetUsage(stage, target, observed.usages, observed.namespace);
    if (usage && 'object' in usage) namespaceDecision.creates.push(usage);
    else if (usage) namespaceDecision.specs.push(usage);
    const active = activeOf(nameOf(stage));
    const activation = activationFor(stage, decision.target, active, observed.activations, observed.namespace);
    if (activation) namespaceDecision.creates.push(activation);
    const traffic = observed.traffic?.get(nameOf(stage));
    const reporting = observed.reporting?.get(nameOf(stage));
    const stageMarks = marks.get(nameOf(stage))!;
    namespaceDecision.metadata.push(...stageMarks.patches);
    if (stageMarks.wakeAt !== undefined)
      namespaceDecision.wakeAt = Math.min(namespaceDecision.wakeAt ?? Infinity, stageMarks.wakeAt);
    const desired = stageStatus(
      stage,
      {
        latestRevision: decision.latestRevision,
        target: decision.target,
        active,
        activations: observed.activations,
        systemNamespace,
        ...(options.shard ? { shard: options.shard } : {}),
        ...(traffic ? { traffic, stageVersions: observed.stageVersions } : {}),
        draining: stageMarks.draining,
        ...(reporting ? { reported: reporting.condition } : {}),
      },
      now,
    );
    // A report that stops coming changes the condition with no event to announce it.
    if (reporting?.staleAt !== undefined)
      namespaceDecision.wakeAt = Math.min(namespaceDecision.wakeAt ?? Infinity, reporting.staleAt + 1);
    status('Stage', nameOf(stage), stage.status, desired);
  }

  // A usage whose spec changes in this pass gets its status in the next one, from fresh reads.
  const respecced = new Set(namespaceDecision.specs.map((spec) => spec.name));
  for (const usage of observed.usages.filter((u) => !deleting(u) && !respecced.has(nameOf(u)))) {
    status('StageVersionUsage', nameOf(usage), usage.status, usageStatus(usage, observed.stageVersions, now));
  }

  for (const stage of observed.stages.filter((st) => !deleting(st))) {
    const limit = stage.spec.stageVersionHistoryLimit ?? 3;
    // Routes that could not be read now: nothing is deleted on a guess.
    if (observed.traffic?.has(nameOf(stage)) && observed.traffic.get(nameOf(stage)) === undefined) continue;
    for (const sv of cleanupCandidates(
      nameOf(stage),
      observed.stageVersions,
      observed.usages,
      observed.activations,
      limit,
      targets.get(nameOf(stage)),
      servingOf(nameOf(stage)),
    )) {
      namespaceDecision.deletes.push({
        kind: 'StageVersion',
        name: nameOf(sv),
        uid: sv.metadata.uid,
        why: `StageVersion ${nameOf(sv)} is unused and beyond the history limit ${limit} of Stage ${nameOf(stage)}`,
      });
    }
  }
  return namespaceDecision;
}

/**
 * What a pass reads again from the apiserver before acting on a decision, because the next pass cannot
 * take it back and the caches may be a moment behind. `objects` (a fresh list of the namespace)
 * before creating or deleting a StageVersion: the caches of different kinds may lag one another (a
 * Stage's status ahead of its new StageVersion, a usage not cached yet). `routes` (each route
 * read from the apiserver) before what a route sending a StageVersion traffic forbids: deleting it,
 * letting its deletion finish (the in-use finalizer removed), clearing its serving mark (after
 * which anyone may delete it).
 */
export function freshReads(decision: NamespaceDecision): { objects: boolean; routes: boolean } {
  const releases = decision.metadata.some(
    (patch) =>
      (patch.metadata.finalizers && !patch.metadata.finalizers.includes(FINALIZER_IN_USE)) ||
      patch.metadata.annotations?.[ANNOTATION_SERVING] === null,
  );
  return {
    objects: decision.deletes.length > 0 || decision.creates.some((create) => create.object.kind === 'StageVersion'),
    routes: decision.deletes.length > 0 || releases,
  };
}
