/** The registry of patched() ids (workflows/patches.ts) names exactly the ids the workflow code uses. No servers. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PATCHES } from '../../workflows/patches.js';

const dir = join(process.cwd(), 'workflows');

it('lists every patched() id of the workflows, and no other, each under the workflow that uses it', () => {
  const used = new Map<string, string>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.ts'))) {
    for (const [, id] of readFileSync(join(dir, file), 'utf8').matchAll(/patched\('([^']+)'\)/g)) used.set(id!, file);
  }
  expect([...used.keys()].sort()).toEqual(Object.keys(PATCHES).sort());
  for (const [id, file] of used) expect({ id, workflow: file === 'stage-lock.ts' ? 'stage-lock' : 'activation' }).toEqual({ id, workflow: PATCHES[id]!.workflow });
});
