/**
 * The Stage controller (ADR-0013, ADR-0012 step 1), level-triggered: any change in a namespace
 * marks it dirty, and one pass reads the namespace's Stages, StageVersions, usages and activations
 * and converges them. Every write is idempotent; a pass that changed something schedules another,
 * so each pass decides on fresh reads.
 *
 * Per Stage: the StageVersion of spec.vector exists (labels, owner: the Stage); the "target" usage
 * points at it; once that StageVersion is Ready, a VectorActivation for it exists. Per usage: the
 * StageVersionReady / StageVersionNotFound conditions. Per StageVersion: the in-use finalizer, held
 * while any usage references it; unused StageVersions beyond the Stage's history limit are deleted.
 */
import { isDeepStrictEqual } from 'node:util';
import {
  ANNOTATION_SERVING,
  API_VERSION,
  FINALIZER_IN_USE,
  GROUP,
  LABEL_STAGE_NAME,
  LABEL_USAGE,
  LABEL_VECTOR,
  setCondition,
  VERSION,
  vectorLabelValue,
  type Condition,
} from '../api/index.js';
import { apiStatus, k8s } from '../k8s/client.js';
import { CustomObjects, type CustomObject } from '../k8s/custom-objects.js';
import { activeUsageName, joinName, targetUsageName } from '../shared/names.js';
import { cleanupCandidates, isReady, resolve, usersOf } from './stage-versions.js';

const KINDS = ['stages', 'stageversions', 'stageversionusages', 'vectoractivations'];
const RESYNC_MS = 30_000;

export interface StageControllerOptions {
  kubeConfig: k8s.KubeConfig;
  /** Namespaces to manage; default all. */
  namespaces?: string[];
  log?: (message: string) => void;
}

/** What a pass reads of an object; for Stages and usages only what others write (not status). */
function relevantState(o: CustomObject): string {
  const m = o.metadata;
  const meta = { generation: m.generation, deleting: m.deletionTimestamp, labels: m.labels, finalizers: m.finalizers };
  switch (o.kind) {
    case 'VectorActivation':
      return JSON.stringify({ ...meta, phase: o.status?.phase });
    case 'StageVersion':
      return JSON.stringify({ ...meta, ready: isReady(o), serving: m.annotations?.[ANNOTATION_SERVING] });
    default:
      return JSON.stringify(meta);
  }
}

function ownerRef(o: CustomObject) {
  return { apiVersion: API_VERSION, kind: o.kind, name: o.metadata.name, uid: o.metadata.uid!, controller: true, blockOwnerDeletion: true };
}

export class StageController {
  private readonly objects: CustomObjects;
  private readonly watches: AbortController[] = [];
  private readonly dirty = new Set<string>();
  private readonly seen = new Map<string, string>();
  private running = false;
  private stopped = false;
  private wake: () => void = () => undefined;
  private loop?: Promise<void>;
  private timer?: NodeJS.Timeout;
  private readonly log: (message: string) => void;

  constructor(private readonly o: StageControllerOptions) {
    this.objects = new CustomObjects(o.kubeConfig);
    this.log = o.log ?? ((m) => console.log(`[stage-controller] ${m}`));
  }

  async start(): Promise<void> {
    for (const plural of KINDS) await this.watch(plural);
    this.timer = setInterval(() => void this.resyncAll(), RESYNC_MS);
    this.loop = this.run();
    void this.resyncAll();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    for (const w of this.watches) w.abort();
    this.wake();
    await this.loop;
  }

  /**
   * Enqueues a namespace when an object changed in a way a pass decides on. Status writes that
   * change nothing else (the controller's own, an activation's progress) do not cost a pass: with
   * four list calls each, they slowed activations running beside the controller.
   */
  private observe(type: string, o: CustomObject): void {
    const key = `${o.kind}/${o.metadata.uid}`;
    const seen = relevantState(o);
    if (type === 'DELETED') this.seen.delete(key);
    else if (this.seen.get(key) === seen) return;
    else this.seen.set(key, seen);
    this.enqueue(o.metadata.namespace!);
  }

