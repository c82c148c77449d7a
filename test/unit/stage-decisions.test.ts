/**
 * The Stage controller's decisions (decisions/stage.ts), one table row per rule: what one pass over a
 * namespace creates, patches, deletes and which status it writes. No servers.
 */
import {
  ANNOTATION_ACTIVATED_BY,
  ANNOTATION_DRAIN_SINCE,
  ANNOTATION_SERVING,
  FINALIZER_IN_USE,
  LABEL_STAGE_NAME,
  LABEL_USAGE,
  LABEL_VECTOR,
  LABEL_VALUE_PATTERN,
  objectName,
  stageStatus as stageStatusSchema,
  stageVersionResource,
  stageVersionUsageResource,
  vectorActivationResource,
  vectorLabelValue,
  type Condition,
  type StageResource,
  type StageVersionResource,
  type StageVersionUsageResource,
  type VectorActivationResource,
} from '../../api/index.js';
import {
  freshReads,
  decideNamespace,
  statusPatch,
  type Observed,
  type NamespaceDecision,
  type DecisionOptions,
  sameRule,
} from '../../decisions/stage.js';
import { joinName, labelValue } from '../../shared/names.js';

const V = 'landscape.konfidence.cloud/v1alpha1';
const NS = 'shop';
const NOW = new Date('2030-01-01T00:00:00Z');
const EARLIER = '2029-12-31T00:00:00Z';
const GONE = '2029-12-31T12:00:00Z';

interface Opts {
  deleting?: boolean;
  generation?: number;
  status?: any;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  finalizers?: string[];
}
const meta = (name: string, o: Opts) => ({
  name,
  namespace: NS,
  uid: `uid-${name}`,
  resourceVersion: `rv-${name}`,
  generation: o.generation ?? 1,
  ...(o.deleting ? { deletionTimestamp: GONE } : {}),
  ...(o.labels ? { labels: o.labels } : {}),
  ...(o.annotations ? { annotations: o.annotations } : {}),
  ...(o.finalizers ? { finalizers: o.finalizers } : {}),
});

/** A Stage; its drain is 0 unless `drain` says (the rows about draining set it). */
const stage = (name: string, vector: string, o: Opts & { limit?: number; drain?: number } = {}): StageResource => ({
  apiVersion: V,
  kind: 'Stage',
  metadata: meta(name, o),
  spec: { vector, stageVersionHistoryLimit: o.limit ?? 3, drainSeconds: o.drain ?? 0 },
  ...(o.status ? { status: o.status } : {}),
});

const readyCondition: Condition = {
  type: 'Ready',
  status: 'True',
  reason: 'RolledOut',
  message: 'up',
  lastTransitionTime: EARLIER,
};
/** A StageVersion as the controller made it: finalizer and labels on; `ready` adds condition Ready. */
const sv = (
  st: string,
  revision: number,
  vector: string,
  o: Opts & { ready?: boolean; name?: string } = {},
): StageVersionResource => ({
  apiVersion: V,
  kind: 'StageVersion',
  metadata: meta(o.name ?? `${st}-${revision}`, {
    finalizers: [FINALIZER_IN_USE],
    labels: { [LABEL_STAGE_NAME]: st, [LABEL_VECTOR]: vectorLabelValue(vector) },
    ...o,
  }),
  spec: { stage: st, vector, revision },
  ...(o.ready ? { status: { phase: 'Ready', conditions: [readyCondition] } } : o.status ? { status: o.status } : {}),
});

const usage = (
  name: string,
  spec: Partial<StageVersionUsageResource['spec']>,
  o: Opts = {},
): StageVersionUsageResource => ({
  apiVersion: V,
  kind: 'StageVersionUsage',
  metadata: meta(name, o),
  spec: { reason: 'test', ...spec },
  ...(o.status ? { status: o.status } : {}),
});
const ref = (name: string, svName: string, o: Opts = {}) => usage(name, { stageVersionRef: { name: svName } }, o);

const va = (st: string, svName: string, phase?: string, message?: string): VectorActivationResource => ({
  apiVersion: V,
  kind: 'VectorActivation',
  metadata: meta(`activate-${svName}`, {}),
  spec: { stage: st, stageVersion: svName },
  ...(phase ? { status: { phase: phase as never, ...(message ? { message } : {}) } } : {}),
});

/** The longest valid object name: a DNS subdomain of 253 characters. */
const LONG = `${'a'.repeat(120)}.${'b'.repeat(132)}`;

const observed = (o: Partial<Omit<Observed, 'namespace'>>): Observed => ({
  namespace: NS,
  stages: [],
  stageVersions: [],
  usages: [],
  activations: [],
  ...o,
});

// Reading a decision.
// Typed loosely: a row reads the fields of whichever kind it asks for.
const created = (p: NamespaceDecision, kind: string): any[] =>
  p.creates.filter((c) => c.object.kind === kind).map((c) => c.object);
const createdNames = (p: NamespaceDecision, kind: string) => created(p, kind).map((o) => o.metadata.name);
const statusOf = (p: NamespaceDecision, kind: string, name: string) =>
  p.statuses.find((s) => s.kind === kind && s.name === name)?.patch;
const metadataOf = (p: NamespaceDecision, name: string) => p.metadata.find((m) => m.name === name);
const specOf = (p: NamespaceDecision, name: string) => p.specs.find((s) => s.name === name)?.spec;
const condition = (status: any, type: string) =>
  (status?.conditions as Condition[] | undefined)?.find((c) => c.type === type);

/** A Stage `app` serving app-1 (v1), as after its first activation. */
const served = (vector: string, extra: Partial<Omit<Observed, 'namespace'>> = {}) =>
  observed({
    stages: [stage('app', vector, { status: { latestRevision: 1 } })],
    stageVersions: [
      sv('app', 1, 'v1', { ready: true, annotations: { [ANNOTATION_SERVING]: 'app' } }),
      ...(extra.stageVersions ?? []),
    ],
    usages: [ref('app-target', 'app-1'), ref('app-active', 'app-1'), ...(extra.usages ?? [])],
    activations: [va('app', 'app-1', 'Succeeded'), ...(extra.activations ?? [])],
  });

