/** Runs `work` over `items`, at most `width` at a time, in their order; resolves when all are done. */
export async function forEachLimited<T>(
  items: readonly T[],
  width: number,
  work: (item: T) => Promise<unknown>,
): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.max(1, Math.min(width, items.length)) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}
