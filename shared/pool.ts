/** Runs `work` over `items`, at most `width` at a time, in their order; resolves when all are done. */
export async function forEachLimited<T>(items: readonly T[], width: number, work: (item: T) => Promise<unknown>): Promise<void> {
  const queue = [...items];
  await Promise.all(
    Array.from({ length: Math.max(1, Math.min(width, queue.length)) }, async () => {
      for (let item = queue.shift(); item !== undefined; item = queue.shift()) await work(item);
    }),
  );
}