interface Row {
  rule: string;
  given: Observed;
  /** The controller's options (default: none, so the system namespace is konfidence-system). */
  options?: DecisionOptions;
  then: (p: NamespaceDecision) => void;
}

/** What the routes hold for Stage `app`: one rule, `weights` percent per StageVersion. */
const traffic = (weights: Record<string, number>, complete = true, unseen = false): Observed['traffic'] =>
  new Map([
    [
      'app',
      {
        rules: [
          {
            route: { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: NS, name: 'shop' },
            rule: 0,
            weights,
          },
        ],
        complete,
        ...(unseen ? { unseen } : {}),
      },
    ],
  ]);
/** app-2 active after a weighted activation; app-1 still marked serving. */
const weighted = (t: Observed['traffic'], limit = 0) => ({
  ...observed({
    stages: [stage('app', 'v2', { limit, status: { latestRevision: 2 } })],
    stageVersions: [
      sv('app', 1, 'v1', { ready: true, annotations: { [ANNOTATION_SERVING]: 'app' } }),
      sv('app', 2, 'v2', { ready: true, annotations: { [ANNOTATION_SERVING]: 'app' } }),
    ],
    usages: [ref('app-target', 'app-2'), ref('app-active', 'app-2')],
    activations: [va('app', 'app-2', 'Succeeded')],
  }),
  ...(t ? { traffic: t } : {}),
});

/** app-1 held by an activation's in-activation mark, app-2 serving. */
const heldAndServing = [
  sv('app', 1, 'v1', { ready: true, annotations: { [ANNOTATION_ACTIVATED_BY]: 'ns/app-to-1' } }),
  sv('app', 2, 'v2', { ready: true, annotations: { [ANNOTATION_SERVING]: 'app' } }),
];

