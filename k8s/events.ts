/**
 * Kubernetes Events (events.k8s.io/v1) on the objects the system acts on, so `kubectl describe`
 * tells what happened. Best effort: an Event that cannot be written is logged, never fatal.
 */
import { randomBytes } from 'node:crypto';
import { kubeTime } from '../shared/format.js';
import { joinName } from '../shared/names.js';
import { apiMessage, k8s } from './client.js';

export interface Regarding {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
  uid?: string;
}

export const REPORTING_CONTROLLER = 'konfidence.cloud/activation';

export function eventRecorder(kc: k8s.KubeConfig, log: (message: string) => void = (m) => console.warn(m)) {
  const api = kc.makeApiClient(k8s.EventsV1Api);
  const instance = process.env.HOSTNAME ?? 'local';
  return async function record(regarding: Regarding, type: 'Normal' | 'Warning', reason: string, note: string, action = reason): Promise<void> {
    const now = new k8s.V1MicroTime();
    try {
      await api.createNamespacedEvent({
        namespace: regarding.namespace,
        body: {
          metadata: { name: joinName(regarding.name, randomBytes(5).toString('hex')), namespace: regarding.namespace },
          eventTime: now,
          reportingController: REPORTING_CONTROLLER,
          reportingInstance: instance.slice(0, 128),
          action,
          reason,
          type,
          note: note.slice(0, 1000),
          regarding: { ...regarding },
        },
      });
    } catch (err) {
      log(`event ${reason} on ${regarding.kind} ${regarding.namespace}/${regarding.name} not written at ${kubeTime()}: ${apiMessage(err)}`);
    }
  };
}
export type EventRecorder = ReturnType<typeof eventRecorder>;
