/** The CLI's command line (cli/args.ts), a row per rule; and every command's help. No servers. */
import { checkPositionals, parseCommandLine, parseDuration, type CommandSpec } from '../../cli/args.js';
import { commands } from '../../cli/commands/index.js';
import { CliError, EXIT } from '../../cli/exit-codes.js';
import { commandHelp, rootHelp } from '../../cli/help.js';
import { settingsFrom } from '../../cli/context.js';
import { programName } from '../../cli/program.js';

const specs: CommandSpec[] = commands;

describe('parseCommandLine: global flags anywhere, command flags after the command', () => {
  it.each([
    ['a command alone', ['status'], { command: 'status', positionals: [], options: {} }],
    [
      'global flags before the command',
      ['-n', 'team', '-o', 'json', 'status', 'shop'],
      { command: 'status', positionals: ['shop'], options: { namespace: 'team', output: 'json' } },
    ],
    [
      'global flags after the arguments',
      ['history', 'shop', '--namespace=team', '--output', 'table'],
      { command: 'history', positionals: ['shop'], options: { namespace: 'team', output: 'table' } },
    ],
    [
      'command flags and booleans',
      ['activate', 'shop', 'shop-2', '--wait', '--timeout', '5m'],
      { command: 'activate', positionals: ['shop', 'shop-2'], options: { wait: true, timeout: '5m' } },
    ],
    ['-- ends the flags', ['history', '--', '-odd'], { command: 'history', positionals: ['-odd'], options: {} }],
    ['--help with a command', ['cancel', '--help'], { command: 'cancel', positionals: [], options: { help: true } }],
    ['no command', ['-h'], { positionals: [], options: { help: true } }],
    ['help COMMAND', ['help', 'watch'], { command: 'help', positionals: ['watch'], options: {} }],
    [
      'Temporal flags',
      ['status', '--temporal-address', 'h:1', '--temporal-namespace', 't'],
      { command: 'status', positionals: [], options: { 'temporal-address': 'h:1', 'temporal-namespace': 't' } },
    ],
  ])('%s', (_n, argv, expected) => expect(parseCommandLine(argv, specs)).toEqual(expected));

  it.each([
    ['an unknown command', ['statsu'], /unknown command "statsu"; commands: status, activate/],
    ['an unknown flag', ['status', '--verbose'], /unknown flag --verbose for "status"/],
    [
      'a command flag before the command',
      ['--wait', 'activate', 'a', 'b'],
      /flag --wait belongs to "activate": put it after the command/,
    ],
    ['a flag of another command', ['status', '--wait'], /unknown flag --wait for "status"/],
    ['a missing value', ['status', '-n'], /flag -n needs a value \(NAMESPACE\)/],
    ['an empty value', ['status', '--namespace='], /needs a non-empty value/],
    ['a value for a boolean', ['activate', 'a', 'b', '--wait=yes'], /flag --wait takes no value/],
    ['an output format that does not exist', ['status', '-o', 'yaml'], /"yaml" is not one of table, json/],
  ])('refuses %s with exit 2 and says what is expected', (_n, argv, message) => {
    const err = catchError(() => parseCommandLine(argv, specs));
    expect(err).toBeInstanceOf(CliError);
    expect(err.code).toBe(EXIT.usage);
    expect(err.message).toMatch(message);
  });
});

describe('checkPositionals', () => {
  const activate = commands.find((c) => c.name === 'activate')!;
  it.each([
    [['shop'], /activate: missing STAGEVERSION; usage: konfidence activate STAGE STAGEVERSION \[FLAGS\]/],
    [[], /missing STAGE and STAGEVERSION/],
    [['a', 'b', 'c'], /unexpected argument "c"/],
  ])('%j is a usage error', (positionals, message) => {
    const err = catchError(() => checkPositionals(activate, positionals));
    expect(err.code).toBe(EXIT.usage);
    expect(err.message).toMatch(message);
  });
  it('accepts the optional STAGE of status, present or not', () => {
    const status = commands.find((c) => c.name === 'status')!;
    expect(() => checkPositionals(status, [])).not.toThrow();
    expect(() => checkPositionals(status, ['shop'])).not.toThrow();
  });
});

describe('parseDuration', () => {
  it.each([
    ['90', 90_000],
    ['90s', 90_000],
    ['5m', 300_000],
    ['1h30m', 5_400_000],
    ['500ms', 500],
    ['1.5s', 1_500],
  ])('%s → %d ms', (text, ms) => expect(parseDuration('timeout', text)).toBe(ms));
  it.each(['', 'soon', '5 m', '5x', '-1s'])('"%s" is a usage error', (text) =>
    expect(catchError(() => parseDuration('timeout', text)).code).toBe(EXIT.usage),
  );
});

describe('settings: flags, then environment and kubeconfig context, then defaults', () => {
  it.each([
    [
      'defaults',
      {},
      {},
      undefined,
      { namespace: 'default', output: 'table', temporalAddress: '127.0.0.1:7233', temporalNamespace: 'default' },
    ],
    [
      'context namespace and environment',
      {},
      { TEMPORAL_ADDRESS: 't:7233', TEMPORAL_NAMESPACE: 'tn' },
      'ctx-ns',
      { namespace: 'ctx-ns', temporalAddress: 't:7233', temporalNamespace: 'tn' },
    ],
    [
      'flags win',
      { namespace: 'flag-ns', output: 'json', 'temporal-address': 'f:1', 'temporal-namespace': 'fn' },
      { TEMPORAL_ADDRESS: 't:7233' },
      'ctx-ns',
      { namespace: 'flag-ns', output: 'json', temporalAddress: 'f:1', temporalNamespace: 'fn' },
    ],
  ])('%s', (_n, options, env, contextNs, expected) =>
    expect(settingsFrom(options, env, contextNs, 'konfidence')).toMatchObject(expected),
  );
});

describe('help', () => {
  it('the root help lists every command, the global flags and the exit codes', () => {
    const text = rootHelp(commands);
    for (const c of commands) expect(text).toContain(`  ${c.name} `);
    expect(text).toMatch(/--namespace[\s\S]*--kubeconfig[\s\S]*--output/);
    for (const code of Object.values(EXIT)) expect(text).toMatch(new RegExp(`^  ${code}  `, 'm'));
  });
  it.each(commands.map((c) => [c.name, c] as const))(
    '%s --help shows its usage, every flag and an example',
    (_n, c) => {
      const text = commandHelp(c, 'kubectl konfidence');
      expect(text).toContain(`Usage: kubectl konfidence ${c.name}`);
      for (const o of c.options) expect(text).toContain(`--${o.name}`);
      expect(text).toContain('Examples:');
    },
  );
  it.each([
    ['/usr/local/bin/konfidence', 'konfidence'],
    ['/home/me/bin/kubectl-konfidence', 'kubectl konfidence'],
    [undefined, 'konfidence'],
  ])('called as %s, help says "%s"', (argv1, program) => expect(programName(argv1)).toBe(program));
});

function catchError(fn: () => unknown): CliError {
  try {
    fn();
  } catch (err) {
    return err as CliError;
  }
  throw new Error('expected an error');
}