const rows: Row[] = [
  // Traffic as the managed routes hold it
  {
    rule: 'a version a managed route still sends traffic to keeps its serving mark and is not deleted, whatever the history limit',
    given: weighted(traffic({ 'app-2': 10, 'app-1': 90 })),
    then: (p) => {
      expect(metadataOf(p, 'app-1')).toBeUndefined();
      expect(p.deletes).toEqual([]);
      expect(statusOf(p, 'Stage', 'app')).toMatchObject({
        servingStageVersions: ['app-2', 'app-1'],
        traffic: [{ rule: 0, weights: { 'app-2': 10, 'app-1': 90 } }],
      });
    },
  },
  {
    rule: 'the serving mark goes once no managed route sends the version traffic (then the history limit applies)',
    given: weighted(traffic({ 'app-2': 100 })),
    then: (p) => {
      expect(metadataOf(p, 'app-1')?.metadata).toEqual({ annotations: { [ANNOTATION_SERVING]: null } });
      expect(statusOf(p, 'Stage', 'app')).toMatchObject({ servingStageVersions: ['app-2'] });
    },
  },
  // Draining: a version the routes stopped sending traffic to stays protected for the Stage's drainSeconds
  {
    rule: 'a version no managed route sends traffic any more drains: it keeps its serving mark (so it is not deleted), status.draining says since when, and the decision asks for a pass when the drain ends',
    given: {
      ...weighted(traffic({ 'app-2': 100 })),
      stages: [stage('app', 'v2', { limit: 0, drain: 30, status: { latestRevision: 2 } })],
    },
    then: (p) => {
      expect(metadataOf(p, 'app-1')).toBeUndefined();
      expect(p.deletes).toEqual([]);
      expect(statusOf(p, 'Stage', 'app')).toMatchObject({
        servingStageVersions: ['app-2'],
        draining: [{ stageVersion: 'app-1', since: NOW.toISOString() }],
      });
      expect(p.wakeAt).toBe(NOW.getTime() + 30_000);
    },
  },
  {
    rule: 'a drain still running goes on from its start',
    given: {
      ...weighted(traffic({ 'app-2': 100 })),
      stages: [
        stage('app', 'v2', {
          limit: 0,
          drain: 30,
          status: { latestRevision: 2, draining: [{ stageVersion: 'app-1', since: '2029-12-31T23:59:50.000Z' }] },
        }),
      ],
    },
    then: (p) => {
      expect(metadataOf(p, 'app-1')).toBeUndefined();
      expect(p.deletes).toEqual([]);
      expect(statusOf(p, 'Stage', 'app')?.draining).toBeUndefined();
      expect(p.wakeAt).toBe(NOW.getTime() + 20_000);
    },
  },
  {
    rule: 'a drain that has passed clears the serving mark (then the history limit applies) and leaves status.draining',
    given: {
      ...weighted(traffic({ 'app-2': 100 })),
      stages: [
        stage('app', 'v2', {
          limit: 0,
          drain: 30,
          status: { latestRevision: 2, draining: [{ stageVersion: 'app-1', since: '2029-12-31T23:59:30.000Z' }] },
        }),
      ],
    },
    then: (p) => {
      expect(metadataOf(p, 'app-1')?.metadata).toEqual({ annotations: { [ANNOTATION_SERVING]: null } });
      expect(statusOf(p, 'Stage', 'app')).toMatchObject({ draining: null });
      expect(p.wakeAt).toBeUndefined();
    },
  },
  {
    rule: 'a Stage whose registrations manage no route: a version no longer active drains too, and is let go after it',
    given: {
      ...weighted(new Map([['app', { rules: [], complete: true }]])),
      stages: [
        stage('app', 'v2', {
          limit: 0,
          drain: 30,
          status: { latestRevision: 2, draining: [{ stageVersion: 'app-1', since: '2029-12-31T23:59:30.000Z' }] },
        }),
      ],
    },
    then: (p) => {
      expect(metadataOf(p, 'app-1')?.metadata).toEqual({ annotations: { [ANNOTATION_SERVING]: null } });
      expect(metadataOf(p, 'app-2')).toBeUndefined();
    },
  },
  {
    rule: 'a version whose deletion was asked while it served (so never marked) drains too: its in-use finalizer stays until the drain has passed',
    given: {
      ...weighted(traffic({ 'app-2': 100 })),
      stages: [
        stage('app', 'v2', { drain: 30, status: { latestRevision: 2, servingStageVersions: ['app-2', 'app-1'] } }),
      ],
      stageVersions: [
        sv('app', 1, 'v1', { ready: true, deleting: true }),
        sv('app', 2, 'v2', { ready: true, annotations: { [ANNOTATION_SERVING]: 'app' } }),
      ],
    },
    then: (p) => {
      expect(metadataOf(p, 'app-1')).toBeUndefined();
      expect(statusOf(p, 'StageVersion', 'app-1')).toEqual({
        message: `deletion waits: it drains (a gateway may still send it requests) since ${NOW.toISOString()}`,
      });
      expect(statusOf(p, 'Stage', 'app')).toMatchObject({
        draining: [{ stageVersion: 'app-1', since: NOW.toISOString() }],
      });
    },
  },
  {
    rule: 'a version being deleted whose drain has passed loses its in-use finalizer once nothing uses it',
    given: {
      ...weighted(traffic({ 'app-2': 100 })),
      stages: [
        stage('app', 'v2', {
          drain: 30,
          status: { latestRevision: 2, draining: [{ stageVersion: 'app-1', since: '2029-12-31T23:59:00.000Z' }] },
        }),
      ],
      stageVersions: [
        sv('app', 1, 'v1', { ready: true, deleting: true }),
        sv('app', 2, 'v2', { ready: true, annotations: { [ANNOTATION_SERVING]: 'app' } }),
      ],
    },
    then: (p) => {
      expect(metadataOf(p, 'app-1')?.metadata.finalizers).toEqual([]);
      expect(statusOf(p, 'Stage', 'app')).toMatchObject({ draining: null });
    },
  },
  {
    rule: 'where the routes cannot be read whole, a version a switch moved all the traffic off drains from the switch, and is let go after it',
    given: {
      ...weighted(traffic({ 'app-2': 100 }, false)),
      stages: [stage('app', 'v2', { drain: 30, status: { latestRevision: 2 } })],
      stageVersions: [
        sv('app', 1, 'v1', {
          ready: true,
          annotations: { [ANNOTATION_SERVING]: 'app', [ANNOTATION_DRAIN_SINCE]: '2029-12-31T23:59:20.000Z' },
        }),
        sv('app', 2, 'v2', { ready: true, annotations: { [ANNOTATION_SERVING]: 'app' } }),
      ],
    },
    then: (p) => {
      expect(metadataOf(p, 'app-1')?.metadata).toEqual({
        annotations: { [ANNOTATION_SERVING]: null, [ANNOTATION_DRAIN_SINCE]: null },
      });
    },
  },
  {
    rule: "where nobody sees the routes now (a landscape whose reports stopped), not even a switch's word lets a version go",
    given: {
      ...weighted(traffic({ 'app-2': 100 }, false, true)),
      stages: [stage('app', 'v2', { drain: 30, status: { latestRevision: 2 } })],
      stageVersions: [
        sv('app', 1, 'v1', {
          ready: true,
          annotations: { [ANNOTATION_SERVING]: 'app', [ANNOTATION_DRAIN_SINCE]: '2029-12-31T23:59:20.000Z' },
        }),
        sv('app', 2, 'v2', { ready: true, annotations: { [ANNOTATION_SERVING]: 'app' } }),
      ],
    },
    then: (p) => {
      expect(metadataOf(p, 'app-1')).toBeUndefined();
      expect(p.deletes).toEqual([]);
    },
  },
  {
    rule: "a switch's drain still running keeps the mark, from the switch's time",
    given: {
      ...weighted(traffic({ 'app-2': 100 }, false)),
      stages: [stage('app', 'v2', { drain: 30, status: { latestRevision: 2 } })],
      stageVersions: [
        sv('app', 1, 'v1', {
          ready: true,
          annotations: { [ANNOTATION_SERVING]: 'app', [ANNOTATION_DRAIN_SINCE]: '2029-12-31T23:59:50.000Z' },
        }),
        sv('app', 2, 'v2', { ready: true, annotations: { [ANNOTATION_SERVING]: 'app' } }),
      ],
    },
    then: (p) => {
      expect(metadataOf(p, 'app-1')).toBeUndefined();
      expect(statusOf(p, 'Stage', 'app')).toMatchObject({
        draining: [{ stageVersion: 'app-1', since: '2029-12-31T23:59:50.000Z' }],
      });
      expect(p.wakeAt).toBe(NOW.getTime() + 20_000);
    },
  },
  {
    rule: 'a draining version the routes send traffic again stops draining',
    given: {
      ...weighted(traffic({ 'app-2': 50, 'app-1': 50 })),
      stages: [
        stage('app', 'v2', {
          drain: 30,
          status: { latestRevision: 2, draining: [{ stageVersion: 'app-1', since: '2029-12-31T23:59:50.000Z' }] },
        }),
      ],
    },
    then: (p) => {
      expect(metadataOf(p, 'app-1')).toBeUndefined();
      expect(statusOf(p, 'Stage', 'app')).toMatchObject({ draining: null });
    },
  },
  {
    rule: 'traffic not known whole (a rule unreadable) starts no drain: a rule not read may still send the version traffic',
    given: {
      ...weighted(traffic({ 'app-2': 100 }, false)),
      stages: [stage('app', 'v2', { limit: 0, drain: 30, status: { latestRevision: 2 } })],
    },
    then: (p) => {
      expect(metadataOf(p, 'app-1')).toBeUndefined();
      expect(statusOf(p, 'Stage', 'app')?.draining).toBeUndefined();
      expect(p.wakeAt).toBeUndefined();
    },
  },
  {
    rule: 'while an activation of the Stage is unfinished the serving mark stays (the run moves the marks of its switch; the next pass after it ends clears a leftover)',
    given: {
      ...weighted(traffic({ 'app-2': 100 })),
      activations: [va('app', 'app-2', 'Succeeded'), va('app', 'app-3', 'InProgress')],
    },
    then: (p) => expect(metadataOf(p, 'app-1')).toBeUndefined(),
  },
  {
    rule: 'a version a route sends traffic to is marked serving, whichever path got it there (a person, a failed Stop)',
    given: weighted(traffic({ 'app-2': 50, 'app-1': 50 })),
    then: (p) => expect(metadataOf(p, 'app-1')).toBeUndefined(),
  },
  {
    rule: "the target of an unfinished activation, held by its in-activation mark, is left to that activation's switch even as routes send it traffic; marked once the activation is final",
    given: {
      ...weighted(traffic({ 'app-1': 100 })),
      stageVersions: heldAndServing,
      activations: [va('app', 'app-1', 'InProgress')],
    },
    then: (p) => {
      expect(metadataOf(p, 'app-1')).toBeUndefined();
      const given = { ...weighted(traffic({ 'app-1': 100 })), stageVersions: heldAndServing };
      const ended = decideNamespace({ ...given, activations: [va('app', 'app-1', 'Failed')] }, NOW);
      expect(metadataOf(ended, 'app-1')?.metadata).toEqual({ annotations: { [ANNOTATION_SERVING]: 'app' } });
    },
  },
  {
    rule: 'an unmarked version a route sends traffic to gets the serving mark',
    given: {
      ...weighted(traffic({ 'app-1': 100 })),
      stageVersions: [
        sv('app', 1, 'v1', { ready: true }),
        sv('app', 2, 'v2', { ready: true, annotations: { [ANNOTATION_SERVING]: 'app' } }),
      ],
    },
    then: (p) => {
      expect(metadataOf(p, 'app-1')?.metadata).toEqual({ annotations: { [ANNOTATION_SERVING]: 'app' } });
      // The active one keeps its mark even at 0 %: the active usage names it.
      expect(metadataOf(p, 'app-2')).toBeUndefined();
      expect(p.deletes).toEqual([]);
    },
  },
  {
    rule: 'no mark is taken while the traffic is not known whole (a registration this controller cannot read)',
    given: weighted(traffic({ 'app-2': 100 }, false)),
    then: (p) => expect(metadataOf(p, 'app-1')).toBeUndefined(),
  },
  {
    rule: 'a Stage whose routes could not be read now: nothing is decided on its traffic, its status keeps the last reading',
    given: weighted(new Map([['app', undefined]])),
    then: (p) => {
      expect(metadataOf(p, 'app-1')).toBeUndefined();
      expect(statusOf(p, 'Stage', 'app')?.traffic).toBeUndefined();
    },
  },
  {
    rule: 'a version being deleted waits while a managed route sends it traffic',
    given: {
      ...weighted(traffic({ 'app-2': 90, 'app-1': 10 })),
      stageVersions: [sv('app', 1, 'v1', { ready: true, deleting: true }), sv('app', 2, 'v2', { ready: true })],
    },
    then: (p) => {
      expect(metadataOf(p, 'app-1')).toBeUndefined();
      expect(statusOf(p, 'StageVersion', 'app-1')).toEqual({
        message: 'deletion waits: a route of Stage app still sends it traffic',
      });
    },
  },
  // StageVersion creation
  {
    rule: 'a new Stage gets StageVersion revision 1 of spec.vector, labelled, owned, protected',
    given: observed({ stages: [stage('app', 'example/app:1.0.0')] }),
    then: (p) => {
      const [v] = created(p, 'StageVersion');
      expect(v).toMatchObject({
        metadata: {
          name: 'app-1',
          labels: { [LABEL_STAGE_NAME]: 'app', [LABEL_VECTOR]: vectorLabelValue('example/app:1.0.0') },
          finalizers: [FINALIZER_IN_USE],
          ownerReferences: [{ kind: 'Stage', name: 'app', uid: 'uid-app', controller: true }],
        },
        spec: { stage: 'app', vector: 'example/app:1.0.0', revision: 1 },
      });
      expect(statusOf(p, 'Stage', 'app')).toMatchObject({
        latestRevision: 1,
        targetStageVersion: 'app-1',
        phase: 'Progressing',
        reason: 'WaitingForStageVersion',
      });
    },
  },
  {
    rule: 'no new StageVersion while the newest one has spec.vector',
    given: served('v1'),
    then: (p) => expect(p.creates).toEqual([]),
  },
  {
    rule: 'a vector change creates revision latest + 1',
    given: served('v2'),
    then: (p) =>
      expect(created(p, 'StageVersion')).toEqual([
        expect.objectContaining({
          metadata: expect.objectContaining({ name: 'app-2' }),
          spec: { stage: 'app', vector: 'v2', revision: 2 },
        }),
      ]),
  },
  {
    rule: 'rollback: back to an earlier vector creates a new revision, not a reuse of the old StageVersion',
    given: served('v1', { stageVersions: [sv('app', 2, 'v2', { ready: true })], usages: [], activations: [] }),
    then: (p) => {
      expect(created(p, 'StageVersion').map((o) => [o.metadata.name, o.spec])).toEqual([
        ['app-3', { stage: 'app', vector: 'v1', revision: 3 }],
      ]);
      expect(specOf(p, 'app-target')).toMatchObject({ stageVersionRef: { name: 'app-3' } });
      expect(created(p, 'VectorActivation')).toEqual([]);
    },
  },
  {
    rule: 'rollback: the new revision, once Ready, gets its VectorActivation although the vector was active before',
    given: observed({
      stages: [stage('app', 'v1', { status: { latestRevision: 3 } })],
      stageVersions: [
        sv('app', 1, 'v1', { ready: true }),
        sv('app', 2, 'v2', { ready: true }),
        sv('app', 3, 'v1', { ready: true }),
      ],
      usages: [ref('app-target', 'app-3'), ref('app-active', 'app-2')],
      activations: [va('app', 'app-1', 'Succeeded'), va('app', 'app-2', 'Succeeded')],
    }),
    then: (p) => {
      expect(createdNames(p, 'StageVersion')).toEqual([]);
      expect(createdNames(p, 'VectorActivation')).toEqual(['activate-app-3']);
      expect(statusOf(p, 'Stage', 'app')).toMatchObject({
        phase: 'Progressing',
        reason: 'Activating',
        targetStageVersion: 'app-3',
        activeStageVersion: 'app-2',
      });
    },
  },
  {
    rule: 'latestRevision only grows: a deleted revision is never reused',
    given: observed({
      stages: [stage('app', 'v9', { status: { latestRevision: 5 } })],
      stageVersions: [sv('app', 2, 'v2')],
    }),
    then: (p) => {
      expect(createdNames(p, 'StageVersion')).toEqual(['app-6']);
      expect(statusOf(p, 'Stage', 'app')).toMatchObject({ latestRevision: 6 });
    },
  },
  {
    rule: 'a StageVersion being deleted is not the newest: its vector gets a new revision',
    given: observed({
      stages: [stage('app', 'v2', { status: { latestRevision: 2 } })],
      stageVersions: [sv('app', 1, 'v1'), sv('app', 2, 'v2', { deleting: true })],
    }),
    then: (p) =>
      expect(created(p, 'StageVersion').map((o) => [o.metadata.name, o.spec.vector])).toEqual([['app-3', 'v2']]),
  },
  {
    rule: "a name another Stage's StageVersion took is skipped",
    given: observed({ stages: [stage('app', 'v1')], stageVersions: [sv('other', 1, 'x', { name: 'app-1' })] }),
    then: (p) => expect(createdNames(p, 'StageVersion')).toEqual(['app-2']),
  },
  {
    rule: 'a Stage being deleted gets nothing new and no status',
    given: observed({ stages: [stage('app', 'v1', { deleting: true })] }),
    then: (p) => expect(p).toEqual({ metadata: [], creates: [], specs: [], deletes: [], statuses: [] }),
  },
  // Target usage
  {
    rule: 'the target usage is created on the new StageVersion, after it (same pass, later in order)',
    given: observed({ stages: [stage('app', 'v1')] }),
    then: (p) => {
      expect(p.creates.map((c) => `${c.object.kind}/${c.object.metadata.name}`)).toEqual([
        'StageVersion/app-1',
        'StageVersionUsage/app-target',
      ]);
      expect(created(p, 'StageVersionUsage')[0]).toMatchObject({
        metadata: {
          labels: { [LABEL_USAGE]: 'target', [LABEL_STAGE_NAME]: 'app' },
          ownerReferences: [{ kind: 'Stage', name: 'app' }],
        },
        spec: { stageVersionRef: { name: 'app-1' }, reason: 'target vector of Stage app' },
      });
    },
  },
  {
    rule: 'the target usage moves to the new StageVersion (a ref, never a selector)',
    given: served('v2'),
    then: (p) =>
      expect(specOf(p, 'app-target')).toEqual({
        reason: 'target vector of Stage app',
        stageVersionRef: { name: 'app-2' },
        stageVersionSelector: null,
      }),
  },
  {
    rule: 'a usage whose spec moves gets its status in the next pass, from fresh reads',
    given: served('v2'),
    then: (p) => expect(statusOf(p, 'StageVersionUsage', 'app-target')).toBeUndefined(),
  },
  // VectorActivation creation
  {
    rule: 'a Ready target that does not serve gets a VectorActivation owned by the Stage',
    given: served('v2', { stageVersions: [sv('app', 2, 'v2', { ready: true })], usages: [], activations: [] }),
    then: (p) =>
      expect(created(p, 'VectorActivation')).toEqual([
        expect.objectContaining({
          metadata: expect.objectContaining({
            name: 'activate-app-2',
            ownerReferences: [expect.objectContaining({ kind: 'Stage', name: 'app' })],
          }),
          spec: { stage: 'app', stageVersion: 'app-2', vector: 'v2' },
        }),
      ]),
  },
  {
    rule: 'no VectorActivation while the target is not Ready',
    given: served('v2', { stageVersions: [sv('app', 2, 'v2')] }),
    then: (p) => expect(created(p, 'VectorActivation')).toEqual([]),
  },
  {
    rule: 'no second VectorActivation for the same target, even after one failed',
    given: served('v2', {
      stageVersions: [sv('app', 2, 'v2', { ready: true })],
      activations: [va('app', 'app-2', 'Failed')],
    }),
    then: (p) => expect(created(p, 'VectorActivation')).toEqual([]),
  },
  {
    rule: 'no VectorActivation for a target that serves already',
    given: served('v1'),
    then: (p) => expect(created(p, 'VectorActivation')).toEqual([]),
  },
  // Finalizer
  {
    rule: 'a StageVersion without the finalizer gets it, conditional on its resourceVersion',
    given: observed({ stageVersions: [sv('app', 1, 'v1', { finalizers: ['other'] })] }),
    then: (p) =>
      expect(metadataOf(p, 'app-1')).toMatchObject({
        metadata: { finalizers: ['other', FINALIZER_IN_USE] },
        resourceVersion: 'rv-app-1',
      }),
  },
  {
    rule: 'a deleted StageVersion no usage references loses the finalizer (conditional), keeping the others',
    given: observed({
      stageVersions: [sv('app', 1, 'v1', { deleting: true, finalizers: ['other', FINALIZER_IN_USE] })],
      usages: [ref('u', 'app-1', { deleting: true })],
    }),
    then: (p) =>
      expect(metadataOf(p, 'app-1')).toMatchObject({
        metadata: { finalizers: ['other'] },
        resourceVersion: 'rv-app-1',
      }),
  },
  {
    rule: 'a deleted StageVersion a selector references keeps the finalizer, and its status says who holds it',
    given: observed({
      stageVersions: [sv('app', 1, 'v1', { deleting: true })],
      usages: [
        usage('migration', { stageVersionSelector: { matchLabels: { [LABEL_STAGE_NAME]: 'app' } } }),
        ref('backup', 'app-1'),
      ],
    }),
    then: (p) => {
      expect(p.metadata).toEqual([]);
      expect(statusOf(p, 'StageVersion', 'app-1')).toEqual({
        message: 'deletion waits: in use by StageVersionUsage backup, migration',
      });
    },
  },
  {
    rule: 'a deleted StageVersion without our finalizer is left alone',
    given: observed({ stageVersions: [sv('app', 1, 'v1', { deleting: true, finalizers: [] })] }),
    then: (p) => expect(p.metadata).toEqual([]),
  },
  // Usage conditions
  {
    rule: 'a usage on a Ready StageVersion: phase Ready, StageVersionReady True',
    given: observed({
      stageVersions: [sv('app', 1, 'v1', { ready: true })],
      usages: [ref('u', 'app-1', { generation: 4 })],
    }),
    then: (p) => {
      const s = statusOf(p, 'StageVersionUsage', 'u');
      expect(s).toMatchObject({ phase: 'Ready', stageVersions: ['app-1'], observedGeneration: 4 });
      expect(s?.conditions).toEqual([
        {
          type: 'StageVersionReady',
          status: 'True',
          reason: 'StageVersionReady',
          message: expect.any(String),
          lastTransitionTime: '2030-01-01T00:00:00Z',
          observedGeneration: 4,
        },
      ]);
    },
  },
  {
    rule: 'a selector holding several StageVersions is NotReady until all of them are',
    given: observed({
      stageVersions: [sv('app', 1, 'v1', { ready: true }), sv('app', 2, 'v1')],
      usages: [usage('u', { stageVersionSelector: { matchLabels: { [LABEL_VECTOR]: 'v1' } } })],
    }),
    then: (p) => {
      const s = statusOf(p, 'StageVersionUsage', 'u');
      expect(s).toMatchObject({ phase: 'NotReady', stageVersions: ['app-2', 'app-1'] });
      expect(condition(s, 'StageVersionReady')).toMatchObject({
        status: 'False',
        reason: 'StageVersionNotReady',
        message: 'not Ready: app-2',
      });
    },
  },
  {
    rule: 'a usage naming a missing StageVersion: NotFound, StageVersionNotFound True',
    given: observed({ usages: [ref('u', 'nope')] }),
    then: (p) => {
      const s = statusOf(p, 'StageVersionUsage', 'u');
      expect(s).toMatchObject({ phase: 'NotFound', stageVersions: [] });
      expect(condition(s, 'StageVersionNotFound')).toMatchObject({
        status: 'True',
        message: 'StageVersion nope not found',
      });
      expect(condition(s, 'StageVersionReady')).toMatchObject({ status: 'False', reason: 'StageVersionNotFound' });
    },
  },
  {
    rule: 'StageVersionNotFound is removed once the StageVersion exists',
    given: observed({
      stageVersions: [sv('app', 1, 'v1')],
      usages: [
        ref('u', 'app-1', {
          status: {
            phase: 'NotFound',
            conditions: [
              {
                type: 'StageVersionNotFound',
                status: 'True',
                reason: 'StageVersionNotFound',
                message: 'x',
                lastTransitionTime: EARLIER,
              },
            ],
          },
        }),
      ],
    }),
    then: (p) =>
      expect((statusOf(p, 'StageVersionUsage', 'u')?.conditions as Condition[]).map((c) => c.type)).toEqual([
        'StageVersionReady',
      ]),
  },
  // Cleanup
  {
    rule: 'cleanup deletes unused StageVersions beyond the history limit, oldest first, by uid',
    given: observed({
      stages: [stage('app', 'v6', { limit: 1, status: { latestRevision: 6 } })],
      stageVersions: [1, 2, 3, 4, 5, 6].map((r) => sv('app', r, `v${r}`)),
      usages: [ref('app-target', 'app-6'), ref('app-active', 'app-5')],
    }),
    then: (p) =>
      expect(p.deletes.map((d) => [d.name, d.uid])).toEqual([
        ['app-3', 'uid-app-3'],
        ['app-2', 'uid-app-2'],
        ['app-1', 'uid-app-1'],
      ]),
  },
  {
    rule: 'cleanup never takes the target, the active one, one in or named by an unfinished activation, or a serving one',
    given: observed({
      stages: [stage('app', 'v7', { limit: 0, status: { latestRevision: 7 } })],
      stageVersions: [
        sv('app', 1, 'v1'),
        sv('app', 2, 'v2', { annotations: { [ANNOTATION_SERVING]: 'app' } }),
        sv('app', 3, 'v3', { annotations: { [ANNOTATION_ACTIVATED_BY]: `${NS}/x` } }),
        sv('app', 4, 'v4'),
        sv('app', 5, 'v5'),
        sv('app', 6, 'v6', { deleting: true }),
        sv('app', 7, 'v7'),
      ],
      // The target usage still names app-5; the decision's target is app-7.
      usages: [ref('app-target', 'app-5'), ref('app-active', 'app-1')],
      activations: [va('app', 'app-4', 'InProgress')],
    }),
    then: (p) => expect(p.deletes).toEqual([]),
  },
  {
    rule: "cleanup leaves other Stages' StageVersions alone",
    given: observed({
      stages: [stage('app', 'v1', { limit: 0 })],
      stageVersions: [sv('app', 1, 'v1'), sv('other', 1, 'v1')],
      usages: [ref('app-target', 'app-1')],
    }),
    then: (p) => expect(p.deletes).toEqual([]),
  },
  // Serving mark
  {
    rule: 'the serving mark is cleared when its Stage is gone or being deleted',
    given: observed({
      stages: [stage('going', 'v1', { deleting: true })],
      stageVersions: [
        sv('gone', 1, 'v1', { annotations: { [ANNOTATION_SERVING]: 'gone' } }),
        sv('going', 1, 'v1', { deleting: true, annotations: { [ANNOTATION_SERVING]: 'going' } }),
      ],
      usages: [ref('going-active', 'going-1')],
    }),
    then: (p) => {
      expect(metadataOf(p, 'gone-1')?.metadata).toEqual({ annotations: { [ANNOTATION_SERVING]: null } });
      expect(metadataOf(p, 'going-1')?.metadata).toEqual({ annotations: { [ANNOTATION_SERVING]: null } });
    },
  },
  {
    rule: 'the serving mark stays while its Stage lives',
    given: served('v1'),
    then: (p) => expect(p.metadata).toEqual([]),
  },
  // Stage status
  {
    rule: 'Stage status: Ready with condition TargetActive when the target serves',
    given: served('v1'),
    then: (p) => {
      const s = statusOf(p, 'Stage', 'app');
      // A patch: latestRevision (1 already) is not written again.
      expect(s).toMatchObject({
        phase: 'Ready',
        reason: 'TargetActive',
        targetStageVersion: 'app-1',
        activeStageVersion: 'app-1',
        observedGeneration: 1,
      });
      expect(s).not.toHaveProperty('latestRevision');
      expect(condition(s, 'Ready')).toMatchObject({ status: 'True', reason: 'TargetActive', observedGeneration: 1 });
    },
  },
  {
    rule: 'Stage status: Progressing (Activating) while a Ready target is switched to',
    given: served('v2', {
      stageVersions: [sv('app', 2, 'v2', { ready: true })],
      activations: [va('app', 'app-2', 'InProgress')],
    }),
    then: (p) =>
      expect(statusOf(p, 'Stage', 'app')).toMatchObject({
        phase: 'Progressing',
        reason: 'Activating',
        message: 'switching traffic to app-2 from app-1',
        targetStageVersion: 'app-2',
        activeStageVersion: 'app-1',
      }),
  },
  {
    rule: "Stage status: Degraded when the target's activation ended without it",
    given: served('v2', {
      stageVersions: [sv('app', 2, 'v2', { ready: true })],
      activations: [va('app', 'app-2', 'Failed', 'route gone')],
    }),
    then: (p) => {
      const s = statusOf(p, 'Stage', 'app');
      expect(s).toMatchObject({
        phase: 'Degraded',
        reason: 'ActivationFailed',
        message: 'activation activate-app-2 of app-2 ended Failed: route gone',
      });
      expect(condition(s, 'Ready')).toMatchObject({ status: 'False', reason: 'ActivationFailed' });
    },
  },
  {
    rule: 'Stage status: no write when nothing changed; lastTransitionTime kept',
    given: (() => {
      const o = served('v1');
      const first = statusOf(decideNamespace(o, new Date('2029-06-01T00:00:00Z')), 'Stage', 'app');
      o.stages[0]!.status = { ...o.stages[0]!.status, ...first } as never;
      return o;
    })(),
    then: (p) => expect(statusOf(p, 'Stage', 'app')).toBeUndefined(),
  },
  {
    rule: "Stage status: controllerStatus names the Stage controller's ControllerStatus in konfidence-system by default",
    given: observed({ stages: [stage('app', 'v1')] }),
    then: (p) =>
      expect(statusOf(p, 'Stage', 'app')?.controllerStatus).toEqual({
        namespace: 'konfidence-system',
        name: 'stage-controller',
      }),
  },
  {
    rule: 'Stage status: controllerStatus is in the system namespace the controller was given',
    given: served('v1'),
    options: { systemNamespace: 'platform-system' },
    then: (p) => {
      const s = statusOf(p, 'Stage', 'app');
      expect(s?.controllerStatus).toEqual({ namespace: 'platform-system', name: 'stage-controller' });
      // What the apiserver accepts: the patch's fields match the Stage status schema.
      expect(stageStatusSchema.partial().safeParse(s).success).toBe(true);
    },
  },
  {
    rule: "Stage status: a shard's controller names the shard's ControllerStatus, the one its shard publishes",
    given: served('v1'),
    options: { systemNamespace: 'platform-system', shard: 'b' },
    then: (p) =>
      expect(statusOf(p, 'Stage', 'app')?.controllerStatus).toEqual({
        namespace: 'platform-system',
        name: 'stage-controller-b',
      }),
  },
  {
    rule: 'Stage status: controllerStatus pointing elsewhere (system namespace changed) is rewritten',
    given: observed({
      stages: [
        stage('app', 'v1', {
          status: { latestRevision: 1, controllerStatus: { namespace: 'old-system', name: 'stage-controller' } },
        }),
      ],
    }),
    options: { systemNamespace: 'new-system' },
    then: (p) =>
      expect(statusOf(p, 'Stage', 'app')?.controllerStatus).toEqual({
        namespace: 'new-system',
        name: 'stage-controller',
      }),
  },
  {
    rule: 'Stage status: activeStageVersion is removed when the active usage is gone',
    given: observed({
      stages: [stage('app', 'v1', { status: { latestRevision: 1, activeStageVersion: 'app-1' } })],
      stageVersions: [sv('app', 1, 'v1', { ready: true })],
      usages: [ref('app-target', 'app-1')],
    }),
    then: (p) => expect(statusOf(p, 'Stage', 'app')).toMatchObject({ activeStageVersion: null, phase: 'Progressing' }),
  },
  // Names and label values
  {
    rule: 'a 253-character Stage name: every name and label value derived from it is valid',
    given: observed({
      stages: [stage(LONG, 'v2', { status: { latestRevision: 1 } })],
      stageVersions: [
        sv(LONG, 1, 'v2', { ready: true, name: joinName(LONG, 1), labels: { [LABEL_STAGE_NAME]: labelValue(LONG) } }),
      ],
    }),
    then: (p) => {
      expect(LONG).toHaveLength(253);
      expect(created(p, 'VectorActivation')[0]?.spec).toMatchObject({ stage: LONG, stageVersion: joinName(LONG, 1) });
      expect(created(p, 'StageVersionUsage')[0]?.metadata).toMatchObject({
        name: joinName(LONG, 'target'),
        labels: { [LABEL_STAGE_NAME]: labelValue(LONG) },
      });
    },
  },
];

