const NOTHING_READY = Symbol('nothing-ready');

/**
 * Groups what an async source already has ready into arrays of at most `maxSize`, without waiting
 * for more: a busy log gives big batches, a quiet one gives each event at once.
 */
export async function* inBatches<T>(source: AsyncIterable<T>, maxSize: number): AsyncGenerator<T[]> {
  const it = source[Symbol.asyncIterator]();
  let pending: Promise<IteratorResult<T>> | null = null;
  try {
    for (;;) {
      const first = await (pending ?? it.next());
      pending = null;
      if (first.done) return;
      const batch = [first.value];
      while (batch.length < maxSize) {
        const next = it.next();
        const ready = await Promise.race([next, new Promise<typeof NOTHING_READY>((r) => setImmediate(() => r(NOTHING_READY)))]);
        if (ready === NOTHING_READY) {
          pending = next;
          break;
        }
        if (ready.done) {
          yield batch;
          return;
        }
        batch.push(ready.value);
      }
      yield batch;
    }
  } finally {
    await it.return?.();
  }
}
