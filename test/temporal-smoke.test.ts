/** A workflow with an activity runs on the real Temporal dev server and reads the real apiserver. */
import { randomUUID } from 'node:crypto';
import { allKinds } from '../api/index.js';
import { searchAttributes } from '../shared/search-attributes.js';
import { controlPlaneCheck } from '../workflows/index.js';
import { createCoreWorker } from '../worker/core-worker.js';
import { kubeConfig } from './support/cluster.js';
import { temporalClient, temporalNamespace, workerConnection } from './support/temporal.js';

describe('Temporal', () => {
  it('runs the control-plane check workflow on the core worker against the real apiserver', async () => {
    const connection = await workerConnection();
    const taskQueue = `smoke-${randomUUID()}`;
    const { client, close } = await temporalClient();
    const worker = await createCoreWorker({
      connection,
      namespace: temporalNamespace(),
      kubeConfig: kubeConfig(),
      taskQueue,
      client,
    });
    try {
      const report = await worker.runUntil(
        client.workflow.execute(controlPlaneCheck, { taskQueue, workflowId: `control-plane-check-${randomUUID()}` }),
      );
      expect(report.kubernetesVersion).toMatch(/^v1\.34\./);
      expect(report.servedKinds.sort()).toEqual(allKinds.map((k) => k.kind).sort());
      expect(report.missingKinds).toEqual([]);
    } finally {
      await close();
      await connection.close();
    }
  });

  it('has the search attributes the UI filters activations by', async () => {
    const { client, close } = await temporalClient();
    try {
      const { customAttributes } = await client.connection.operatorService.listSearchAttributes({
        namespace: temporalNamespace(),
      });
      expect(Object.keys(customAttributes ?? {})).toEqual(expect.arrayContaining(searchAttributes.map((a) => a.name)));
    } finally {
      await close();
    }
  });
});
