/** withAttempts (cli/context.ts): a busy Temporal server costs the CLI another attempt, not the command. */
import { withAttempts } from '../../cli/context.js';

const grpcError = (code: number, details: string) => Object.assign(new Error(details), { code, details });

/** A call that fails with the given errors first, then answers "ok"; counts its attempts. */
function flaky(...failures: Error[]) {
  const calls = { count: 0 };
  const fn = async () => {
    calls.count++;
    const failure = failures.shift();
    if (failure) throw failure;
    return 'ok';
  };
  return { fn, calls };
}

describe('withAttempts', () => {
  it.each([
    ['a deadline', grpcError(4, 'Deadline exceeded after 10s')],
    ['an unavailable server', grpcError(14, 'connection reset')],
  ])('repeats the call after %s and returns its answer', async (_n, err) => {
    const { fn, calls } = flaky(err, err);
    await expect(withAttempts(3, fn, 1)).resolves.toBe('ok');
    expect(calls.count).toBe(3);
  });

  it('gives up after the last attempt with the last error', async () => {
    const { fn, calls } = flaky(grpcError(4, 'first'), grpcError(4, 'second'), grpcError(4, 'third'));
    await expect(withAttempts(2, fn, 1)).rejects.toThrow('second');
    expect(calls.count).toBe(2);
  });

  it.each([
    ['not found', grpcError(5, 'no such deployment')],
    ['an invalid argument', grpcError(3, 'bad build id')],
    ['an error without a gRPC code', new Error('boom')],
  ])('fails at once on %s: no attempt can change it', async (_n, err) => {
    const { fn, calls } = flaky(err);
    await expect(withAttempts(3, fn, 1)).rejects.toBe(err);
    expect(calls.count).toBe(1);
  });
});
