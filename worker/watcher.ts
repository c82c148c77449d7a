/**
 * The watcher: an informer on VectorActivations that starts exactly one activation workflow per
 * object (workflow id from namespace, name and uid; Temporal refuses a second) and relays the
 * konfidence.cloud/cancel and konfidence.cloud/retry annotations as signals. Level-triggered: a
 * resync or a restart simply ensures again. A broken watch (410 Gone, apiserver restart) re-lists.
 */
import { WorkflowExecutionAlreadyStartedError, type Client } from '@temporalio/client';
import { GROUP, VERSION } from '../api/group.js';
import { k8s } from '../k8s/client.js';
import {
  activationWorkflowId,
  ANNOTATION_CANCEL,
  ANNOTATION_RETRY,
  cancelSignal,
  retrySignal,
  type ActivationRef,
} from '../shared/activation.js';
import { vectorActivation } from '../workflows/activation.js';

export interface WatcherOptions {
  kubeConfig: k8s.KubeConfig;
  client: Client;
  taskQueue: string;
  /** Namespaces to watch; default all. */
  namespaces?: string[];
  uiUrl?: string;
  queueSuffix?: string;
  log?: (message: string) => void;
}

const RESTART_DELAY_MS = 1_000;

type Watched = k8s.KubernetesObject & { spec?: { stage?: string; stageVersion?: string } };

export class ActivationWatcher {
  private readonly informers: k8s.Informer<Watched>[] = [];
  private readonly ensured = new Set<string>();
  private readonly relayed = new Map<string, string>();
  private stopped = false;
  private readonly log: (message: string) => void;

  constructor(private readonly o: WatcherOptions) {
    this.log = o.log ?? ((m) => console.log(`[watcher] ${m}`));
  }

  async start(): Promise<void> {
    const api = this.o.kubeConfig.makeApiClient(k8s.CustomObjectsApi);
    const scopes = this.o.namespaces ?? [undefined];
    for (const namespace of scopes) {
      const path = namespace
        ? `/apis/${GROUP}/${VERSION}/namespaces/${namespace}/vectoractivations`
        : `/apis/${GROUP}/${VERSION}/vectoractivations`;
      const list = () =>
        (namespace
          ? api.listNamespacedCustomObject({ group: GROUP, version: VERSION, namespace, plural: 'vectoractivations' })
          : api.listCustomObjectForAllNamespaces({ group: GROUP, version: VERSION, plural: 'vectoractivations' })) as Promise<
          k8s.KubernetesListObject<Watched>
        >;
      const informer = k8s.makeInformer<Watched>(this.o.kubeConfig, path, list);
      informer.on('add', (o) => void this.reconcile(o));
      informer.on('update', (o) => void this.reconcile(o));
      informer.on('delete', (o) => void this.deleted(o));
      informer.on('error', (err) => {
        if (this.stopped) return;
        this.log(`watch of ${path} broke (${(err as Error)?.message ?? err}); re-listing`);
        setTimeout(() => !this.stopped && void informer.start().catch(() => undefined), RESTART_DELAY_MS);
      });
      this.informers.push(informer);
      await informer.start();
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all(this.informers.map((i) => i.stop()));
  }

  private ref(o: Watched): ActivationRef {
    return { namespace: o.metadata!.namespace!, name: o.metadata!.name!, uid: o.metadata!.uid! };
  }

  /** Ensures the workflow exists and relays annotations; safe to call any number of times. */
  private async reconcile(o: Watched): Promise<void> {
    if (o.metadata?.deletionTimestamp) return;
    const ref = this.ref(o);
    const workflowId = activationWorkflowId(ref);
    try {
      if (!this.ensured.has(workflowId)) {
        await this.o.client.workflow.start(vectorActivation, {
          workflowId,
          taskQueue: this.o.taskQueue,
          args: [ref, { ...(this.o.uiUrl ? { uiUrl: this.o.uiUrl } : {}), ...(this.o.queueSuffix ? { queueSuffix: this.o.queueSuffix } : {}) }],
          // A repeated event, a resync or a restarted watcher finds the running workflow.
          workflowIdConflictPolicy: 'USE_EXISTING',
          workflowIdReusePolicy: 'REJECT_DUPLICATE',
          staticSummary: `Activate ${o.spec?.stageVersion} on Stage ${ref.namespace}/${o.spec?.stage}`,
          staticDetails: `VectorActivation ${ref.namespace}/${ref.name} (uid ${ref.uid})`,
        });
        this.ensured.add(workflowId);
      }
      await this.relay(o, workflowId, ANNOTATION_CANCEL, (token) =>
        this.o.client.workflow.getHandle(workflowId).signal(cancelSignal, { token, reason: `annotation ${ANNOTATION_CANCEL}` }),
      );
      await this.relay(o, workflowId, ANNOTATION_RETRY, (token) =>
        this.o.client.workflow.getHandle(workflowId).signal(retrySignal, { token, reason: `annotation ${ANNOTATION_RETRY}` }),
      );
    } catch (err) {
      if (err instanceof WorkflowExecutionAlreadyStartedError) {
        this.ensured.add(workflowId); // it ran and finished: never start it again
        return;
      }
      this.log(`VectorActivation ${ref.namespace}/${ref.name}: ${(err as Error).message}`);
    }
  }

  /** Sends the annotation's value once per value; the workflow also ignores tokens it has seen. */
  private async relay(o: Watched, workflowId: string, annotation: string, send: (token: string) => Promise<void>) {
    const value = o.metadata?.annotations?.[annotation];
    if (value === undefined) return;
    const key = `${workflowId}#${annotation}`;
    if (this.relayed.get(key) === value) return;
    const token = `${annotation}=${value}`;
    try {
      await send(token);
    } catch (err) {
      if ((err as Error).name !== 'WorkflowNotFoundError') throw err;
    }
    this.relayed.set(key, value);
  }

  private async deleted(o: Watched): Promise<void> {
    const workflowId = activationWorkflowId(this.ref(o));
    await this.o.client.workflow
      .getHandle(workflowId)
      .signal(cancelSignal, { token: 'deleted', reason: 'the VectorActivation was deleted' })
      .catch(() => undefined);
  }
}
