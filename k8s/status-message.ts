/**
 * The apiserver's own message in the body of a failed call (a metav1.Status), or `HTTP <code>`.
 * No import of @kubernetes/client-node: the CLI uses it before that (slow to load) library is.
 */
export function statusMessage(body: unknown, code: number): string {
  const parsed = typeof body === 'string' ? safeJson(body) : body;
  return (parsed as { message?: string } | undefined)?.message ?? `HTTP ${code}`;
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return { message: text };
  }
}
