/**
 * Writes crds/<plural>.yaml, the admission policy and crds/kustomization.yaml (the list deploy/
 * includes) from the zod schemas in api/. With --check it writes nothing and exits 1
 * when a committed file differs from what would be written.
 */
import { readFileSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { allKinds } from '../api/index.js';
import { renderCrds } from './crds.js';

const dir = join(import.meta.dirname, '..', 'crds');
const check = process.argv.includes('--check');
const stale: string[] = [];
mkdirSync(dir, { recursive: true });
for (const [file, text] of renderCrds(allKinds)) {
  const path = join(dir, file);
  const current = existsSync(path) ? readFileSync(path, 'utf8') : '';
  if (current === text) continue;
  if (check) stale.push(file);
  else {
    mkdirSync(dirname(path), { recursive: true });
    writeFileSync(path, text);
  }
}
if (stale.length > 0) {
  console.error(`crds/ is out of date with api/ (${stale.join(', ')}): run npm run crds:generate`);
  process.exit(1);
}
