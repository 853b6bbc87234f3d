import { expect } from 'chai';
import type { EventEnvelope } from '../../../contracts/envelope';
import { LAG_COUNT_LIMIT, progressOf } from '../../../services/searchAdmin/indices';
import type { EventStore, ReadAllOptions } from '../../../services/shared/eventStore';

/** A log of events at the given positions (EventStoreDB's are sparse), each on its stream; records its reads. */
function fakeStore(kind: EventStore['kind'], events: { position: number; streamId: string }[]) {
  const reads: ReadAllOptions[] = [];
  const store: Pick<EventStore, 'kind' | 'readAll'> = {
    kind,
    async readAll(options = {}) {
      reads.push(options);
      const after = BigInt(options.after ?? '0');
      return events.filter((e) => BigInt(e.position) > after).slice(0, options.maxCount ?? 1000).map((e): EventEnvelope => ({
        id: `e${e.position}`, type: 'ProjectCreated', schemaVersion: 1, streamId: e.streamId, revision: '0', position: String(e.position),
        recordedAt: '2026-01-01T00:00:00.000Z', data: {}, metadata: { actor: { userId: null, via: 'system' }, correlationId: 'c', causationId: null },
      }));
    },
  };
  return { store, reads };
}

describe('indices: the indexer\'s checkpoint and lag per version', () => {
  it('direct, PostgreSQL event store: head − checkpoint, read from nothing (positions count events one by one)', async () => {
    const { store, reads } = fakeStore('postgres', []);
    expect(await progressOf(store, { search: '40' }, 52n)).to.deep.equal({ checkpoint: { position: '40', keys: { search: '40' } }, lag: { events: 12, exact: true } });
    expect(await progressOf(store, {}, 52n)).to.deep.equal({ checkpoint: { position: null, keys: {} }, lag: { events: 52, exact: true } });
    expect((await progressOf(store, { search: '60' }, 52n)).lag, 'a checkpoint read after a newer head').to.deep.equal({ events: 0, exact: true });
    expect(reads).to.deep.equal([]);
  });

  it('direct, EventStoreDB (positions are log offsets): the events after the checkpoint counted, up to the head', async () => {
    const { store, reads } = fakeStore('eventstoredb', [100, 250, 400, 900, 1300].map((position) => ({ position, streamId: 's' })));
    expect((await progressOf(store, { search: '250' }, 900n)).lag).to.deep.equal({ events: 2, exact: true });
    expect((await progressOf(store, { search: '1300' }, 1300n)).lag).to.deep.equal({ events: 0, exact: true });
    expect(reads[0]).to.deep.include({ after: '250', shallow: ['TestResultsImported', 'ExternalImportRowsWritten'] });
  });

  it('counting stops at LAG_COUNT_LIMIT events read: a lower bound, said so', async () => {
    const events = Array.from({ length: LAG_COUNT_LIMIT + 500 }, (_, i) => ({ position: (i + 1) * 10, streamId: 's' }));
    const { store, reads } = fakeStore('eventstoredb', events);
    expect((await progressOf(store, {}, BigInt(events.at(-1)!.position))).lag).to.deep.equal({ events: LAG_COUNT_LIMIT, exact: false });
    expect(reads.every((r) => (r.maxCount ?? 0) <= 1000)).to.equal(true);
  });

  it('Kafka: an event is behind when its stream\'s partition has not reached it; the position is the lowest partition\'s', async () => {
    const partitionOf = (streamId: string) => Number(streamId.slice(1));
    const events = [
      { position: 10, streamId: 'p0' }, { position: 11, streamId: 'p1' }, { position: 12, streamId: 'p0' },
      { position: 13, streamId: 'p1' }, { position: 14, streamId: 'p2' }, { position: 15, streamId: 'p1' },
    ];
    const { store } = fakeStore('postgres', events);
    const checkpoints = { 'search#0': '5', 'search@0': '12', 'search#1': '7', 'search@1': '11' };
    // From 11 (the lowest): 12 applied (p0 at 12), 13 and 15 behind (p1 at 11), 14 behind (p2 has applied nothing).
    expect(await progressOf(store, checkpoints, 15n, partitionOf)).to.deep.equal({ checkpoint: { position: '11', keys: checkpoints }, lag: { events: 3, exact: true } });
    expect((await progressOf(store, { ...checkpoints, 'search@1': '15', 'search@2': '14' }, 15n, partitionOf)).lag).to.deep.equal({ events: 0, exact: true });
    expect(await progressOf(store, {}, 15n, partitionOf), 'nothing applied: every event').to.deep.equal({ checkpoint: { position: null, keys: {} }, lag: { events: 6, exact: true } });
  });
});
