import { randomUUID } from 'node:crypto';
import { expect } from 'chai';
import type { EventEnvelope, EventMetadata } from '../../contracts/envelope';
import { ConcurrencyError } from '../../services/shared/errors';
import type { EventStore } from '../../services/shared/eventStore';

export const meta: EventMetadata = {
  actor: { userId: 1, via: 'system' },
  correlationId: 'c-1',
  causationId: null,
};

export const ev = (n: number) => ({ type: 'Thing', data: { n } });

/** Collects `count` events from a subscription, then closes it. */
export async function take(sub: AsyncIterable<EventEnvelope> & { close(): Promise<void> }, count: number) {
  const seen: EventEnvelope[] = [];
  if (count === 0) return seen;
  for await (const e of sub) {
    seen.push(e);
    if (seen.length >= count) break;
  }
  await sub.close();
  return seen;
}

/**
 * The event store contract: every adapter of the EventStore port must pass it.
 * `open` gives a fresh, empty store for each test.
 */
export function eventStoreContract(open: () => Promise<{ store: EventStore; dispose(): Promise<void> }>) {
  let store: EventStore;
  let dispose: () => Promise<void>;
  const s = () => `thing-${randomUUID()}`;

  beforeEach(async () => {
    ({ store, dispose } = await open());
  });
  afterEach(async () => {
    await store.close();
    await dispose();
  });

  describe('append', () => {
    it('writes to a new stream with no-stream expected, revisions from 0', async () => {
      const id = s();
      const r = await store.append(id, [ev(1), ev(2)], { expectedRevision: 'no-stream', metadata: meta });
      expect(r.nextRevision).to.equal(1n);
      const events = await store.readStream(id);
      expect(events.map((e) => e.revision)).to.deep.equal(['0', '1']);
      expect(events.map((e) => e.data)).to.deep.equal([{ n: 1 }, { n: 2 }]);
      expect(events[0].metadata).to.deep.equal(meta);
      expect(events[0].streamId).to.equal(id);
      expect(events[0].schemaVersion).to.equal(1);
      expect(events[0].id).to.match(/^[0-9a-f-]{36}$/);
      expect(new Date(events[0].recordedAt).getTime()).to.be.greaterThan(0);
    });

    it('refuses no-stream when the stream exists', async () => {
      const id = s();
      await store.append(id, [ev(1)], { expectedRevision: 'no-stream', metadata: meta });
      const err = await store.append(id, [ev(2)], { expectedRevision: 'no-stream', metadata: meta }).catch((e) => e);
      expect(err).to.be.instanceOf(ConcurrencyError);
      expect((await store.readStream(id)).length).to.equal(1);
    });

    it('appends at the exact expected revision and refuses a stale one', async () => {
      const id = s();
      await store.append(id, [ev(1)], { expectedRevision: 'no-stream', metadata: meta });
      await store.append(id, [ev(2)], { expectedRevision: 0n, metadata: meta });
      const err = await store.append(id, [ev(3)], { expectedRevision: 0n, metadata: meta }).catch((e) => e);
      expect(err).to.be.instanceOf(ConcurrencyError);
      expect(err.code).to.equal('concurrency-conflict');
      expect((await store.readStream(id)).map((e) => e.data)).to.deep.equal([{ n: 1 }, { n: 2 }]);
    });

    it('refuses an exact revision on a stream that does not exist', async () => {
      const err = await store.append(s(), [ev(1)], { expectedRevision: 0n, metadata: meta }).catch((e) => e);
      expect(err).to.be.instanceOf(ConcurrencyError);
    });

    it('appends with any, whatever the stream holds', async () => {
      const id = s();
      await store.append(id, [ev(1)], { expectedRevision: 'any', metadata: meta });
      const r = await store.append(id, [ev(2)], { expectedRevision: 'any', metadata: meta });
      expect(r.nextRevision).to.equal(1n);
    });

    it('of two concurrent appends at the same revision, exactly one wins', async () => {
      const id = s();
      await store.append(id, [ev(0)], { expectedRevision: 'no-stream', metadata: meta });
      const results = await Promise.allSettled([1, 2, 3, 4].map((n) => store.append(id, [ev(n)], { expectedRevision: 0n, metadata: meta })));
      expect(results.filter((r) => r.status === 'fulfilled')).to.have.length(1);
      expect((await store.readStream(id)).length).to.equal(2);
    });
  });

  describe('reading a stream', () => {
    it('reads forwards and backwards, from a revision, with a limit', async () => {
      const id = s();
      await store.append(id, [1, 2, 3, 4, 5].map(ev), { expectedRevision: 'no-stream', metadata: meta });
      const fwd = await store.readStream(id, { fromRevision: 1n, maxCount: 2 });
      expect(fwd.map((e) => e.data)).to.deep.equal([{ n: 2 }, { n: 3 }]);
      const back = await store.readStream(id, { direction: 'backwards', maxCount: 2 });
      expect(back.map((e) => e.data)).to.deep.equal([{ n: 5 }, { n: 4 }]);
      const backFrom = await store.readStream(id, { direction: 'backwards', fromRevision: 2n });
      expect(backFrom.map((e) => e.revision)).to.deep.equal(['2', '1', '0']);
    });

    it('answers an empty list for a stream that does not exist', async () => {
      expect(await store.readStream(s())).to.deep.equal([]);
    });
  });

  describe('the global log', () => {
    it('reads in position order after a position, and reports its head', async () => {
      const a = s();
      const b = s();
      const first = await store.append(a, [ev(1)], { expectedRevision: 'any', metadata: meta });
      await store.append(b, [ev(2), ev(3)], { expectedRevision: 'any', metadata: meta });
      const last = await store.append(a, [ev(4)], { expectedRevision: 'any', metadata: meta });
      const after = await store.readAll({ after: first.position });
      const mine = after.filter((e) => e.streamId === a || e.streamId === b);
      expect(mine.map((e) => e.data)).to.deep.equal([{ n: 2 }, { n: 3 }, { n: 4 }]);
      const positions = after.map((e) => BigInt(e.position));
      for (let i = 1; i < positions.length; i++) expect(positions[i] > positions[i - 1]).to.equal(true);
      expect(BigInt(await store.headPosition()) >= BigInt(last.position)).to.equal(true);
      const limited = await store.readAll({ after: first.position, maxCount: 1 });
      expect(limited).to.have.length(1);
    });

    it('finds the last position recorded at or before a time (an event by its own recordedAt)', async () => {
      const id = s();
      const before = new Date(Date.now() - 60_000).toISOString();
      const appended: EventEnvelope[] = [];
      for (let n = 1; n <= 3; n++) {
        await store.append(id, [ev(n)], { expectedRevision: n === 1 ? 'no-stream' : BigInt(n - 2), metadata: meta });
        appended.push((await store.readStream(id, { fromRevision: BigInt(n - 1), maxCount: 1 }))[0]);
        await new Promise((r) => setTimeout(r, 15));
      }
      for (const e of appended) expect(await store.positionAt(e.recordedAt), e.recordedAt).to.equal(e.position);
      // Between the second and the third: the second.
      const between = new Date(Date.parse(appended[2].recordedAt) - 1).toISOString();
      expect(await store.positionAt(between)).to.equal(appended[1].position);
      expect(BigInt(await store.positionAt(before)) < BigInt(appended[0].position)).to.equal(true);
      expect(await store.positionAt(new Date(Date.now() + 60_000).toISOString())).to.equal(await store.headPosition());
    });

    it('a subscription catches up, then goes on live', async () => {
      const id = s();
      const start = await store.headPosition();
      await store.append(id, [ev(1), ev(2)], { expectedRevision: 'no-stream', metadata: meta });
      const sub = store.subscribeToAll({ after: start });
      const received = take(sub, 4);
      await new Promise((r) => setTimeout(r, 50));
      await store.append(id, [ev(3)], { expectedRevision: 1n, metadata: meta });
      await store.append(id, [ev(4)], { expectedRevision: 2n, metadata: meta });
      const seen = (await received).filter((e) => e.streamId === id);
      expect(seen.map((e) => e.data)).to.deep.equal([{ n: 1 }, { n: 2 }, { n: 3 }, { n: 4 }]);
    });

    it('many concurrent writers: a live subscriber sees every event exactly once, in position order', async function () {
      this.timeout(120000);
      const writers = 16;
      const perWriter = 40;
      const start = await store.headPosition();
      const sub = store.subscribeToAll({ after: start });
      const total = writers * perWriter;
      const received = take(sub, total);
      const appended: string[] = [];
      await Promise.all(
        Array.from({ length: writers }, async (_, w) => {
          for (let i = 0; i < perWriter; i++) {
            // Half the writers share streams to add concurrency conflicts; those retry.
            const stream = w % 2 === 0 ? `shared-${w % 4}-${start}` : `writer-${w}-${start}`;
            for (;;) {
              try {
                const r = await store.append(stream, [ev(w * 1000 + i)], { expectedRevision: 'any', metadata: meta });
                appended.push(r.position);
                break;
              } catch (e) {
                if (!(e instanceof ConcurrencyError)) throw e;
              }
            }
          }
        }),
      );
      const seen = await received;
      expect(seen).to.have.length(total);
      const positions = seen.map((e) => BigInt(e.position));
      for (let i = 1; i < positions.length; i++) expect(positions[i] > positions[i - 1], `order at ${i}`).to.equal(true);
      expect(new Set(seen.map((e) => e.id)).size).to.equal(total);
      expect(new Set(seen.map((e) => e.position))).to.deep.equal(new Set(appended));
      const values = seen.map((e) => (e.data as { n: number }).n).sort((x, y) => x - y);
      const expected = Array.from({ length: writers }, (_, w) => Array.from({ length: perWriter }, (_, i) => w * 1000 + i)).flat().sort((x, y) => x - y);
      expect(values).to.deep.equal(expected);
    });
  });
}
