/** How every refusal by a schema reads: one formatter, so that each says where and what alike. */
import type { z } from 'zod';

/** Each problem as "field.path: message", joined by "; "; `under` prefixes the paths (a spec parsed on its own). */
export function describeIssues(error: z.ZodError, under: readonly PropertyKey[] = []): string {
  return error.issues.map((i) => `${[...under, ...i.path].map(String).join('.')}: ${i.message}`).join('; ');
}
