/**
 * One invocation, from argv to exit code: parse, help, build the context, run the command, and turn
 * any failure into its message on stderr and its exit code (docs/cli.md).
 */
import { checkPositionals, parseCommandLine } from './args.js';
import { commands } from './commands/index.js';
import type { Io } from './context.js';
import { describeError, exitCodeOf, EXIT, type ExitCode } from './exit-codes.js';
import { commandHelp, rootHelp } from './help.js';

export async function run(argv: string[], io: Io, program: string): Promise<ExitCode> {
  let server: string | undefined;
  try {
    const parsed = parseCommandLine(argv, commands);
    const helpFor =
      parsed.command === 'help' ? parsed.positionals[0] : parsed.options.help ? parsed.command : undefined;
    if (parsed.command === undefined || parsed.command === 'help' || parsed.options.help) {
      if (helpFor === undefined) {
        // No command at all is a usage error: the help goes to stderr, exit 2.
        const asked = parsed.command === 'help' || Boolean(parsed.options.help);
        (asked ? io.out : io.err)(rootHelp(commands, program));
        return asked ? EXIT.ok : EXIT.usage;
      }
      const spec = commands.find((c) => c.name === helpFor);
      if (!spec) {
        io.err(`error: unknown command "${helpFor}"; commands: ${commands.map((c) => c.name).join(', ')}`);
        return EXIT.usage;
      }
      io.out(commandHelp(spec, program));
      return EXIT.ok;
    }
    const command = commands.find((c) => c.name === parsed.command)!;
    checkPositionals(command, parsed.positionals);
    const args = { positionals: parsed.positionals, options: parsed.options };
    await command.validate?.(args);
    // Loaded only now: the Kubernetes client takes seconds to load, help and usage errors need none of it.
    const { Context, loadKube, settingsFrom } = await import('./context.js');
    const kc = loadKube(parsed.options);
    server = kc.getCurrentCluster()?.server;
    const contextNamespace = kc.getContextObject(kc.getCurrentContext())?.namespace;
    const ctx = new Context(kc, settingsFrom(parsed.options, process.env, contextNamespace, program), io);
    return await command.run(ctx, args);
  } catch (err) {
    io.err(`error: ${describeError(err, server)}`);
    return exitCodeOf(err);
  }
}
