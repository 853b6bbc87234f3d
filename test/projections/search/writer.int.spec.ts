import { expect } from 'chai';
import { indexEvents } from '../../../projections/search/writer';
import { BulkWriteFailed, SearchUnavailable, type SearchEngine } from '../../../services/shared/search';
import { startTestApp, type TestApp } from '../../support/app';
import { buildWorld, type World } from './world';
import { postgresEngine, quietLogger, wrapWrites } from './support';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * indexEvents with several pages of a batch read and written at once (`writesAtOnce`, which the
 * indexer raises while the log is quiet): every document written, the checkpoint only after every
 * page; a page that fails fails the batch once the others ended; refused documents recorded in
 * the pages' order. Against PostgreSQL full-text search in a test app's database.
 */
describe('search writer: pages written at once', function () {
  this.timeout(120_000);
  let app: TestApp;
  let world: World;
  let engine: SearchEngine;
  let version = 0;
  const caseIds: number[] = [];

  before(async () => {
    app = await startTestApp();
    world = await buildWorld(app);
    engine = postgresEngine(app);
    for (let i = 0; i < 9; i++) {
      caseIds.push((await world.model('repositoryCase', 'create', { data: { title: `Paged ${i}`, project: world.connect(world.ids.project) } })).id);
    }
  });
  after(() => app.stop());

  /** A fresh live version, and the events that created the cases above (9 cases: 5 pages of 2). */
  async function fresh(): Promise<{ version: number; events: Awaited<ReturnType<TestApp['deps']['store']['readAll']>> }> {
    version += 1;
    await engine.ensureVersion(version);
    await engine.switchAlias(version);
    const wanted = new Set(caseIds.map(String));
    const events = (await app.deps.store.readAll()).filter((e) => e.type === 'RepositoryCaseCreated' && wanted.has(String((e.data as { caseId?: unknown }).caseId)));
    expect(events).to.have.length(caseIds.length);
    return { version, events };
  }

  /** The engine's writes, counted: how many run at once (each held `holdMs`), and the order they started and ended in. */
  function counting(holdMs: (ops: Parameters<SearchEngine['write']>[1]) => number, fail?: (ops: Parameters<SearchEngine['write']>[1]) => Error | null) {
    const seen = { running: 0, most: 0, log: [] as string[] };
    const wrapped = wrapWrites(engine, async (real, v, ops, checkpoints) => {
      const name = checkpoints ? 'checkpoint' : ops.upsert.map((d) => d.title).join('+');
      seen.running += 1;
      seen.most = Math.max(seen.most, seen.running);
      seen.log.push(`start ${name} (${seen.running - 1} running)`);
      try {
        await sleep(holdMs(ops));
        const error = fail?.(ops) ?? null;
        if (error) throw error;
        return await real(v, ops, checkpoints);
      } finally {
        seen.running -= 1;
        seen.log.push(`end ${name}`);
      }
    });
    return { seen, wrapped };
  }

  it('two pages at a time: every document once, the checkpoint written alone after the last page', async () => {
    const { version: v, events } = await fresh();
    const { seen, wrapped } = counting(() => 50);
    const written = await indexEvents({ engine: wrapped, knex: app.deps.knex, logger: quietLogger(), bulkSize: 2, writesAtOnce: () => 2 }, v, events, '1', { search: '1' });
    expect(written).to.equal(caseIds.length);
    expect(seen.most, seen.log.join(', ')).to.equal(2);
    expect(seen.log.at(-2)).to.equal('start checkpoint (0 running)');
    expect((await engine.readCheckpoints(v)).search).to.equal('1');
    const { hits } = await engine.search({ types: ['repository_cases'], query: { kind: 'all' }, filter: [], sort: [{ field: 'id', order: 'asc' }], highlight: [], from: 0, size: 100 });
    expect(hits.map((h) => Number(h.id)).filter((id) => caseIds.includes(id)).sort((a, b) => a - b)).to.deep.equal(caseIds);
  });

  it('one at a time when asked so (a log that grows)', async () => {
    const { version: v, events } = await fresh();
    const { seen, wrapped } = counting(() => 20);
    await indexEvents({ engine: wrapped, knex: app.deps.knex, logger: quietLogger(), bulkSize: 2, writesAtOnce: () => 1 }, v, events, '1', { search: '1' });
    expect(seen.most, seen.log.join(', ')).to.equal(1);
  });

  it('a page that fails (the engine away) fails the batch once the page beside it ended, and no page starts after it; the checkpoint stays', async () => {
    const { version: v, events } = await fresh();
    // The first page is slow; the second fails at once.
    const { seen, wrapped } = counting((ops) => (ops.upsert.some((d) => d.title === 'Paged 0') ? 300 : 10),
      (ops) => (ops.upsert.some((d) => d.title === 'Paged 2') ? new SearchUnavailable('postgres', new Error('connection refused')) : null));
    const error = await indexEvents({ engine: wrapped, knex: app.deps.knex, logger: quietLogger(), bulkSize: 2, writesAtOnce: () => 2 }, v, events, '1', { search: '1' })
      .then(() => null, (e: Error) => e);
    expect(error).to.be.instanceOf(SearchUnavailable);
    expect(seen.running, 'writes still running when the batch failed').to.equal(0);
    const started = seen.log.filter((l) => l.startsWith('start'));
    expect(started, seen.log.join(', ')).to.have.length(2);
    expect(await engine.readCheckpoints(v)).to.deep.equal({});
  });

  it('documents refused in two pages written at once are recorded in the pages\' order, whichever page ends first', async () => {
    const { version: v, events } = await fresh();
    const refused = new Set(['Paged 1', 'Paged 3']);
    // The first page ends last.
    const { wrapped } = counting((ops) => (ops.upsert.some((d) => d.title === 'Paged 0') ? 300 : 10));
    const refusing = wrapWrites(wrapped, async (real, vv, ops, checkpoints) => {
      const bad = ops.upsert.filter((d) => refused.has(d.title));
      if (bad.length === 0) return real(vv, ops, checkpoints);
      await real(vv, { upsert: ops.upsert.filter((d) => !bad.includes(d)), remove: ops.remove });
      throw new BulkWriteFailed(bad.map((d) => ({ type: d.type, id: d.id, reason: `refused ${d.title}`, status: 400 })));
    });
    await indexEvents({ engine: refusing, knex: app.deps.knex, logger: quietLogger(), bulkSize: 2, writesAtOnce: () => 2 }, v, events, '1', { search: '1' });
    const rows = await app.deps.knex('search_failures').where({ version: v, engine: 'postgres' }).orderBy('id').select('reason');
    expect(rows.map((r) => r.reason)).to.deep.equal(['refused Paged 1', 'refused Paged 3']);
    expect((await engine.readCheckpoints(v)).search).to.equal('1');
  });
});