/** Whatever a row decides, every object it creates must be one the apiserver accepts. */
function expectValidCreates(p: NamespaceDecision): void {
  const schemas: Record<string, { parse(o: unknown): unknown }> = {
    StageVersion: stageVersionResource,
    StageVersionUsage: stageVersionUsageResource,
    VectorActivation: vectorActivationResource,
  };
  for (const { object } of p.creates) {
    expect(() => schemas[object.kind]!.parse(object)).not.toThrow();
    expect(objectName.safeParse(object.metadata.name).success).toBe(true);
    for (const value of Object.values(object.metadata.labels ?? {})) {
      expect(value.length).toBeLessThanOrEqual(63);
      expect(value).toMatch(LABEL_VALUE_PATTERN);
    }
  }
}

describe('sameRule: two managed rules are one only when the route, by its whole reference, and the rule are', () => {
  const route = { group: 'gateway.networking.k8s.io', kind: 'HTTPRoute', namespace: 'shop', name: 'web' };
  it.each([
    ['the same rule of the same route', {}, 0, true],
    ['another rule of the route', {}, 1, false],
    ['a route of the same name in another namespace', { namespace: 'other' }, 0, false],
    ['a route of the same name of another kind', { group: 'networking.istio.io', kind: 'VirtualService' }, 0, false],
    ['another route of the namespace', { name: 'api' }, 0, false],
  ])('%s', (_what, changed, rule, same) => {
    expect(sameRule({ route, rule: 0 }, { route: { ...route, ...changed }, rule })).toBe(same);
  });
});

