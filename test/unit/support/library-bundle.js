/**
 * An installed library as one module file, for the unit project's module map. jest gives every test
 * file a module registry of its own, so a library of many modules is linked and evaluated again in
 * each file that imports it: `@kubernetes/client-node` is 967 modules, about 0.6 s of CPU a file, in
 * the 18 unit files that reach it. Bundled into one file (whitespace and syntax minified, names
 * kept for stack traces), it costs about 0.1 s: the unit project took 7 CPU seconds less. The code is the installed version's own; the file is
 * kept in node_modules/.cache/ by the library's and esbuild's versions, so an `npm ci` makes it anew.
 */
import { buildSync } from 'esbuild';
import { existsSync, mkdirSync, readFileSync, renameSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const require = createRequire(join(root, 'package.json'));

const versionOf = (name) => JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;

/** The path of `name`'s bundle, made when this install has none yet. */
export function bundledLibrary(name) {
  const key = `${name.replace(/[@/]/g, '_')}-${versionOf(name)}-esbuild-${versionOf('esbuild')}.mjs`;
  const file = join(root, 'node_modules', '.cache', 'konfidence-unit', key);
  if (existsSync(file)) return file;
  mkdirSync(dirname(file), { recursive: true });
  // Two runs may make it side by side: each writes a file of its own and renames it in place whole.
  const partial = `${file}.${process.pid}`;
  buildSync({
    entryPoints: [require.resolve(name)],
    bundle: true,
    platform: 'node',
    format: 'esm',
    minifyWhitespace: true,
    minifySyntax: true,
    // The CommonJS modules it bundles call require() for Node's own modules.
    banner: {
      js: "import { createRequire as __bundleRequire } from 'node:module'; const require = __bundleRequire(import.meta.url);",
    },
    outfile: partial,
    logLevel: 'error',
  });
  renameSync(partial, file);
  return file;
}
