import type { EventMetadata } from '../../contracts/envelope';
import type { IdBlockReserved } from '../../contracts/events';
import { ConcurrencyError } from './errors';
import type { EventStore } from './eventStore';

/**
 * Integer ids without a round trip per id (hi/lo): each process reserves a block of ids per
 * category by appending IdBlockReserved to `ids-<category>` at the expected revision, then hands
 * them out from memory. Works on every event store adapter; ids are unique across processes and
 * restarts (an unused remainder of a block is simply skipped).
 */
export class IdAllocator {
  private readonly blocks = new Map<string, { next: number; to: number }>();
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(
    private readonly store: EventStore,
    private readonly blockSize = 50,
  ) {}

  next(category: string, metadata: EventMetadata): Promise<number> {
    // One reservation per category at a time in this process.
    const previous = this.locks.get(category) ?? Promise.resolve();
    const result = previous.catch(() => undefined).then(() => this.take(category, metadata));
    this.locks.set(category, result);
    return result;
  }

  /**
   * `count` consecutive ids in one reservation of their own (a bulk import's thousands of rows
   * cost one append, not one per block). The process's current block is left as it is.
   */
  async nextMany(category: string, count: number, metadata: EventMetadata): Promise<number[]> {
    if (count <= 0) return [];
    const block = await this.reserve(category, metadata, count);
    return Array.from({ length: count }, (_, i) => block.next + i);
  }

  private async take(category: string, metadata: EventMetadata): Promise<number> {
    let block = this.blocks.get(category);
    if (!block || block.next > block.to) {
      block = await this.reserve(category, metadata);
      this.blocks.set(category, block);
    }
    return block.next++;
  }

  private async reserve(category: string, metadata: EventMetadata, size = this.blockSize): Promise<{ next: number; to: number }> {
    const streamId = `ids-${category}`;
    for (;;) {
      const [last] = await this.store.readStream(streamId, { direction: 'backwards', maxCount: 1 });
      const lastTo = last ? (last.data as IdBlockReserved['data']).to : 0;
      const event: IdBlockReserved = { type: 'IdBlockReserved', data: { category, from: lastTo + 1, to: lastTo + size } };
      try {
        await this.store.append(streamId, [event], {
          expectedRevision: last ? BigInt(last.revision) : 'no-stream',
          metadata: { ...metadata, actor: { ...metadata.actor } },
        });
        return { next: event.data.from, to: event.data.to };
      } catch (error) {
        if (!(error instanceof ConcurrencyError)) throw error;
      }
    }
  }
}

/**
 * Ids for a job that takes many per step (an import's chunks): `nextMany` is served from
 * reservations of at least `ahead` ids per category, so a chunk costs no append of its own. What a
 * job does not use of its last reservation is skipped, like a block's remainder.
 */
export class IdPool {
  private readonly pools = new Map<string, { next: number; to: number }>();

  constructor(
    private readonly ids: Pick<IdAllocator, 'nextMany'>,
    private readonly ahead: number,
  ) {}

  async nextMany(category: string, count: number, metadata: EventMetadata): Promise<number[]> {
    if (count <= 0) return [];
    let pool = this.pools.get(category);
    if (!pool || pool.to - pool.next + 1 < count) {
      const block = await this.ids.nextMany(category, Math.max(count, this.ahead), metadata);
      pool = { next: block[0], to: block[block.length - 1] };
      this.pools.set(category, pool);
    }
    const first = pool.next;
    pool.next += count;
    return Array.from({ length: count }, (_, i) => first + i);
  }
}