  /** Marks a namespace for a pass (tests and other components may call it too). */
  enqueue(namespace: string): void {
    if (this.o.namespaces && !this.o.namespaces.includes(namespace)) return;
    this.dirty.add(namespace);
    this.wake();
  }

  /** Never throws: an apiserver that does not answer now is asked again at the next resync. */
  private async resyncAll(): Promise<void> {
    try {
      const namespaces = this.o.namespaces ?? (await this.objects.listAllNamespaces('Stage')).map((s) => s.metadata.namespace!);
      for (const ns of new Set(namespaces)) this.enqueue(ns);
    } catch (err) {
      this.log(`resync: ${(err as Error).message}`);
    }
  }

  /** A watch per kind; on any break it is started again (a re-list comes with the next resync). */
  private async watch(plural: string): Promise<void> {
    if (this.stopped) return;
    const paths = this.o.namespaces
      ? this.o.namespaces.map((ns) => `/apis/${GROUP}/${VERSION}/namespaces/${ns}/${plural}`)
      : [`/apis/${GROUP}/${VERSION}/${plural}`];
    for (const path of paths) {
      const restart = () => {
        if (this.stopped) return;
        setTimeout(() => void this.watchPath(path, restart), 1_000);
      };
      await this.watchPath(path, restart);
    }
  }

