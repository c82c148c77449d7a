/**
 * The unit tests' workflow bundle, made once for all test files and kept between runs: bundling
 * takes seconds of CPU, and every workflow test file needs the same bundle. It is kept under
 * .cache/unit-bundle/ by a hash of every source it could contain (the TypeScript outside test/,
 * bench/ and scripts/, plus test/unit/support/, and the SDK's version), so an edit to a workflow
 * makes a new one and an edit to a test does not. The first file to need it makes it; the others,
 * running beside it, wait for its file.
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, extname, join, relative } from 'node:path';
import type { WorkflowBundle } from '@temporalio/worker';
import { repoRoot } from '../../../scripts/env/paths.js';
import { pollUntil } from '../../../scripts/env/process.js';
import { bundleWorkflows } from '../../../worker/workflow-bundle.js';
import { workflowsPath } from '../../../worker/workflows-path.js';

const cacheDir = join(repoRoot, '.cache', 'unit-bundle');
/** Folders whose sources never reach the workflow sandbox. */
const SKIPPED = new Set(['node_modules', '.cache', '.git', 'dist', 'bench', 'scripts', 'docs', 'deploy']);
/** A maker that died leaves its lock behind: after this long another takes over. */
const STALE_LOCK_MS = 120_000;

/** Whether a folder (relative to the repository) can hold sources of the bundle. */
function reachable(folder: string): boolean {
  if (!folder.startsWith('test')) return !SKIPPED.has(folder.split('/')[0]!);
  return folder === 'test/unit/support';
}

function sources(dir: string, into: string[]): string[] {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      const folder = relative(repoRoot, path);
      // test/ and test/unit/ are walked for their support folder only.
      if (reachable(folder) || folder === 'test' || folder === 'test/unit') sources(path, into);
    } else if (entry.name.endsWith('.ts') && reachable(relative(repoRoot, dir))) into.push(path);
  }
  return into;
}

/** The hash that names the bundle of `entry`: its sources' paths and contents, and the SDK's version. */
export function bundleKey(entry: string): string {
  const hash = createHash('sha256').update(entry);
  const sdk = JSON.parse(
    readFileSync(join(repoRoot, 'node_modules', '@temporalio', 'workflow', 'package.json'), 'utf8'),
  );
  hash.update(String(sdk.version));
  for (const path of sources(repoRoot, []).sort()) hash.update(relative(repoRoot, path)).update(readFileSync(path));
  return hash.digest('hex').slice(0, 16);
}

/** The bundle of `entry` (default the project's workflows), from the cache or made (and cached) now. */
export async function cachedBundle(entry = workflowsPath): Promise<WorkflowBundle> {
  // One bundle per entry: the tests' (test/unit/support/workflows.ts) and the project's own.
  const prefix = `${basename(dirname(entry))}-${basename(entry, extname(entry))}-`;
  const key = prefix + bundleKey(entry);
  const file = join(cacheDir, `${key}.js`);
  const lock = join(cacheDir, `${key}.lock`);
  mkdirSync(cacheDir, { recursive: true });
  if (existsSync(file)) return { code: readFileSync(file, 'utf8') };
  if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > STALE_LOCK_MS)
    rmSync(lock, { recursive: true, force: true });
  let maker = false;
  try {
    mkdirSync(lock);
    maker = true;
  } catch {
    // another test file makes it
  }
  if (!maker) {
    await pollUntil(() => existsSync(file) || undefined, STALE_LOCK_MS, `the workflow bundle ${file}`, 100);
    return { code: readFileSync(file, 'utf8') };
  }
  try {
    const { code } = await bundleWorkflows(entry);
    const partial = `${file}.${process.pid}.partial`;
    writeFileSync(partial, code);
    renameSync(partial, file);
    // This entry's bundles of older sources are of no further use.
    for (const name of readdirSync(cacheDir))
      if (name.startsWith(prefix) && name.endsWith('.js') && name !== `${key}.js`)
        rmSync(join(cacheDir, name), { force: true });
    return { code };
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}
