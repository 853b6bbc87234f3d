import { expect } from 'chai';
import type { EventEnvelope } from '../../contracts/envelope';
import { RecentEvents, type ReadEvent } from '../../infra/eventstore/recentEvents';

const event = (position: number, type = 'Thing'): EventEnvelope => ({
  id: `e${position}`, type, schemaVersion: 1, streamId: 's', revision: String(position), position: String(position),
  recordedAt: '2026-12-01T00:00:00.000Z', data: { position }, metadata: { actor: { userId: 1, via: 'system' }, correlationId: 'c', causationId: null },
});
const read = (from: number, to: number, size = 10, type = 'Thing'): ReadEvent[] => Array.from({ length: to - from + 1 }, (_, i) => ({ event: event(from + i, type), size }));
const positions = (page: EventEnvelope[] | null) => page?.map((e) => Number(e.position)) ?? null;
const none: ReadonlySet<string> = new Set();

describe('RecentEvents: the log\'s end a store\'s subscriptions share', () => {
  it('serves what a read recorded to readers within it, pages joined end to end; a reader outside it reads itself', () => {
    const recent = new RecentEvents({ events: 100, bytes: 10_000 });
    recent.record(10n, none, 1, read(11, 15));
    recent.record(15n, none, 1, read(16, 20));
    expect(positions(recent.serve(10n, none, 1, 1000, 10_000))).to.deep.equal([11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
    expect(positions(recent.serve(17n, none, 1, 1000, 10_000))).to.deep.equal([18, 19, 20]);
    expect(recent.serve(9n, none, 1, 1000, 10_000), 'behind what it holds').to.equal(null);
    expect(recent.serve(20n, none, 1, 1000, 10_000), 'at its end, with no empty read recorded').to.equal(null);
    // A page that does not join the end replaces it when it is newer, and is left out when older.
    recent.record(30n, none, 1, read(31, 32));
    expect(recent.serve(10n, none, 1, 1000, 10_000)).to.equal(null);
    expect(positions(recent.serve(30n, none, 1, 1000, 10_000))).to.deep.equal([31, 32]);
    recent.record(5n, none, 1, read(6, 8));
    expect(positions(recent.serve(30n, none, 1, 1000, 10_000))).to.deep.equal([31, 32]);
    expect(recent.serve(5n, none, 1, 1000, 10_000)).to.equal(null);
  });

  it('keeps the newest events within its limits, and serves pages within the reader\'s count and bytes', () => {
    const recent = new RecentEvents({ events: 8, bytes: 55 });
    recent.record(0n, none, 1, read(1, 10, 5));
    expect(recent.held()).to.deep.equal({ events: 8, bytes: 40 });
    expect(recent.serve(1n, none, 1, 1000, 1000)).to.equal(null);
    expect(positions(recent.serve(2n, none, 1, 1000, 1000))).to.deep.equal([3, 4, 5, 6, 7, 8, 9, 10]);
    expect(positions(recent.serve(2n, none, 1, 3, 1000)), 'maxCount').to.deep.equal([3, 4, 5]);
    expect(positions(recent.serve(2n, none, 1, 1000, 12)), 'bytes: the page stops once past them').to.deep.equal([3, 4, 5]);
    expect(positions(recent.serve(2n, none, 1, 1000, 1)), 'always one').to.deep.equal([3]);
    recent.record(10n, none, 1, read(11, 11, 50));
    expect(recent.held(), 'a big event pushes older ones out').to.deep.equal({ events: 2, bytes: 55 });
    recent.record(11n, none, 1, read(12, 12, 80));
    expect(recent.held(), 'one bigger than the bound is not kept').to.deep.equal({ events: 0, bytes: 0 });
    expect(recent.serve(11n, none, 1, 1000, 1000)).to.equal(null);
  });

  it('serves an event read with other types shallow only when its type is read the same way', () => {
    const recent = new RecentEvents({ events: 100, bytes: 10_000 });
    const chunks = new Set(['Chunk']);
    const other = new Set(['Chunk', 'Plan']);
    recent.record(0n, chunks, 1, [...read(1, 2), ...read(3, 3, 10, 'Chunk'), ...read(4, 5)]);
    expect(positions(recent.serve(0n, chunks, 1, 1000, 10_000))).to.deep.equal([1, 2, 3, 4, 5]);
    expect(positions(recent.serve(0n, other, 1, 1000, 10_000)), 'Chunk is shallow for both').to.deep.equal([1, 2, 3, 4, 5]);
    expect(positions(recent.serve(0n, none, 1, 1000, 10_000)), 'the reader wants Chunk whole: stops before it').to.deep.equal([1, 2]);
    expect(recent.serve(2n, none, 1, 1000, 10_000), 'and reads it itself').to.equal(null);
    expect(positions(recent.serve(3n, none, 1, 1000, 10_000))).to.deep.equal([4, 5]);
  });

  it('knows the end only for readers that have seen no notification past the one its empty read began at', () => {
    const recent = new RecentEvents({ events: 100, bytes: 10_000 });
    recent.record(0n, none, 1, read(1, 3));
    recent.record(3n, none, 7, []);
    expect(recent.serve(3n, none, 7, 1000, 10_000)).to.deep.equal([]);
    expect(recent.serve(3n, none, 6, 1000, 10_000), 'a reader that saw less').to.deep.equal([]);
    expect(recent.serve(3n, none, 8, 1000, 10_000), 'a notification since: read').to.equal(null);
    recent.record(3n, none, 5, []);
    expect(recent.serve(3n, none, 7, 1000, 10_000), 'an older empty read does not move it back').to.deep.equal([]);
    recent.clear();
    expect(recent.serve(3n, none, 7, 1000, 10_000)).to.equal(null);
  });
});
