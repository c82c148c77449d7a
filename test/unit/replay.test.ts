/**
 * An upgrade keeps the activations that run: histories recorded by the build before issue 11's
 * changes (the lock asked through a task queue, the phase search attribute upserted on every
 * report) replay on today's workflow code without a nondeterminism error. Every change to the
 * commands a workflow issues is behind patched(); this is the test that it is. Recorded from
 * commit e587af8 on the local servers: a two-step activation that succeeded after waiting, one
 * superseded while waiting, the Stage lock that served them, and a lock that got a burst of ten
 * requests in one workflow task. Also one activation recorded from commit 4d3d12c with
 * scripts/record-history.ts: it waited behind another, then took the Lease and read the Stage in
 * two local activities where today's code takes one (takeStage). And a Stage lock recorded from
 * commit 1785a3b, a build without the expectLock signal, that got one while the Stage was held and
 * granted an older request right after the release (today's lock would have held it back). And,
from commit 0f1174b, a handoff on the Stage's lock released by Update: the activation that released
and told the next one, the next one, and the lock run that served both. And, from commit ffc3107, a lock that waits for its next timer
before it finishes after a release by Update, serving the next activations meanwhile (recorded while
it still ran). And, from commit 53a3fbf, a two-step activation whose first step's execution record was
written beside its second step. And a lock that lingered idle (`idle-linger`) between two
activations two seconds apart, served both in one run and finished at its linger's end. Stored as the History message's
 * protobufjs object form (`History.toObject`, longs, enums and bytes as strings), which
 * `fromObject` reads back byte for byte.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import proto from '@temporalio/proto';
import { Worker } from '@temporalio/worker';
import { testWorkflowBundle } from './support/temporal.js';

const dir = fileURLToPath(new URL('../fixtures/histories/', import.meta.url));
const files = readdirSync(dir).filter((f) => f.endsWith('.json'));

it('has the recorded histories', () => {
  expect(files.sort()).toEqual([
    'activation-handed-on-0f1174b.json',
    'activation-record-beside-53a3fbf.json',
    'activation-succeeded.json',
    'activation-superseded.json',
    'activation-told-0f1174b.json',
    'activation-waited-4d3d12c.json',
    'stage-lock-burst.json',
    'stage-lock-expect-ignored-1785a3b.json',
    'stage-lock-finish-after-release-ffc3107.json',
    'stage-lock-idle-linger.json',
    'stage-lock-release-update-0f1174b.json',
    'stage-lock.json',
  ]);
});

it.each(files)('%s replays on the current workflow code', async (file) => {
  const history = proto.temporal.api.history.v1.History.fromObject(JSON.parse(readFileSync(join(dir, file), 'utf8')));
  await expect(Worker.runReplayHistory({ workflowBundle: await testWorkflowBundle() }, history)).resolves.toBeUndefined();
});
