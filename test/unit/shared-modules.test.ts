/**
 * The modules every workflow of a worker shares (worker/workflows-path.ts sharedModules): evaluated
 * once in the sandbox and frozen by the SDK, so a module there that kept state, or that imported
 * the SDK (whose modules hold each workflow's own state), would leak between workflows. Each one,
 * with everything it imports, is held to that here; and each is one the workflows import, so the
 * list adds nothing to the bundle.
 */
import { readFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { repoRoot } from '../../scripts/env/paths.js';
import { sharedModules } from '../../worker/workflows-path.js';

/** The module and every module it imports, relative imports followed (type-only imports are erased). */
function closure(path: string, into = new Map<string, string>()): Map<string, string> {
  if (into.has(path)) return into;
  const source = readFileSync(path, 'utf8');
  into.set(path, source);
  for (const [, kind, target] of source.matchAll(/^(?:import|export) (type )?[^;]*? from '([^']+)';/gms)) {
    if (kind || !target!.startsWith('.')) continue;
    closure(resolve(dirname(path), target!.replace(/\.js$/, '.ts')), into);
  }
  return into;
}

const name = (path: string) => relative(repoRoot, path);
const shared = sharedModules.map(name);

it.each(shared)('%s and what it imports keep no state and import nothing of the SDK', (module) => {
  for (const [path, source] of closure(resolve(repoRoot, `${module}`))) {
    const imports = [...source.matchAll(/^import (?!type )[^;]*? from '([^']+)';/gms)].map((m) => m[1]!);
    expect({ module: name(path), packages: imports.filter((i) => !i.startsWith('.')) }).toEqual({
      module: name(path),
      packages: [],
    });
    // Top-level `let`/`var`, or a top-level collection, is state a workflow could change for the others.
    expect({
      module: name(path),
      state: source.match(/^(export )?(let|var) |^(export )?const \w+ = new (Map|Set)/gm),
    }).toEqual({
      module: name(path),
      state: null,
    });
  }
});

it('shares only modules the workflows import', () => {
  const reached = [...closure(resolve(repoRoot, 'workflows/index.ts')).keys()].map(name);
  expect(shared.filter((module) => !reached.includes(module))).toEqual([]);
});
