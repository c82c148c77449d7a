/** A CLI command: its spec (what help shows and the parser accepts) and what it does. */
import type { CommandSpec } from './args.js';
import type { Context } from './context.js';
import type { ExitCode } from './exit-codes.js';

export interface Invocation {
  positionals: string[];
  options: Record<string, string | boolean>;
}

export interface Command extends CommandSpec {
  /** Usage checks that need no server (names, durations): a usage error before anything is loaded or called. */
  validate?(args: Invocation): Promise<void>;
  /** Resolves to the exit code; throws a CliError (or an apiserver error) for failures. */
  run(ctx: Context, args: Invocation): Promise<ExitCode>;
}

export const stringOption = (args: Invocation, name: string): string | undefined =>
  typeof args.options[name] === 'string' ? (args.options[name] as string) : undefined;
