/**
 * A short workflow that proves the whole path works: Temporal schedules it, the core worker runs it,
 * and its activity reads the Kubernetes API. `npm start` runs it so the UI has something to show.
 */
import { proxyActivities, setCurrentDetails } from '@temporalio/workflow';
import type { ControlPlaneActivities, ControlPlaneReport } from '../activities/control-plane.js';

const { inspectControlPlane } = proxyActivities<ControlPlaneActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 5 },
  summary: 'read the Kubernetes version and the served konfidence kinds',
});

export async function controlPlaneCheck(): Promise<ControlPlaneReport> {
  const report = await inspectControlPlane();
  setCurrentDetails(
    `Kubernetes ${report.kubernetesVersion}; serving ${report.servedKinds.length} konfidence kinds` +
      (report.missingKinds.length ? `; missing: ${report.missingKinds.join(', ')}` : ''),
  );
  return report;
}
