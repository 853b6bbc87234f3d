import { expect } from 'chai';
import { wavesOf } from '../../../services/migration/externalImport.saga';

type Entry = [string, number];
const rows = (parents: Record<string, string | null>) => new Map(Object.entries(parents).map(([id, parent]) => [id, { id, parent_id: parent }]));
const byParent = { parentOf: (row: Record<string, unknown>) => row.parent_id };
const ids = (waves: Entry[][]) => waves.map((wave) => wave.map(([sourceId]) => sourceId));

describe('external import: a chunk of rows that point at each other is written in waves', () => {
  it('writes each row in the wave after its parent, independent rows together, children listed before parents too', () => {
    const source = rows({ c1: 'b1', a: null, b1: 'a', b2: 'a', x: 'elsewhere', c2: 'b2', d: 'c1' });
    const todo: Entry[] = [...source.keys()].map((id, i) => [id, 100 + i]);
    expect(ids(wavesOf(byParent, todo, source))).to.deep.equal([['a', 'x'], ['b1', 'b2'], ['c1', 'c2'], ['d']]);
  });

  it('writes rows whose parent is written already (an earlier chunk, or mapped) in the first wave', () => {
    const source = rows({ a: '7', b: '8' });
    expect(ids(wavesOf(byParent, [['a', 1], ['b', 2]], source))).to.deep.equal([['a', 'b']]);
  });

  it('leaves a cycle to the end, one row per wave in the chunk\'s order', () => {
    const source = rows({ a: null, p: 'q', q: 'p', b: 'a' });
    const todo: Entry[] = [['p', 1], ['a', 2], ['q', 3], ['b', 4]];
    expect(ids(wavesOf(byParent, todo, source))).to.deep.equal([['a'], ['b'], ['p'], ['q']]);
  });

  it('writes a dataset without parents in one wave, and nothing for an empty chunk', () => {
    const source = rows({ a: 'b', b: null });
    expect(ids(wavesOf({}, [['a', 1], ['b', 2]], source))).to.deep.equal([['a', 'b']]);
    expect(wavesOf(byParent, [], source)).to.deep.equal([]);
  });
});
