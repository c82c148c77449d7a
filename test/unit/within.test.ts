/**
 * shared/within.ts: a wait bounded in time, as the health checks, the leader election and the
 * final status's letting go use it. The bounds here are the ones under test, not waits.
 */
import { jest } from '@jest/globals';
import { within } from '../../shared/within.js';

const never = new Promise<string>(() => undefined);

test('the work answers first: its value, or its failure', async () => {
  await expect(within(Promise.resolve('done'), 10_000, () => 'late')).resolves.toBe('done');
  await expect(within(Promise.reject(new Error('refused')), 10_000, () => 'late')).rejects.toThrow('refused');
});

test('the bound passes first: the value to go on with, or the error that says so', async () => {
  await expect(within(never, 20, () => 'late')).resolves.toBe('late');
  await expect(
    within(never, 20, () => {
      throw new Error('no answer within 20 ms');
    }),
  ).rejects.toThrow('no answer within 20 ms');
});

test('the work answers first: no timer is left behind to hold the process open', async () => {
  jest.useFakeTimers({ doNotFake: ['nextTick', 'queueMicrotask'] });
  try {
    await within(Promise.resolve('done'), 10_000, () => 'late');
    expect(jest.getTimerCount()).toBe(0);
  } finally {
    jest.useRealTimers();
  }
});
