/**
 * The controllers' reconcile loop (controllers/reconcile-loop.ts) on a clock the test moves: what
 * a controller's reconciles see of a queue with dedup, requeue while running, backoff, wake-ups,
 * readiness and a bounded stop. No servers, no sleeps.
 */
import { ReconcileLoop, type LoopClock, type ReconcileLoopOptions } from '../../controllers/reconcile-loop.js';

class TestClock implements LoopClock {
  time = 0;
  private timers: { at: number; fn: () => void; cancelled: boolean }[] = [];
  now = () => this.time;
  after(fn: () => void, ms: number) {
    const timer = { at: this.time + Math.max(ms, 0), fn, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => void (timer.cancelled = true) };
  }
  /** Moves time by `ms`, firing every timer due on the way, and lets the reconciles' promises settle. */
  async advance(ms: number): Promise<void> {
    const end = this.time + ms;
    for (;;) {
      await settle();
      const due = this.timers.filter((t) => !t.cancelled && t.at <= end).sort((a, b) => a.at - b.at)[0];
      if (!due) break;
      this.timers = this.timers.filter((t) => t !== due);
      this.time = Math.max(this.time, due.at);
      due.fn();
    }
    this.time = end;
    await settle();
  }
}

const settle = async () => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

/** A reconcile the test ends by hand, recording each call and how many ran at once. */
function gatedReconcile() {
  const calls: { key: string; at: number }[] = [];
  const open: (() => void)[] = [];
  let running = 0;
  let mostAtOnce = 0;
  const fail: string[] = [];
  return {
    calls,
    get mostAtOnce() {
      return mostAtOnce;
    },
    failNext: (key: string) => fail.push(key),
    finishAll: () => open.splice(0).forEach((finish) => finish()),
    reconcile: (clock: TestClock) => (key: string) => {
      calls.push({ key, at: clock.now() });
      running++;
      mostAtOnce = Math.max(mostAtOnce, running);
      const failing = fail.indexOf(key);
      if (failing >= 0) {
        fail.splice(failing, 1);
        running--;
        return Promise.reject(new Error(`${key} failed`));
      }
      return new Promise<void>((resolve) => open.push(() => (running--, resolve())));
    },
  };
}

function loopWith(options: Partial<ReconcileLoopOptions> = {}) {
  const clock = new TestClock();
  const gated = gatedReconcile();
  const loop = new ReconcileLoop({ reconcile: gated.reconcile(clock), clock, ...options });
  return { clock, gated, loop };
}

test('a key queued twice before its turn is reconciled once', async () => {
  const { clock, gated, loop } = loopWith();
  loop.enqueue('ns-a');
  loop.enqueue('ns-a');
  await clock.advance(0);
  gated.finishAll();
  await clock.advance(10);
  expect(gated.calls.map((c) => c.key)).toEqual(['ns-a']);
});

test('a key queued while it is reconciled is reconciled again after, never twice at once', async () => {
  const { clock, gated, loop } = loopWith({ concurrency: 4 });
  loop.enqueue('ns-a');
  await clock.advance(0);
  loop.enqueue('ns-a');
  await clock.advance(100);
  expect(gated.calls).toHaveLength(1);
  gated.finishAll();
  await clock.advance(0);
  expect(gated.calls).toHaveLength(2);
  expect(gated.mostAtOnce).toBe(1);
});

test('one key at a time by default; more with concurrency', async () => {
  for (const [concurrency, atOnce] of [
    [1, 1],
    [3, 3],
  ] as const) {
    const { clock, gated, loop } = loopWith({ concurrency });
    for (const key of ['ns-a', 'ns-b', 'ns-c']) loop.enqueue(key);
    await clock.advance(0);
    expect(gated.calls).toHaveLength(atOnce);
    for (let i = 0; i < 3; i++) {
      gated.finishAll();
      await clock.advance(0);
    }
    expect(gated.calls.map((c) => c.key).sort()).toEqual(['ns-a', 'ns-b', 'ns-c']);
  }
});

test('a failed reconcile is queued again after a backoff that doubles, up to its cap, and resets on success', async () => {
  const { clock, gated, loop } = loopWith({ initialBackoffMs: 1_000, maxBackoffMs: 3_000 });
  for (let i = 0; i < 4; i++) gated.failNext('ns-a');
  loop.enqueue('ns-a');
  await clock.advance(20_000);
  gated.finishAll();
  await clock.advance(0);
  // Failures at 0, 1 s, 3 s (2 s later), 6 s (3 s: the cap); the fifth call succeeds at 9 s.
  expect(gated.calls.map((c) => c.at)).toEqual([0, 1_000, 3_000, 6_000, 9_000]);
  gated.failNext('ns-a');
  loop.enqueue('ns-a');
  await clock.advance(0);
  await clock.advance(1_000);
  expect(gated.calls.map((c) => c.at).slice(5)).toEqual([20_000, 21_000]);
});

test('a failure may ask to go again at once, or not at all', async () => {
  const { clock, gated, loop } = loopWith({ failed: (key) => (key === 'ns-now' ? 'now' : 'drop') });
  gated.failNext('ns-now');
  gated.failNext('ns-drop');
  loop.enqueue('ns-now');
  loop.enqueue('ns-drop');
  for (let i = 0; i < 3; i++) {
    await clock.advance(0);
    gated.finishAll();
  }
  await clock.advance(60_000);
  expect(gated.calls.map((c) => `${c.key}@${c.at}`)).toEqual(['ns-now@0', 'ns-drop@0', 'ns-now@0']);
});

test('the earliest wake-up wins, and a key due later waits for it', async () => {
  const { clock, gated, loop } = loopWith();
  loop.enqueue('ns-a', 5_000);
  loop.enqueue('ns-a', 2_000);
  await clock.advance(1_999);
  expect(gated.calls).toEqual([]);
  await clock.advance(1);
  gated.finishAll();
  await clock.advance(10_000);
  expect(gated.calls).toEqual([{ key: 'ns-a', at: 2_000 }]);
});

test('a key that is not ready waits queued until poked', async () => {
  let leading = false;
  const { clock, gated, loop } = loopWith({ ready: () => leading });
  loop.enqueue('ns-a');
  await clock.advance(60_000);
  expect(gated.calls).toEqual([]);
  leading = true;
  loop.poke();
  await clock.advance(0);
  expect(gated.calls).toEqual([{ key: 'ns-a', at: 60_000 }]);
});

test('stop starts nothing more and waits for the running reconcile only as long as its grace', async () => {
  const { clock, gated, loop } = loopWith();
  loop.enqueue('ns-a');
  loop.enqueue('ns-b');
  await clock.advance(0);
  let stopped: boolean | undefined;
  void loop.stop(5_000).then((ended) => (stopped = ended));
  loop.enqueue('ns-c');
  await clock.advance(4_999);
  expect(stopped).toBeUndefined();
  await clock.advance(1);
  expect(stopped).toBe(false);
  gated.finishAll();
  await clock.advance(60_000);
  expect(gated.calls.map((c) => c.key)).toEqual(['ns-a']);

  const second = loopWith();
  second.loop.enqueue('ns-a');
  await second.clock.advance(0);
  const ending = second.loop.stop(5_000);
  second.gated.finishAll();
  await second.clock.advance(0);
  await expect(ending).resolves.toBe(true);
});
