/**
 * The Kubernetes namespaces this test file created or removed: after the file, its jest
 * environment (test/support/environment.js) terminates the Temporal workflows still Running for
 * them on the shared server.
 */
const OWNED = '__konfidenceTestNamespaces';

export function own(...namespaces: string[]): void {
  const g = globalThis as unknown as Record<string, string[] | undefined>;
  (g[OWNED] ??= []).push(...namespaces);
}
