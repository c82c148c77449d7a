/**
 * The reconcile loop both controllers run, in the spirit of controller-runtime's work queue: keys
 * (namespaces) are queued with the time they are due; a key queued twice is reconciled once, a key
 * queued while it is being reconciled is reconciled again after; a failed reconcile is queued again
 * after a backoff that doubles per failure in a row (reset by a success); a reconcile may ask to be
 * woken at a time (enqueue with a delay: the earliest due time wins). Keys that are not ready (a
 * standby, a namespace not served or not listed yet) wait queued until `poke()`. Stopping is
 * bounded: no key starts after stop(), and it waits for those running at most its grace.
 */

/** The clock and timers the loop uses: the real ones, or a test's. */
export interface LoopClock {
  now(): number;
  /** Calls `fn` after `ms` (0: on the next turn of the event loop, after the events already queued). */
  after(fn: () => void, ms: number): { cancel(): void };
}

export const realClock: LoopClock = {
  now: () => Date.now(),
  after(fn, ms) {
    if (ms <= 0) {
      const immediate = setImmediate(fn);
      return { cancel: () => clearImmediate(immediate) };
    }
    const timer = setTimeout(fn, ms);
    timer.unref();
    return { cancel: () => clearTimeout(timer) };
  },
};

/** Whether `work` settled within `ms`: a bounded wait for what a stop lets finish. */
export async function settledWithin(
  work: Promise<unknown>,
  ms: number,
  clock: LoopClock = realClock,
): Promise<boolean> {
  let timeout: { cancel(): void } | undefined;
  const outOfTime = new Promise<false>((resolve) => (timeout = clock.after(() => resolve(false), ms)));
  const settled = work.then(
    () => true as const,
    () => true as const,
  );
  const ended = await Promise.race([settled, outOfTime]);
  timeout?.cancel();
  return ended;
}

/** What a failed reconcile leads to: queued again after its backoff, at once, or not (the next event brings it). */
export type AfterFailure = 'backoff' | 'now' | 'drop';

export interface ReconcileLoopOptions {
  reconcile(key: string): Promise<void>;
  /** Whether `key` may be reconciled now; one that may not waits queued until poke(). Default: always. */
  ready?(key: string): boolean;
  /** Says what a failure leads to (default: backoff), after saying it where a person sees it. */
  failed?(key: string, err: unknown): AfterFailure;
  /** Keys reconciled at once (default 1); one key is never reconciled twice at once. */
  concurrency?: number;
  /** The first backoff after a failure, doubled per failure in a row up to maxBackoffMs. */
  initialBackoffMs?: number;
  maxBackoffMs?: number;
  clock?: LoopClock;
}

export class ReconcileLoop {
  /** Queued keys and when each is due. */
  private readonly queued = new Map<string, number>();
  /** Keys being reconciled, with their reconcile. */
  private readonly running = new Map<string, Promise<void>>();
  /** Failures in a row, by key. */
  private readonly failures = new Map<string, number>();
  private readonly clock: LoopClock;
  private readonly concurrency: number;
  private pumpScheduled: { cancel(): void } | undefined;
  private timer: { cancel(): void; at: number } | undefined;
  private stopped = false;

  constructor(private readonly options: ReconcileLoopOptions) {
    this.clock = options.clock ?? realClock;
    this.concurrency = options.concurrency ?? 1;
  }

  /** Queues `key`, due in `delayMs`; queued already, the earlier due time stands. */
  enqueue(key: string, delayMs = 0): void {
    if (this.stopped) return;
    const due = this.clock.now() + Math.max(delayMs, 0);
    const queued = this.queued.get(key);
    if (queued === undefined || due < queued) this.queued.set(key, due);
    this.schedulePump(delayMs > 0 ? due : undefined);
  }

  /** Readiness may have changed (leading now, a namespace listed): due keys are looked at again. */
  poke(): void {
    this.schedulePump();
  }

  /** Resolves once no reconcile of a key `which` selects (default: any) runs. */
  async idle(which: (key: string) => boolean = () => true): Promise<void> {
    await Promise.allSettled([...this.running].filter(([key]) => which(key)).map(([, run]) => run));
  }

  /** No key starts from now on; resolves true once the running ones ended, false when `graceMs` ran out first. */
  async stop(graceMs: number): Promise<boolean> {
    this.stopped = true;
    this.pumpScheduled?.cancel();
    this.timer?.cancel();
    this.queued.clear();
    return settledWithin(this.idle(), graceMs, this.clock);
  }

  /** Looks at the queue on the next turn (events that come together are queued before it), or at `at`. */
  private schedulePump(at?: number): void {
    if (this.stopped) return;
    if (at !== undefined) {
      if (this.timer && this.timer.at <= at) return;
      this.timer?.cancel();
      const timer = this.clock.after(() => {
        if (this.timer === handle) this.timer = undefined;
        this.pump();
      }, at - this.clock.now());
      const handle = { ...timer, at };
      this.timer = handle;
      return;
    }
    this.pumpScheduled ??= this.clock.after(() => {
      this.pumpScheduled = undefined;
      this.pump();
    }, 0);
  }

  private pump(): void {
    if (this.stopped) return;
    const now = this.clock.now();
    let next: number | undefined;
    for (const [key, due] of this.queued) {
      if (this.running.size >= this.concurrency) break;
      if (this.running.has(key) || !(this.options.ready?.(key) ?? true)) continue;
      if (due > now) {
        next = Math.min(next ?? due, due);
        continue;
      }
      this.queued.delete(key);
      this.start(key);
    }
    if (next !== undefined) this.schedulePump(next);
  }

  private start(key: string): void {
    const run = this.options.reconcile(key).then(
      () => {
        this.failures.delete(key);
      },
      (err: unknown) => {
        const failures = (this.failures.get(key) ?? 0) + 1;
        this.failures.set(key, failures);
        const after = this.options.failed?.(key, err) ?? 'backoff';
        if (after === 'now') this.enqueue(key);
        if (after === 'backoff') this.enqueue(key, this.backoffMs(failures));
      },
    );
    this.running.set(key, run);
    void run.finally(() => {
      this.running.delete(key);
      // A key queued while it ran, or one waiting for a free place, goes now.
      this.schedulePump();
    });
  }

  private backoffMs(failures: number): number {
    const initial = this.options.initialBackoffMs ?? 1_000;
    return Math.min(initial * 2 ** (failures - 1), this.options.maxBackoffMs ?? 30_000);
  }
}
