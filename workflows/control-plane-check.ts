/**
 * A short workflow that proves the whole path works: Temporal schedules it, the core worker runs it,
 * and its activity reads the Kubernetes API. `npm start` runs it so the UI has something to show.
 */
import { proxyActivities, setCurrentDetails } from '@temporalio/workflow';
import type { ControlPlaneActivities, ControlPlaneReport } from '../activities/control-plane.js';
import { CONTROL_PLANE_CHECK } from './policies.js';

const { inspectControlPlane } = proxyActivities<ControlPlaneActivities>(CONTROL_PLANE_CHECK);

export async function controlPlaneCheck(): Promise<ControlPlaneReport> {
  const report = await inspectControlPlane();
  setCurrentDetails(
    `Kubernetes ${report.kubernetesVersion}; serving ${report.servedKinds.length} konfidence kinds` +
      (report.missingKinds.length ? `; missing: ${report.missingKinds.join(', ')}` : ''),
  );
  return report;
}