describe('Stage controller decisions', () => {
  it.each(rows)('$rule', ({ given, options, then }) => {
    const decision = decideNamespace(given, NOW, options);
    expectValidCreates(decision);
    then(decision);
    // At most one status write per object.
    const keys = decision.statuses.map((s) => `${s.kind}/${s.name}`);
    expect(new Set(keys).size).toBe(keys.length);
  });

  it('a 253-character Stage gets a valid StageVersion and target usage on a first pass', () => {
    const decision = decideNamespace(observed({ stages: [stage(LONG, 'v1')] }), NOW);
    expectValidCreates(decision);
    expect(createdNames(decision, 'StageVersion')).toEqual([joinName(LONG, 1)]);
    expect(created(decision, 'StageVersion')[0]?.metadata.labels?.[LABEL_STAGE_NAME]).toBe(labelValue(LONG));
    expect(createdNames(decision, 'StageVersionUsage')).toEqual([joinName(LONG, 'target')]);
  });

  it('statusPatch writes only what changes and removes with null', () => {
    expect(statusPatch({ a: 1, b: { x: 1, y: 2 } }, { a: 1, b: { y: 2, x: 1 } })).toBeUndefined();
    expect(statusPatch({ a: 1, c: 'gone', keep: 'theirs' }, { a: 2, c: undefined })).toEqual({ a: 2, c: null });
  });
});

