/** Help texts, generated from the command specs so that they cannot drift from what is parsed. */
import { globalOptions, synopsis, type CommandSpec, type OptionSpec } from './args.js';
import { EXIT } from './exit-codes.js';

function optionLines(options: OptionSpec[]): string[] {
  const heads = options.map((o) => `${o.short ? `-${o.short}, ` : '    '}--${o.name}${o.value ? ` ${o.value}` : ''}`);
  const width = Math.max(...heads.map((h) => h.length));
  return heads.map((h, i) => `  ${h.padEnd(width)}  ${options[i]!.description}`);
}

const EXIT_LINES = [
  `  ${EXIT.ok}  ok (activate --wait: the StageVersion asked for serves the traffic)`,
  `  ${EXIT.failed}  refused or failed (a refused cancel/retry, an activation that did not succeed, a forbidden call)`,
  `  ${EXIT.usage}  usage error`,
  `  ${EXIT.notFound}  a named object does not exist`,
  `  ${EXIT.unreachable}  the Kubernetes API server cannot be reached`,
  `  ${EXIT.timeout}  --timeout passed before the answer or the final phase`,
];

export function rootHelp(commands: CommandSpec[], program = 'konfidence'): string {
  const width = Math.max(...commands.map((c) => c.name.length));
  return [
    `${program}: follow and steer konfidence activations (Stages, VectorActivations).`,
    '',
    `Usage: ${program} [FLAGS] COMMAND [ARGS] [FLAGS]`,
    '',
    'Commands:',
    ...commands.map((c) => `  ${c.name.padEnd(width)}  ${c.summary}`),
    `  ${'help'.padEnd(width)}  help for a command (also: COMMAND --help)`,
    '',
    'Global flags:',
    ...optionLines(globalOptions),
    '',
    'Exit codes:',
    ...EXIT_LINES,
    '',
    `Run "${program} COMMAND --help" for a command's arguments and flags. Docs: docs/cli.md.`,
  ].join('\n');
}

export function commandHelp(spec: CommandSpec, program = 'konfidence'): string {
  const width = Math.max(0, ...spec.positionals.map((p) => p.name.length));
  return [
    `${program} ${spec.name}: ${spec.summary}`,
    '',
    `Usage: ${synopsis(spec, program)}`,
    '',
    spec.description,
    ...(spec.positionals.length
      ? [
          '',
          'Arguments:',
          ...spec.positionals.map(
            (p) => `  ${p.name.padEnd(width)}  ${p.description}${p.required ? '' : ' (optional)'}`,
          ),
        ]
      : []),
    ...(spec.options.length ? ['', 'Flags:', ...optionLines(spec.options)] : []),
    '',
    'Global flags:',
    ...optionLines(globalOptions),
    ...(spec.examples.length ? ['', 'Examples:', ...spec.examples.map((e) => `  ${program} ${e}`)] : []),
    '',
    'Exit codes:',
    ...EXIT_LINES,
  ].join('\n');
}
