/**
 * What the workflow bundle holds. Under the reusable V8 context every workflow run evaluates its own
 * copy of each module it imports: a run that loaded zod built the api/ schemas again, about a tenth
 * of the core worker's CPU per activation at full load (bench:throughput, profiled). Workflow code
 * imports api/ for types only, and constants and functions from zod-free modules.
 */
import { cachedBundle } from './support/bundle-cache.js';

it('the workflows load no zod at run time, and of api/ only its zod-free modules', async () => {
  // The project's own bundle, as worker/workflow-bundle.ts makes it (kept between runs while no source changes).
  const { code } = await cachedBundle();
  const modules = new Set([...code.matchAll(/"\.\/((?:node_modules\/)?[^"]+\.[cm]?[jt]s)"/g)].map((m) => m[1]!));
  expect([...modules].filter((m) => m.startsWith('workflows/')).length).toBeGreaterThan(0);
  expect([...modules].filter((m) => m.startsWith('node_modules/zod/'))).toEqual([]);
  // api/ at run time: only its zod-free constants, and the conditions' bookkeeping (a status write's conditions).
  expect([...modules].filter((m) => m.startsWith('api/')).sort()).toEqual([
    'api/circuit-breaker-limits.ts',
    'api/conditions.ts',
    'api/progression-defaults.ts',
  ]);
});
