/**
 * konfidence: the CLI (also the kubectl plugin `kubectl konfidence`). Launched by
 * bin/konfidence.mjs; `npx tsx cli/main.ts ...` works too. See docs/cli.md.
 */
import type { Io } from './context.js';
import { programName } from './program.js';
import { run } from './run.js';

const io: Io = {
  out: (text) => void process.stdout.write(`${text}\n`),
  err: (text) => void process.stderr.write(`${text}\n`),
};
const code = await run(process.argv.slice(2), io, programName(process.argv[1]));
// Output first, then exit: open sockets (Temporal, keep-alive) must not keep the process running.
process.stdout.write('', () => process.exit(code));
