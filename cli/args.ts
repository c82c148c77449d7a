/**
 * The command line, parsed without a dependency: `konfidence [GLOBAL FLAGS] COMMAND [ARGS] [FLAGS]`.
 * Global flags go anywhere; a command's flags after the command. Anything unexpected is a usage
 * error (exit 2) that says what was expected. Pure: table-tested in test/unit/cli-args.test.ts.
 */
import { usageError } from './exit-codes.js';

export interface OptionSpec {
  name: string;
  short?: string;
  /** Placeholder of the value in help; absent: a boolean flag. */
  value?: string;
  choices?: readonly string[];
  description: string;
}

export interface PositionalSpec {
  name: string;
  required: boolean;
  description: string;
}

export interface CommandSpec {
  name: string;
  summary: string;
  description: string;
  positionals: PositionalSpec[];
  options: OptionSpec[];
  examples: string[];
}

export const globalOptions: OptionSpec[] = [
  {
    name: 'namespace',
    short: 'n',
    value: 'NAMESPACE',
    description: "Kubernetes namespace (default: the kubeconfig context's namespace, else default)",
  },
  {
    name: 'kubeconfig',
    value: 'PATH',
    description: 'kubeconfig file (default: $KUBECONFIG, else ~/.kube/config, else in-cluster)',
  },
  {
    name: 'output',
    short: 'o',
    value: 'FORMAT',
    choices: ['table', 'json'],
    description: 'output format: table (default) or json',
  },
  {
    name: 'temporal-address',
    value: 'HOST:PORT',
    description: 'Temporal frontend (default: $TEMPORAL_ADDRESS, else 127.0.0.1:7233)',
  },
  {
    name: 'temporal-namespace',
    value: 'NAMESPACE',
    description: 'Temporal namespace (default: $TEMPORAL_NAMESPACE, else default)',
  },
  { name: 'help', short: 'h', description: 'show help for the command' },
];

export interface ParsedCommandLine {
  /** Undefined when no command was given (root help). */
  command?: string;
  positionals: string[];
  options: Record<string, string | boolean>;
}

function find(specs: OptionSpec[], token: string): OptionSpec | undefined {
  return token.startsWith('--')
    ? specs.find((o) => o.name === token.slice(2))
    : specs.find((o) => o.short && `-${o.short}` === token);
}

/**
 * Splits argv into command, positionals and options. `--name=value`, `--name value`, `-n value`,
 * `--` (the rest is positional). Positional counts are checked by checkPositionals once --help
 * has been looked at, so that `konfidence activate --help` works without arguments.
 */
export function parseCommandLine(argv: string[], commands: CommandSpec[]): ParsedCommandLine {
  const positionals: string[] = [];
  const options: Record<string, string | boolean> = {};
  let command: CommandSpec | undefined;
  let commandName: string | undefined;
  let onlyPositionals = false;
  for (let i = 0; i < argv.length; i++) {
    const token = argv[i]!;
    if (!onlyPositionals && token === '--') {
      onlyPositionals = true;
      continue;
    }
    if (onlyPositionals || !token.startsWith('-') || token === '-') {
      if (commandName === undefined) {
        commandName = token;
        command = commands.find((c) => c.name === token);
        if (!command && token !== 'help')
          throw usageError(
            `unknown command "${token}"; commands: ${commands.map((c) => c.name).join(', ')} (konfidence --help)`,
          );
      } else positionals.push(token);
      continue;
    }
    const eq = token.startsWith('--') ? token.indexOf('=') : -1;
    const key = eq > 0 ? token.slice(0, eq) : token;
    const known = [...globalOptions, ...(command?.options ?? [])];
    const spec = find(known, key);
    if (!spec) {
      const elsewhere = commands.find((c) => find(c.options, key));
      if (!command && elsewhere)
        throw usageError(
          `flag ${key} belongs to "${elsewhere.name}": put it after the command (konfidence ${elsewhere.name} --help)`,
        );
      throw usageError(
        `unknown flag ${key}${command ? ` for "${command.name}" (konfidence ${command.name} --help)` : ' (konfidence --help)'}`,
      );
    }
    if (!spec.value) {
      if (eq > 0) throw usageError(`flag --${spec.name} takes no value`);
      options[spec.name] = true;
      continue;
    }
    let value: string | undefined;
    if (eq > 0) value = token.slice(eq + 1);
    else {
      value = argv[++i];
      if (value === undefined) throw usageError(`flag ${key} needs a value (${spec.value})`);
    }
    if (spec.choices && !spec.choices.includes(value))
      throw usageError(`flag ${key}: "${value}" is not one of ${spec.choices.join(', ')}`);
    if (value === '') throw usageError(`flag ${key} needs a non-empty value (${spec.value})`);
    options[spec.name] = value;
  }
  return { ...(commandName !== undefined ? { command: commandName } : {}), positionals, options };
}

/** Missing or extra arguments of a command are usage errors that show the synopsis. */
export function checkPositionals(spec: CommandSpec, positionals: string[]): void {
  const required = spec.positionals.filter((p) => p.required).length;
  if (positionals.length < required) {
    const missing = spec.positionals
      .slice(positionals.length)
      .filter((p) => p.required)
      .map((p) => p.name);
    throw usageError(`${spec.name}: missing ${missing.join(' and ')}; usage: ${synopsis(spec)}`);
  }
  if (positionals.length > spec.positionals.length) {
    throw usageError(
      `${spec.name}: unexpected argument "${positionals[spec.positionals.length]}"; usage: ${synopsis(spec)}`,
    );
  }
}

export function synopsis(spec: CommandSpec, program = 'konfidence'): string {
  const args = spec.positionals.map((p) => (p.required ? p.name : `[${p.name}]`));
  return [program, spec.name, ...args, ...(spec.options.length ? ['[FLAGS]'] : [])].join(' ');
}

const UNITS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** A --timeout value: `90`, `90s`, `5m`, `1h30m`, `500ms`; a bare number is seconds. */
export function parseDuration(flag: string, text: string): number {
  if (/^\d+(\.\d+)?$/.test(text)) return Math.round(Number(text) * 1000);
  const parts = [...text.matchAll(/(\d+(?:\.\d+)?)(ms|s|m|h)/g)];
  if (!parts.length || parts.map((p) => p[0]).join('') !== text)
    throw usageError(`flag --${flag}: "${text}" is not a duration (e.g. 90s, 5m, 1h30m)`);
  return Math.round(parts.reduce((sum, p) => sum + Number(p[1]) * UNITS[p[2]!]!, 0));
}