describe('what a pass reads again from the apiserver before it acts (freshReads)', () => {
  const none = { objects: false, routes: false };
  const marked = { annotations: { [ANNOTATION_SERVING]: 'app' } };
  it.each<{ rule: string; given: Observed; acts: boolean; fresh: ReturnType<typeof freshReads> }>([
    { rule: 'nothing to do', given: served('v1'), acts: false, fresh: none },
    {
      rule: 'a serving mark set (a later pass takes it back if the routes moved on)',
      given: {
        ...weighted(traffic({ 'app-2': 10, 'app-1': 90 })),
        stageVersions: [sv('app', 1, 'v1', { ready: true }), sv('app', 2, 'v2', { ready: true, ...marked })],
      },
      acts: true,
      fresh: none,
    },
    {
      rule: 'a new StageVersion: the namespace',
      given: observed({ stages: [stage('app', 'v1')] }),
      acts: true,
      fresh: { objects: true, routes: false },
    },
    {
      rule: 'a serving mark cleared: the routes',
      given: weighted(traffic({ 'app-2': 100 })),
      acts: true,
      fresh: { objects: false, routes: true },
    },
    {
      rule: 'a deletion let finish (the in-use finalizer removed): the routes',
      given: served('v1', { stageVersions: [sv('app', 2, 'v0', { deleting: true })] }),
      acts: true,
      fresh: { objects: false, routes: true },
    },
    {
      rule: 'a StageVersion deleted beyond the history limit: both',
      given: observed({
        stages: [stage('app', 'v2', { limit: 0, status: { latestRevision: 2 } })],
        stageVersions: [sv('app', 1, 'v1', { ready: true }), sv('app', 2, 'v2', { ready: true, ...marked })],
        usages: [ref('app-target', 'app-2'), ref('app-active', 'app-2')],
        activations: [va('app', 'app-2', 'Succeeded')],
      }),
      acts: true,
      fresh: { objects: true, routes: true },
    },
  ])('$rule', ({ given, acts, fresh }) => {
    const decision = decideNamespace(given, NOW);
    expect([...decision.metadata, ...decision.creates, ...decision.deletes].length > 0).toBe(acts);
    expect(freshReads(decision)).toEqual(fresh);
  });
});