  private async watchPath(path: string, restart: () => void): Promise<void> {
    try {
      const controller = await new k8s.Watch(this.o.kubeConfig).watch(
        path,
        {},
        (type: string, o: CustomObject) => this.observe(type, o),
        () => {
          void this.resyncAll();
          restart();
        },
      );
      this.watches.push(controller);
    } catch {
      restart();
    }
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      const next = this.dirty.values().next();
      if (next.done) {
        await new Promise<void>((resolve) => (this.wake = resolve));
        continue;
      }
      const ns = next.value;
      this.dirty.delete(ns);
      try {
        if (await this.reconcile(ns)) this.dirty.add(ns);
      } catch (err) {
        this.log(`namespace ${ns}: ${(err as Error).message}`);
        setTimeout(() => this.enqueue(ns), 1_000);
      }
    }
  }

  /** One pass over a namespace; true when it wrote something (another pass follows). */
  async reconcile(ns: string): Promise<boolean> {
    const [stages, svs, usages, activations] = await Promise.all([
      this.objects.list('Stage', ns),
      this.objects.list('StageVersion', ns),
      this.objects.list('StageVersionUsage', ns),
      this.objects.list('VectorActivation', ns),
    ]);
    let changed = false;
    // Protection first: a StageVersion without the finalizer could be deleted under a usage.
    for (const sv of svs) changed = (await this.protect(sv, usages)) || changed;
    // A Stage that is gone serves nothing: its StageVersions may go with it (garbage collection).
    const living = new Set(stages.filter((st) => !st.metadata.deletionTimestamp).map((st) => st.metadata.name));
    for (const sv of svs) {
      if (sv.metadata.annotations?.[ANNOTATION_SERVING] && !living.has(sv.spec?.stage)) {
        await this.objects.mergeMetadata('StageVersion', ns, sv.metadata.name, { annotations: { [ANNOTATION_SERVING]: null } });
        changed = true;
      }
    }
    if (changed) return true;
    for (const stage of stages) changed = (await this.reconcileStage(stage, svs, usages, activations)) || changed;
    if (changed) return true;
    for (const usage of usages) changed = (await this.reconcileUsage(usage, svs)) || changed;
    for (const stage of stages) {
      if (stage.metadata.deletionTimestamp) continue;
      for (const sv of cleanupCandidates(stage.metadata.name, svs, usages, activations, stage.spec?.stageVersionHistoryLimit ?? 3)) {
        this.log(`deleting unused StageVersion ${ns}/${sv.metadata.name}`);
        await this.objects.delete('StageVersion', ns, sv.metadata.name);
        changed = true;
      }
    }
    return changed;
  }

  /** Adds the finalizer; on deletion, removes it once no usage references the StageVersion. */
  private async protect(sv: CustomObject, usages: CustomObject[]): Promise<boolean> {
    const finalizers = sv.metadata.finalizers ?? [];
    const ns = sv.metadata.namespace!;
    if (!sv.metadata.deletionTimestamp) {
      if (finalizers.includes(FINALIZER_IN_USE)) return false;
      return this.setFinalizers(sv, [...finalizers, FINALIZER_IN_USE]);
    }
    if (!finalizers.includes(FINALIZER_IN_USE)) return false;
    const users = usersOf(sv, usages);
    if (users.length > 0) {
      const message = `deletion waits: in use by StageVersionUsage ${users.map((u) => u.metadata.name).sort().join(', ')}`;
      if (sv.status?.message !== message) {
        await this.objects.patchStatus('StageVersion', ns, sv.metadata.name, { message });
      }
      return false;
    }
    return this.setFinalizers(sv, finalizers.filter((f) => f !== FINALIZER_IN_USE));
  }

  private async setFinalizers(sv: CustomObject, finalizers: string[]): Promise<boolean> {
    try {
      // resourceVersion makes the patch conditional: a concurrent change conflicts, the next pass retries.
      await this.objects.mergeMetadata('StageVersion', sv.metadata.namespace!, sv.metadata.name, {
        finalizers,
        resourceVersion: sv.metadata.resourceVersion,
      });
    } catch (err) {
      if (apiStatus(err) !== 409) throw err;
    }
    return true;
  }

  private async reconcileStage(stage: CustomObject, svs: CustomObject[], usages: CustomObject[], activations: CustomObject[]): Promise<boolean> {
    if (stage.metadata.deletionTimestamp) return false;
    const ns = stage.metadata.namespace!;
    const name = stage.metadata.name;
    const vector: string = stage.spec.vector;
    const own = svs.filter((sv) => sv.spec?.stage === name);
    const latestRevision = Math.max(stage.status?.latestRevision ?? 0, ...own.map((sv) => sv.spec.revision as number));
    const target = own
      .filter((sv) => sv.spec.vector === vector && !sv.metadata.deletionTimestamp)
      .sort((a, b) => b.spec.revision - a.spec.revision)[0];

    if (!target) {
      const revision = latestRevision + 1;
      this.log(`Stage ${ns}/${name}: creating StageVersion revision ${revision} for ${vector}`);
      await this.objects.create({
        apiVersion: API_VERSION,
        kind: 'StageVersion',
        metadata: {
          name: joinName(name, revision),
          namespace: ns,
          labels: { [LABEL_STAGE_NAME]: name, [LABEL_VECTOR]: vectorLabelValue(vector) },
          finalizers: [FINALIZER_IN_USE],
          ownerReferences: [ownerRef(stage)],
        },
        spec: { stage: name, vector, revision },
      });
      await this.writeStageStatus(stage, { latestRevision: revision });
      return true;
    }

    // The target usage follows the newest StageVersion; the old target stays held by the active usage if it serves.
    let changed = await this.pointUsage(stage, targetUsageName(name), 'target', `target vector of Stage ${name}`, target.metadata.name, usages);
    const activeName = usages.find((u) => u.metadata.name === activeUsageName(name))?.spec?.stageVersionRef?.name;
    if (isReady(target) && activeName !== target.metadata.name) {
      const exists = activations.some((va) => va.spec?.stage === name && va.spec?.stageVersion === target.metadata.name);
      if (!exists) {
        this.log(`Stage ${ns}/${name}: StageVersion ${target.metadata.name} is Ready, creating its VectorActivation`);
        await this.objects.create({
          apiVersion: API_VERSION,
          kind: 'VectorActivation',
          metadata: { name: joinName('activate', target.metadata.name), namespace: ns, ownerReferences: [ownerRef(stage)] },
          spec: { stage: name, stageVersion: target.metadata.name, vector },
        });
        changed = true;
      }
    }
    const ready = activeName === target.metadata.name;
    changed =
      (await this.writeStageStatus(stage, {
        latestRevision,
        targetStageVersion: target.metadata.name,
        ...(activeName ? { activeStageVersion: activeName } : {}),
        phase: ready ? 'Ready' : 'Progressing',
        condition: {
          type: 'Ready',
          status: ready ? 'True' : 'False',
          reason: ready ? 'TargetActive' : isReady(target) ? 'Activating' : 'WaitingForStageVersion',
          message: ready
            ? `StageVersion ${target.metadata.name} serves the traffic`
            : isReady(target)
              ? `switching traffic to ${target.metadata.name}${activeName ? ` from ${activeName}` : ''}`
              : `waiting for StageVersion ${target.metadata.name} to become Ready`,
        },
      })) || changed;
    return changed;
  }

  private async pointUsage(stage: CustomObject, name: string, usage: string, reason: string, sv: string, usages: CustomObject[]): Promise<boolean> {
    const existing = usages.find((u) => u.metadata.name === name);
    const spec = { reason, stageVersionRef: { name: sv } };
    if (!existing) {
      await this.objects.create({
        apiVersion: API_VERSION,
        kind: 'StageVersionUsage',
        metadata: {
          name,
          namespace: stage.metadata.namespace!,
          labels: { [LABEL_USAGE]: usage, [LABEL_STAGE_NAME]: stage.metadata.name },
          ownerReferences: [ownerRef(stage)],
        },
        spec,
      });
      return true;
    }
    if (existing.spec?.stageVersionRef?.name === sv) return false;
    await this.objects.mergeSpec('StageVersionUsage', stage.metadata.namespace!, name, { ...spec, stageVersionSelector: null });
    return true;
  }

  private async writeStageStatus(
    stage: CustomObject,
    s: { latestRevision: number; targetStageVersion?: string; activeStageVersion?: string; phase?: string; condition?: Omit<Condition, 'lastTransitionTime'> },
  ): Promise<boolean> {
    const { condition, ...fields } = s;
    const conditions = condition ? setCondition(stage.status?.conditions, condition, stage.metadata.generation) : stage.status?.conditions;
    const next = { ...stage.status, ...fields, observedGeneration: stage.metadata.generation, ...(conditions ? { conditions } : {}) };
    if (isDeepStrictEqual(next, stage.status)) return false;
    await this.objects.patchStatus('Stage', stage.metadata.namespace!, stage.metadata.name, next);
    return false; // status alone never needs another pass
  }

  private async reconcileUsage(usage: CustomObject, svs: CustomObject[]): Promise<boolean> {
    if (usage.metadata.deletionTimestamp) return false;
    const resolved = resolve(usage, svs);
    const found = resolved.length > 0;
    const notReady = resolved.filter((sv) => !isReady(sv));
    const generation = usage.metadata.generation;
    let conditions: Condition[] = (usage.status?.conditions ?? []).filter((c: Condition) => c.type !== 'StageVersionNotFound' || !found);
    if (!found) {
      const what = usage.spec.stageVersionRef ? `StageVersion ${usage.spec.stageVersionRef.name}` : 'no StageVersion matches the selector';
      conditions = setCondition(conditions, { type: 'StageVersionNotFound', status: 'True', reason: 'StageVersionNotFound', message: `${what} not found` }, generation);
    }
    conditions = setCondition(
      conditions,
      !found
        ? { type: 'StageVersionReady', status: 'False', reason: 'StageVersionNotFound', message: 'no StageVersion to be ready' }
        : notReady.length > 0
          ? { type: 'StageVersionReady', status: 'False', reason: 'StageVersionNotReady', message: `not Ready: ${notReady.map((sv) => sv.metadata.name).join(', ')}` }
          : { type: 'StageVersionReady', status: 'True', reason: 'StageVersionReady', message: 'StageVersion is rolled out and ready for traffic' },
      generation,
    );
    const status = {
      phase: !found ? 'NotFound' : notReady.length > 0 ? 'NotReady' : 'Ready',
      stageVersions: resolved.map((sv) => sv.metadata.name),
      observedGeneration: generation,
      conditions,
    };
    if (isDeepStrictEqual(status, usage.status)) return false;
    await this.objects.patchStatus('StageVersionUsage', usage.metadata.namespace!, usage.metadata.name, status);
    return false;
  }
}
