/**
 * konfidence_landscape_pollers: the executor workers polling each Landscape's task queue of each
 * executor type the registrations use, as Temporal's DescribeTaskQueue tells it at scrape time. A
 * landscape whose workers stopped polling shows 0 before its next task waits and fails (NotTakenUp,
 * docs/landscapes.md). The core reports it: it has the Landscapes and registrations as watched.
 */
import { Gauge } from 'prom-client';
import type { Client } from '@temporalio/client';
import { landscapeQueues, recentPollers, type LandscapeQueue } from '../decisions/landscape.js';
import type { SystemConfig } from '../k8s/system-config.js';
import { executorTaskQueue } from '../shared/task-queues.js';
import { registry } from './metrics.js';

type PollerCount = LandscapeQueue & { pollers: number };

const sources = new Set<() => Promise<PollerCount[]>>();

new Gauge({
  name: 'konfidence_landscape_pollers',
  help: "Executor workers that polled a Landscape's task queue of an executor type within the last minute (0: that landscape's tasks of the type wait, then fail NotTakenUp).",
  labelNames: ['landscape', 'type'] as const,
  registers: [registry],
  async collect() {
    const counts = await Promise.all([...sources].map((source) => source().catch(() => [])));
    this.reset();
    for (const { landscape, type, pollers } of counts.flat()) this.set({ landscape, type }, pollers);
  },
});

const ACTIVITY_QUEUE = 2; // temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY

/** Reports this core's landscapes' pollers until the returned function is called. */
export function reportLandscapePollers(o: {
  client: Client;
  namespace: string;
  systemConfig: SystemConfig;
  queueSuffix?: string;
}): () => void {
  const source = async (): Promise<PollerCount[]> => {
    const landscapes = (o.systemConfig.list('Landscape') ?? []).map((l) => ({ name: l.metadata.name }));
    const registrations = (o.systemConfig.list('ActivationTaskRegistration') ?? []).map((r) => ({
      executor: r.spec?.executor ?? 'Worker',
      type: String(r.spec?.type ?? ''),
    }));
    const now = Date.now();
    return Promise.all(
      landscapeQueues(landscapes, registrations).map(async (queue) => {
        const { pollers } = await o.client.workflowService.describeTaskQueue({
          namespace: o.namespace,
          taskQueue: { name: executorTaskQueue(queue.type, queue.landscape) + (o.queueSuffix ?? '') },
          taskQueueType: ACTIVITY_QUEUE,
        });
        const lastPolls = (pollers ?? []).map((p) => Number(p.lastAccessTime?.seconds ?? 0) * 1000);
        return { ...queue, pollers: recentPollers(lastPolls, now) };
      }),
    );
  };
  sources.add(source);
  return () => sources.delete(source);
}
