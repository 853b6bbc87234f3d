import { expect } from 'chai';
import type { EventMetadata } from '../../../contracts/envelope';
import { loadContracts } from '../../../contracts/validator';
import { IdAllocator } from '../../../services/shared/ids';
import { withContracts } from '../../../services/shared/validatingEventStore';
import { MemoryEventStore } from '../../support/memoryEventStore';

const META: EventMetadata = { actor: { userId: 1, tokenId: 9, via: 'api' }, correlationId: 'req-1', causationId: null };

const blocks = async (store: MemoryEventStore, category: string) =>
  (await store.readStream(`ids-${category}`)).map((e) => e.data);

async function take(ids: IdAllocator, count: number, category = 'project'): Promise<number[]> {
  const taken: number[] = [];
  for (let i = 0; i < count; i++) taken.push(await ids.next(category, META));
  return taken;
}

describe('IdAllocator', () => {
  it('hands out increasing ids from a first block reserved on ids-<category>', async () => {
    const store = new MemoryEventStore();
    const ids = new IdAllocator(withContracts(store, loadContracts()), 50);
    expect(await take(ids, 3)).to.deep.equal([1, 2, 3]);
    expect(store.callsOf('append').map((c) => [c.streamId, c.expectedRevision, c.outcome])).to.deep.equal([['ids-project', 'no-stream', 'ok']]);
    const [reserved] = await store.readStream('ids-project');
    expect(reserved.type).to.equal('IdBlockReserved');
    expect(reserved.data).to.deep.equal({ category: 'project', from: 1, to: 50 });
    expect(reserved.metadata).to.deep.equal(META);
  });

  it('reserves the next block only when the current one is used up', async () => {
    const store = new MemoryEventStore();
    const ids = new IdAllocator(store, 3);
    const appendsAfterEach: number[] = [];
    const taken: number[] = [];
    for (let i = 0; i < 7; i++) {
      taken.push(await ids.next('project', META));
      appendsAfterEach.push(store.callsOf('append').length);
    }
    expect(taken).to.deep.equal([1, 2, 3, 4, 5, 6, 7]);
    expect(appendsAfterEach).to.deep.equal([1, 1, 1, 2, 2, 2, 3]);
    expect(store.callsOf('append').map((c) => c.expectedRevision)).to.deep.equal(['no-stream', 0n, 1n]);
    expect(await blocks(store, 'project')).to.deep.equal([
      { category: 'project', from: 1, to: 3 },
      { category: 'project', from: 4, to: 6 },
      { category: 'project', from: 7, to: 9 },
    ]);
  });

  it('keeps one sequence per category', async () => {
    const store = new MemoryEventStore();
    const ids = new IdAllocator(store, 2);
    const taken = [];
    for (const category of ['project', 'user', 'project', 'project', 'user']) taken.push(await ids.next(category, META));
    expect(taken).to.deep.equal([1, 1, 2, 3, 2]);
    expect(await blocks(store, 'user')).to.deep.equal([{ category: 'user', from: 1, to: 2 }]);
    expect(await blocks(store, 'project')).to.deep.equal([{ category: 'project', from: 1, to: 2 }, { category: 'project', from: 3, to: 4 }]);
  });

  it('two allocators on one store, taking turns, each get their own blocks', async () => {
    const store = new MemoryEventStore();
    const a = new IdAllocator(store, 3);
    const b = new IdAllocator(store, 3);
    const fromA: number[] = [];
    const fromB: number[] = [];
    for (let i = 0; i < 7; i++) {
      fromA.push(await a.next('project', META));
      fromB.push(await b.next('project', META));
    }
    expect(fromA).to.deep.equal([1, 2, 3, 7, 8, 9, 13]);
    expect(fromB).to.deep.equal([4, 5, 6, 10, 11, 12, 16]);
    expect((await blocks(store, 'project')).map((d) => (d as { from: number }).from)).to.deep.equal([1, 4, 7, 10, 13, 16]);
  });

  it('two allocators asked at the same time never hand out the same id: a lost reservation is retried', async () => {
    const store = new MemoryEventStore();
    const a = new IdAllocator(store, 2);
    const b = new IdAllocator(store, 2);
    const requests = Array.from({ length: 20 }, (_, i) => ({ from: i % 2 === 0 ? 'a' : 'b', id: (i % 2 === 0 ? a : b).next('project', META) }));
    const taken = await Promise.all(requests.map(async (r) => ({ from: r.from, id: await r.id })));

    const all = taken.map((t) => t.id);
    expect(new Set(all).size).to.equal(20);
    for (const who of ['a', 'b']) {
      const mine = taken.filter((t) => t.from === who).map((t) => t.id);
      expect(mine, `ids of ${who} in call order`).to.deep.equal([...mine].sort((x, y) => x - y));
    }
    const appends = store.callsOf('append');
    expect(appends.filter((c) => c.outcome === 'conflict').length, 'some reservations collided').to.be.greaterThan(0);
    // The blocks that were written follow one another without overlap.
    const written = (await blocks(store, 'project')) as { from: number; to: number }[];
    expect(written.map((d) => [d.from, d.to])).to.deep.equal(written.map((_, k) => [2 * k + 1, 2 * k + 2]));
    expect(written).to.have.length(appends.filter((c) => c.outcome === 'ok').length);
  });

  it('one allocator asked many times at once reserves one block at a time', async () => {
    const store = new MemoryEventStore();
    const ids = new IdAllocator(store, 2);
    const taken = await Promise.all([1, 2, 3, 4, 5].map(() => ids.next('project', META)));
    expect(taken).to.deep.equal([1, 2, 3, 4, 5]);
    expect(store.callsOf('append').map((c) => c.outcome)).to.deep.equal(['ok', 'ok', 'ok']);
  });

  it('a new allocator (a restart) skips the unused rest of the old block', async () => {
    const store = new MemoryEventStore();
    expect(await take(new IdAllocator(store, 50), 2)).to.deep.equal([1, 2]);
    expect(await take(new IdAllocator(store, 50), 2)).to.deep.equal([51, 52]);
  });

  it('a failed reservation fails that call only; the next call reserves again', async () => {
    const store = new MemoryEventStore();
    const ids = new IdAllocator(store, 5);
    let failures = 1;
    store.beforeAppend(() => {
      if (failures-- > 0) throw new Error('connection lost');
    });
    const [first, second] = await Promise.allSettled([ids.next('project', META), ids.next('project', META)]);
    expect(first.status === 'rejected' && (first.reason as Error).message).to.equal('connection lost');
    expect(second.status === 'fulfilled' && second.value).to.equal(1);
    expect(store.callsOf('append').map((c) => c.outcome)).to.deep.equal(['error', 'ok']);
  });
});
