import { expect } from 'chai';
import type { EventMetadata } from '../../../contracts/envelope';
import { IdPool } from '../../../services/shared/ids';

const META: EventMetadata = { actor: { userId: null, via: 'system' }, correlationId: 'test', causationId: null };

/** An allocator that hands out consecutive blocks per category and records each reservation. */
function allocator() {
  const next = new Map<string, number>();
  const reservations: Array<[string, number]> = [];
  return {
    reservations,
    async nextMany(category: string, count: number): Promise<number[]> {
      reservations.push([category, count]);
      const first = next.get(category) ?? 1;
      next.set(category, first + count);
      return Array.from({ length: count }, (_, i) => first + i);
    },
  };
}

describe('IdPool: ids for many chunks from few reservations', () => {
  it('serves consecutive ids from one reservation of `ahead` ids, per category', async () => {
    const ids = allocator();
    const pool = new IdPool(ids, 100);
    expect(await pool.nextMany('testRunResult', 3, META)).to.deep.equal([1, 2, 3]);
    expect(await pool.nextMany('testRunResult', 2, META)).to.deep.equal([4, 5]);
    expect(await pool.nextMany('step', 2, META)).to.deep.equal([1, 2]);
    expect(ids.reservations).to.deep.equal([['testRunResult', 100], ['step', 100]]);
  });

  it('reserves anew when what is left is too few (the rest is skipped), and as many as asked when more than `ahead`', async () => {
    const ids = allocator();
    const pool = new IdPool(ids, 10);
    expect(await pool.nextMany('case', 8, META)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(await pool.nextMany('case', 3, META)).to.deep.equal([11, 12, 13]);
    expect(await pool.nextMany('case', 25, META)).to.have.length(25).and.to.include.members([21, 45]);
    expect(ids.reservations).to.deep.equal([['case', 10], ['case', 10], ['case', 25]]);
  });

  it('gives none for none, reserving nothing', async () => {
    const ids = allocator();
    expect(await new IdPool(ids, 10).nextMany('case', 0, META)).to.deep.equal([]);
    expect(ids.reservations).to.deep.equal([]);
  });
});
