/**
 * The core worker's workflow bundle: the workflows' code as the SDK's sandbox runs it, made by the
 * SDK's webpack bundler. A core worker makes it at start from the workflows' sources (seconds of
 * CPU, and webpack in its memory) unless KONFIDENCE_WORKFLOW_BUNDLE names one made before, as
 * Temporal advises for production: `npm run build` writes dist/workflow-bundle.js and the image
 * names it; a test run makes one and its processes share it.
 *
 * `node dist/worker/workflow-bundle.js OUT` (or `tsx worker/workflow-bundle.ts OUT`) writes one.
 */
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { bundleWorkflowCode, type WorkflowBundleWithSourceMap } from '@temporalio/worker';
import { sharedModules, workflowsPath } from './workflows-path.js';

/** The bundler's own records are progress noise; only its errors are said. */
const quiet = {
  log: () => undefined,
  trace: () => undefined,
  debug: () => undefined,
  info: () => undefined,
  warn: () => undefined,
  error: console.error,
};

/** The bundle of the workflows at `entry` (default the project's), in memory. */
export function bundleWorkflows(entry = workflowsPath): Promise<WorkflowBundleWithSourceMap> {
  return bundleWorkflowCode({ workflowsPath: entry, logger: quiet as never, preloadModules: sharedModules });
}

/** Bundles the workflows and writes the bundle to `path` whole: a reader never finds half of it. */
export async function writeWorkflowBundle(path: string): Promise<void> {
  const { code } = await bundleWorkflows();
  mkdirSync(dirname(path), { recursive: true });
  const partial = `${path}.${process.pid}.partial`;
  writeFileSync(partial, code);
  renameSync(partial, path);
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const out = process.argv[2];
  if (!out) {
    console.error('usage: workflow-bundle OUT (the file to write the workflow bundle to)');
    process.exit(2);
  }
  await writeWorkflowBundle(resolve(out));
}
