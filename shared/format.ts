/** Formats several places must agree on. Pure: workflow code uses it too. */

/** metav1.Time as the apiserver writes it: RFC 3339, seconds, UTC. */
export function kubeTime(date: Date = new Date()): string {
  return date.toISOString().replace(/\.\d+Z$/, 'Z');
}

/** Link to a workflow in the Temporal UI. */
export function temporalWorkflowUrl(uiUrl: string, namespace: string, workflowId: string): string {
  return `${uiUrl.replace(/\/$/, '')}/namespaces/${encodeURIComponent(namespace)}/workflows/${encodeURIComponent(workflowId)}`;
}
