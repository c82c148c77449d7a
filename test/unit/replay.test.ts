/**
 * An upgrade keeps the activations that run: histories recorded on the release's build replay on
 * today's workflow code without a nondeterminism error, so every change to the commands a workflow
 * issues must sit behind patched() (workflows/patches.ts). Recorded on the local servers with
 * scripts/record-history.ts from the integration tests' runs: a two-step activation that succeeded;
 * one that failed, was retried from the truth after another activation and succeeded; one cancelled
 * by signal and retried; one whose cancel Update was answered; one reverted from its records under
 * onFailure Revert and one left partly applied under Stop (both open, waiting for a retry); the
 * close-out run of a terminated workflow that put its routes back; a run that found its object
 * being deleted with no watcher and reverted; and a Stage lock that queued activations and granted
 * them in turn. Stored as the History message's
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
    'activation-cancel-answered.json',
    'activation-cancelled-retried.json',
    'activation-closed-out.json',
    'activation-deleted-unwatched.json',
    'activation-partly-applied.json',
    'activation-retried.json',
    'activation-reverted.json',
    'activation-two-steps.json',
    'stage-lock-queue.json',
  ]);
});

it.each(files)('%s replays on the current workflow code', async (file) => {
  const history = proto.temporal.api.history.v1.History.fromObject(JSON.parse(readFileSync(join(dir, file), 'utf8')));
  await expect(
    Worker.runReplayHistory({ workflowBundle: await testWorkflowBundle() }, history),
  ).resolves.toBeUndefined();
});
