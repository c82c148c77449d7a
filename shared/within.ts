/**
 * A wait bounded in time: `work`'s outcome, or `late()`'s once `ms` pass first (a value to go on
 * with, or a throw). The work itself goes on unwatched, so it must be safe to leave running; a late
 * failure of it goes nowhere (the race has handled it).
 */
export function within<T>(work: Promise<T>, ms: number, late: () => T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const outOfTime = new Promise<T>((resolve, reject) => {
    timer = setTimeout(() => {
      try {
        resolve(late());
      } catch (err) {
        reject(err as Error);
      }
    }, ms);
  });
  return Promise.race([work, outOfTime]).finally(() => clearTimeout(timer));
}
