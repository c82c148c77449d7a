/**
 * An installed library as one module file, for the unit project's module map. jest gives every test
 * file a module registry of its own, so a library of many modules is linked and evaluated again in
 * each file that imports it: `@kubernetes/client-node` is 967 modules, about 0.6 s of CPU a file, in
 * the 18 unit files that reach it. Bundled into one file (whitespace and syntax minified, names
 * kept for stack traces), it costs about 0.1 s: the unit project takes 7 CPU seconds less. The code
 * is the installed version's own; the file is kept in node_modules/.cache/ under a key of what it is
 * made of, so a changed lockfile, or an `npm ci`, makes it anew.
 */
import { buildSync } from 'esbuild';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
const require = createRequire(join(root, 'package.json'));

const versionOf = (name) => JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')).version;

/** The start of the names of `name`'s bundles. */
const prefixOf = (name) => `${name.replace(/[@/]/g, '_')}-`;

/**
 * What the bundle is made of: the library's version, and a hash of the lockfile (its dependencies'
 * versions) and of this file (how it is bundled).
 */
function keyOf(name) {
  const hash = createHash('sha256')
    .update(readFileSync(join(root, 'package-lock.json')))
    .update(readFileSync(fileURLToPath(import.meta.url)))
    .digest('hex')
    .slice(0, 12);
  return `${prefixOf(name)}${versionOf(name)}-${hash}.mjs`;
}

/** The path of `name`'s bundle, made when this install has none yet. */
export function bundledLibrary(name) {
  const key = keyOf(name);
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
  // Bundles of the library made for an install before this one are of no more use.
  for (const old of readdirSync(dirname(file))) {
    if (old.startsWith(prefixOf(name)) && old.endsWith('.mjs') && join(dirname(file), old) !== file) {
      rmSync(join(dirname(file), old), { force: true });
    }
  }
  return file;
}
