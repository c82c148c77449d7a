/** Exit codes (cli/exit-codes.ts), when waiting ends (cli/outcome.ts), generated names, and run() without servers. */
import { objectName } from '../../api/meta.js';
import { CliError, describeError, EXIT, exitCodeOf } from '../../cli/exit-codes.js';
import { activationName, requestExitCode, waitOutcome } from '../../cli/outcome.js';
import { run } from '../../cli/run.js';
import { k8s } from '../../k8s/client.js';

const fetchError = (code: string) =>
  Object.assign(new Error(`request to https://127.0.0.1:6443/apis failed, reason: connect ${code}`), {
    name: 'FetchError',
    code,
    type: 'system',
  });

describe('exitCodeOf: what a failure means for scripts', () => {
  it.each([
    ['a usage error', new CliError(EXIT.usage, 'x'), EXIT.usage],
    ['a missing object', new CliError(EXIT.notFound, 'x'), EXIT.notFound],
    ['a deadline', new CliError(EXIT.timeout, 'x'), EXIT.timeout],
    ['the apiserver: 404', new k8s.ApiException(404, 'nf', { message: 'stages.x "a" not found' }, {}), EXIT.notFound],
    ['the apiserver: 403', new k8s.ApiException(403, 'forbidden', { message: 'forbidden' }, {}), EXIT.failed],
    ['the apiserver: 422', new k8s.ApiException(422, 'invalid', { message: 'invalid' }, {}), EXIT.failed],
    ['a refused connection', fetchError('ECONNREFUSED'), EXIT.unreachable],
    ['an unknown host', fetchError('ENOTFOUND'), EXIT.unreachable],
    [
      'a timeout in the cause chain',
      Object.assign(new Error('fetch failed'), { cause: { code: 'ETIMEDOUT' } }),
      EXIT.unreachable,
    ],
    ['anything else', new Error('boom'), EXIT.failed],
  ])('%s → %d', (_n, err, code) => expect(exitCodeOf(err)).toBe(code));

  it('an unreachable apiserver is named with what to check', () => {
    expect(describeError(fetchError('ECONNREFUSED'), 'https://127.0.0.1:6443')).toBe(
      'cannot reach the Kubernetes API server https://127.0.0.1:6443 (ECONNREFUSED): check --kubeconfig / KUBECONFIG and that the cluster is up',
    );
  });
  it("a forbidden call carries the apiserver's message and where to look", () => {
    const err = new k8s.ApiException(
      403,
      'forbidden',
      JSON.stringify({ message: 'user "bob" cannot create resource "vectoractivations"' }),
      {},
    );
    expect(describeError(err, undefined)).toMatch(
      /HTTP 403\): user "bob" cannot create resource "vectoractivations"; check your credentials and RBAC/,
    );
  });
});

describe('waitOutcome: success means the StageVersion asked for serves the traffic', () => {
  it.each([
    [undefined, undefined, false, undefined],
    ['Pending', undefined, false, undefined],
    ['Waiting', undefined, false, undefined],
    ['InProgress', undefined, false, undefined],
    ['Succeeded', 'Activated', true, EXIT.ok],
    ['Skipped', 'AlreadyActive', true, EXIT.ok],
    ['Skipped', 'Superseded', true, EXIT.failed],
    ['Skipped', 'OlderThanActive', true, EXIT.failed],
    ['Failed', 'InvalidPlan', true, EXIT.failed],
    ['Cancelled', 'Cancelled', true, EXIT.failed],
  ])('%s (%s) → done %s, exit %s', (phase, reason, done, code) => {
    const outcome = waitOutcome(phase, reason);
    expect(outcome.done).toBe(done);
    if (outcome.done) expect(outcome.code).toBe(code);
  });
  it('a Skipped one says why it does not serve', () =>
    expect(waitOutcome('Skipped', 'Superseded')).toMatchObject({
      verdict: 'skipped (Superseded): the StageVersion does not serve the traffic',
    }));
  it.each([
    ['Accepted', EXIT.ok],
    ['Refused', EXIT.failed],
  ] as const)('a request %s → exit %d', (outcome, code) => expect(requestExitCode(outcome)).toBe(code));
});

describe('activationName: valid for every valid StageVersion name, different per call', () => {
  const longest = `${'a'.repeat(61)}.${'b'.repeat(63)}.${'c'.repeat(63)}.${'d'.repeat(63)}`;
  it.each([
    ['shop-3', 'shop-3-abc123'],
    ['shop.v3', 'shop.v3-abc123'],
    [longest, undefined],
    [`${'x'.repeat(244)}.y-z`, undefined],
  ])('%s', (stageVersion, expected) => {
    expect(objectName.safeParse(stageVersion).success).toBe(true);
    const name = activationName(stageVersion, 'abc123');
    expect(objectName.safeParse(name).success).toBe(true);
    if (expected) expect(name).toBe(expected);
    expect(activationName(stageVersion, 'def456')).not.toBe(name);
  });
});

describe('run(): usage errors and help need no server', () => {
  async function invoke(...argv: string[]) {
    const out: string[] = [];
    const err: string[] = [];
    const code = await run(argv, { out: (t) => out.push(t), err: (t) => err.push(t) }, 'konfidence');
    return { code, out: out.join('\n'), err: err.join('\n') };
  }
  it.each([
    [['--help'], EXIT.ok, 'out', /^konfidence: follow and steer/],
    [['help'], EXIT.ok, 'out', /Commands:/],
    [['help', 'retry'], EXIT.ok, 'out', /^konfidence retry: /],
    [[], EXIT.usage, 'err', /Usage: konfidence \[FLAGS\] COMMAND/],
    [['help', 'nope'], EXIT.usage, 'err', /unknown command "nope"/],
    [['activate', 'shop'], EXIT.usage, 'err', /^error: activate: missing STAGEVERSION/],
    [['status', '-o', 'yaml'], EXIT.usage, 'err', /"yaml" is not one of table, json/],
    [['activate', 'Shop', 'shop-1'], EXIT.usage, 'err', /STAGE "Shop" is not a valid object name/],
    [['activate', 'shop', 'shop-1', '--name', 'a_b'], EXIT.usage, 'err', /--name "a_b" is not a valid object name/],
    [['activate', 'shop', 'shop-1', '--timeout', '5m'], EXIT.usage, 'err', /--timeout applies to --wait only/],
    [['activate', 'shop', 'shop-1', '--wait', '--timeout', 'later'], EXIT.usage, 'err', /"later" is not a duration/],
    [['retry', 'x', '--timeout', '1y'], EXIT.usage, 'err', /"1y" is not a duration/],
    [['watch', '--timeout', 'x'], EXIT.usage, 'err', /"x" is not a duration/],
  ] as const)('%j → exit %d', async (argv, code, stream, text) => {
    const result = await invoke(...argv);
    expect(result.code).toBe(code);
    expect(result[stream]).toMatch(text);
  });
});
