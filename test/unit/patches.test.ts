/** The registry of patched() ids (workflows/patches.ts) names exactly the ids the workflow code uses. No servers. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PATCHES } from '../../workflows/patches.js';

/** The folders of workflow code, with their subfolders: the activation's, and the Stage lock's (its client runs in the activation). */
const dirs = ['workflows', 'stage-lock'];
const lockWorkflow = new Set(['stage-lock/workflow.ts', 'stage-lock/rules.ts']);

it('lists every patched() id of the workflows, and no other, each under the workflow that uses it', () => {
  const used = new Map<string, string>();
  for (const dir of dirs) {
    const files = readdirSync(join(process.cwd(), dir), { recursive: true, encoding: 'utf8' }).filter((f) =>
      f.endsWith('.ts'),
    );
    for (const file of files) {
      for (const [, id] of readFileSync(join(process.cwd(), dir, file), 'utf8').matchAll(/patched\('([^']+)'\)/g))
        used.set(id!, `${dir}/${file}`);
    }
  }
  expect([...used.keys()].sort()).toEqual(Object.keys(PATCHES).sort());
  for (const [id, file] of used)
    expect({ id, workflow: lockWorkflow.has(file) ? 'stage-lock' : 'activation' }).toEqual({
      id,
      workflow: PATCHES[id]!.workflow,
    });
});
