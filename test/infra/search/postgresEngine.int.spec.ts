import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { createKnex } from '../../../infra/postgres/database';
import { PostgresSearchEngine } from '../../../infra/search/postgres';
import {
  DEFAULT_SEARCH_SETTINGS, MappingNeedsReindex, OperationNotSupported, SEARCH_TYPES, SearchUnavailable, type Clause, type SearchRequest,
} from '../../../services/shared/search';
import { EMBEDDED_LOCALE, createTestDatabase, cutConnections, restoreConnections, type TestDatabase } from '../../support/database';
import { describeSearchEngineContract } from './engineContract';
import { sampleDocuments, searchDocument } from './documents';

describe('PostgreSQL search engine', () => {
  let db: TestDatabase;
  let knex: Knex;
  before(async () => {
    db = await createTestDatabase('search');
    knex = createKnex(db.url, 8);
  });
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  const settings = (over: Partial<typeof DEFAULT_SEARCH_SETTINGS> = {}) =>
    ({ ...DEFAULT_SEARCH_SETTINGS, indexPrefix: `t${randomBytes(3).toString('hex')}_`, bulkSize: 7, ...over });

  /** Drops every table and view of a prefix. */
  async function dropPrefix(prefix: string) {
    const { rows } = await knex.raw<{ rows: { name: string; kind: string }[] }>(
      `SELECT c.relname AS name, c.relkind AS kind FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'v') AND starts_with(c.relname, ?)`, [prefix]);
    for (const r of rows.filter((x) => x.kind === 'v')) await knex.raw(`DROP VIEW IF EXISTS "${r.name}"`);
    for (const r of rows.filter((x) => x.kind === 'r')) await knex.raw(`DROP TABLE IF EXISTS "${r.name}" CASCADE`);
  }

  describeSearchEngineContract('postgres', async () => {
    const s = settings();
    return { engine: new PostgresSearchEngine(knex, s), cleanup: () => dropPrefix(s.indexPrefix) };
  });

  describe('on a database with the embedded server\'s locale (LC_CTYPE C)', () => {
    // The text search parser's character classes follow LC_CTYPE: the contract (dotted names found
    // by their parts, stems, highlights) must hold on the embedded default as on a UTF-8 locale.
    let cdb: TestDatabase;
    let cknex: Knex;
    before(async () => {
      cdb = await createTestDatabase('searchc', EMBEDDED_LOCALE);
      cknex = createKnex(cdb.url, 4);
      const { rows } = await cknex.raw<{ rows: { ctype: string }[] }>('SELECT datctype AS ctype FROM pg_database WHERE datname = current_database()');
      expect(rows[0].ctype).to.equal('C');
    });
    after(async () => {
      await cknex?.destroy();
      await cdb?.drop();
    });
    describeSearchEngineContract('postgres, LC_CTYPE C', async () => {
      const s = settings();
      return { engine: new PostgresSearchEngine(cknex, s), cleanup: async () => undefined };
    });
  });

  describe('PostgreSQL specifics', () => {
    const all = (over: Partial<SearchRequest> = {}): SearchRequest =>
      ({ types: SEARCH_TYPES, query: { kind: 'all' }, filter: [], sort: [], highlight: [], from: 0, size: 10, ...over });

    /** A test on an engine with a live version 1 holding the sample corpus, under a prefix of its own (dropped after). */
    const withCorpus = async (test: (engine: PostgresSearchEngine, prefix: string) => Promise<void>) => {
      const s = settings();
      const engine = new PostgresSearchEngine(knex, s);
      try {
        await engine.ensureVersion(1);
        await engine.switchAlias(1);
        await engine.write(1, { upsert: sampleDocuments, remove: [] });
        await test(engine, s.indexPrefix);
      } finally {
        await dropPrefix(s.indexPrefix);
      }
    };

    it('refuses a prefix that is not [a-z0-9_] (it names tables)', () => {
      for (const indexPrefix of ['a"; DROP TABLE x; --', 'Upper_', 'a-b', 'a b', 'x'.repeat(41), 'é_']) {
        expect(() => new PostgresSearchEngine(knex, settings({ indexPrefix })), indexPrefix).to.throw(/prefix/);
      }
      expect(() => new PostgresSearchEngine(knex, settings({ indexPrefix: '' }))).not.to.throw();
    });

    it('lays out one table per version, a view as the alias, GIN indexes on each tsvector; a search uses them', async () => {
      const s = settings();
      const engine = new PostgresSearchEngine(knex, s);
      try {
        await engine.ensureVersion(1);
        await engine.write(1, { upsert: sampleDocuments, remove: [] });
        await engine.switchAlias(1);
        const { rows } = await knex.raw<{ rows: { indexdef: string }[] }>('SELECT indexdef FROM pg_indexes WHERE tablename = ?', [`${s.indexPrefix}search_v1`]);
        const gin = rows.map((r) => r.indexdef).filter((d) => d.includes('USING gin'));
        expect(gin.join('\n')).to.include('title_tsv').and.include('description_tsv').and.include('content_tsv').and.include('custom_tsv').and.include('(tags)');
        const { rows: views } = await knex.raw<{ rows: { definition: string }[] }>('SELECT definition FROM pg_views WHERE viewname = ?', [`${s.indexPrefix}search`]);
        expect(views[0].definition).to.include(`${s.indexPrefix}search_v1`);
        const { rows: weights } = await knex.raw<{ rows: { t: string }[] }>(`SELECT title_tsv::text AS t FROM "${s.indexPrefix}search_v1" WHERE id = 'c1'`);
        expect(weights[0].t).to.match(/'login':1A/);
        // Enough rows for the planner to prefer the index, then check it does.
        await engine.write(1, { upsert: Array.from({ length: 3000 }, (_, i) => searchDocument('comments', `n${i}`, { title: `Note ${i} about release planning` })), remove: [] });
        await knex.raw(`ANALYZE "${s.indexPrefix}search_v1"`);
        const { rows: plan } = await knex.raw<{ rows: { 'QUERY PLAN': string }[] }>(
          `EXPLAIN SELECT id FROM "${s.indexPrefix}search" d WHERE d.title_tsv @@ plainto_tsquery('english', 'credentials')`);
        expect(plan.map((p) => p['QUERY PLAN']).join('\n')).to.match(/Bitmap Index Scan on .*title_tsv/);
      } finally {
        await dropPrefix(s.indexPrefix);
      }
    });

    it('values with quotes, backslashes, % and _ are bound, never written into SQL; a hostile query is just words', async () => {
      const s = settings();
      const engine = new PostgresSearchEngine(knex, s);
      try {
        await engine.ensureVersion(1);
        await engine.switchAlias(1);
        const odd = "x'); DROP TABLE pg_class; --\\%_?$1 ::text";
        await engine.write(1, { upsert: [searchDocument('comments', odd, { title: odd, tags: [odd], folder: odd, projectId: odd })], remove: [] }, { [odd]: odd });
        expect(await engine.readCheckpoints(1)).to.deep.equal({ [odd]: odd });
        const queries: Clause[] = [
          { kind: 'terms', field: 'tags', values: [odd] }, { kind: 'terms', field: 'id', values: [odd] },
          { kind: 'prefix', field: 'folder', value: odd.slice(0, 12) }, { kind: 'prefix', field: 'projectId', value: "x')" },
          { kind: 'text', query: odd, fields: [{ field: 'title', boost: 1 }], operator: 'and', phrase: false },
        ];
        for (const query of queries) {
          const r = await engine.search(all({ query }));
          expect(r.hits.map((h) => h.id), JSON.stringify(query)).to.deep.equal([odd]);
        }
        expect((await engine.search(all({ query: { kind: 'prefix', field: 'folder', value: 'x%' } }))).total).to.equal(0);
        expect((await engine.search(all({ query: { kind: 'prefix', field: 'folder', value: 'x_' } }))).total).to.equal(0);
        expect((await engine.search(all({ query: { kind: 'prefix', field: 'title', value: "x'):*|!(" } }))).total).to.be.a('number');
        await engine.write(1, { upsert: [], remove: [{ type: 'comments', id: odd }] });
        expect(await engine.count(1, 'comments')).to.equal(0);
      } finally {
        await dropPrefix(s.indexPrefix);
      }
    });

    it('stems as documented: test/tests/testing, fail/failed/failing, login/logins; stop words dropped', async () => {
      const { rows } = await knex.raw<{ rows: { v: string }[] }>(
        "SELECT to_tsvector('english', 'test tests testing fail failed failing failure login logins the a of') AS v");
      expect(rows[0].v).to.equal("'fail':4,5,6 'failur':7 'login':8,9 'test':1,2,3");
    });

    it('a NUL character in a document is dropped (jsonb refuses it), the rest indexed', async () => {
      const s = settings();
      const engine = new PostgresSearchEngine(knex, s);
      try {
        await engine.ensureVersion(1);
        await engine.switchAlias(1);
        await engine.write(1, { upsert: [searchDocument('failures', 'nul', { title: 'binary\u0000garbage in output', content: 'x\u0000y' })], remove: [] });
        const r = await engine.search(all({ query: { kind: 'text', query: 'output', fields: [{ field: 'title', boost: 1 }], operator: 'or', phrase: false } }));
        expect(r.hits[0].document.title).to.equal('binarygarbage in output');
      } finally {
        await dropPrefix(s.indexPrefix);
      }
    });

    it('a database that refuses connections: SearchUnavailable within the request timeout; works again once it is back', async () => {
      const other = await createTestDatabase('searchdown');
      const otherKnex = createKnex(other.url, 2, { warn: () => undefined, error: () => undefined });
      const s = settings({ requestTimeoutMs: 1500 });
      const engine = new PostgresSearchEngine(otherKnex, s);
      try {
        await engine.ensureVersion(1);
        await engine.switchAlias(1);
        await cutConnections(other, null);
        for (const attempt of [
          () => engine.search(all()),
          () => engine.write(1, { upsert: [searchDocument('comments', 'a')], remove: [] }, { search: '1' }),
          () => engine.readCheckpoints(1),
          () => engine.stats(),
        ]) {
          const started = Date.now();
          const error = await attempt().then(() => null, (e: unknown) => e);
          expect(error).to.be.instanceOf(SearchUnavailable);
          expect((error as SearchUnavailable).engine).to.equal('postgres');
          expect(Date.now() - started).to.be.below(1500 + 500);
        }
        await restoreConnections(other);
        await engine.write(1, { upsert: [searchDocument('comments', 'a')], remove: [] }, { search: '1' });
        expect(await engine.readCheckpoints(1)).to.deep.equal({ search: '1' });
      } finally {
        await otherKnex.destroy();
        await other.drop();
      }
    });

    it('administration: force merge is VACUUM (ANALYZE) (dead rows reclaimed); cache clear and refresh are not supported, asking nothing', () => withCorpus(async (engine, prefix) => {
      await engine.write(1, { upsert: sampleDocuments.map((d) => ({ ...d, title: `${d.title}!` })), remove: [] });
      const table = `${prefix}search_v1`;
      const merged = await engine.forceMerge();
      expect(merged.targets).to.deep.equal([table, `${prefix}search_checkpoints`]);
      expect(merged.details.statement).to.equal('VACUUM (ANALYZE)');
      const { rows } = await knex.raw<{ rows: { vacuumed: Date | null; analysed: Date | null }[] }>(
        'SELECT last_vacuum AS vacuumed, last_analyze AS analysed FROM pg_stat_user_tables WHERE relname = ?', [table]);
      expect(rows[0].vacuumed, 'VACUUM ran').to.be.instanceOf(Date);
      expect(rows[0].analysed, 'ANALYZE ran').to.be.instanceOf(Date);
      expect((merged.details.deadTuples as Record<string, { dead: number; live: number }>)[table]).to.deep.equal({ dead: 0, live: sampleDocuments.length, lastVacuum: rows[0].vacuumed!.toISOString() });
      for (const [operation, name] of [[() => engine.clearCache(), 'cache-clear'], [() => engine.refreshAll(), 'refresh']] as const) {
        const error = await operation().then(() => null, (e: unknown) => e);
        expect(error).to.be.instanceOf(OperationNotSupported);
        expect(error).to.include({ engine: 'postgres', operation: name });
      }
    }));

    it('administration: mapping update recreates a missing index and rebuilds them all; a missing column needs a reindex and changes nothing', () => withCorpus(async (engine, prefix) => {
      const indexes = async () => (await knex.raw<{ rows: { name: string }[] }>('SELECT indexname AS name FROM pg_indexes WHERE tablename = ? ORDER BY 1', [`${prefix}search_v1`])).rows.map((r) => r.name);
      const all = await indexes();
      await knex.raw(`DROP INDEX "${prefix}search_v1_content_tsv"`);
      const updated = await engine.updateMapping();
      expect(updated.targets).to.deep.equal([`${prefix}search_v1`]);
      expect(updated.details).to.deep.equal({ statement: 'REINDEX TABLE CONCURRENTLY', indexesCreated: [`${prefix}search_v1_content_tsv`] });
      expect(await indexes()).to.deep.equal(all);
      await knex.raw(`DROP INDEX "${prefix}search_v1_content_tsv"`);
      // (The alias view reads every column: it goes with it.)
      await knex.raw(`ALTER TABLE "${prefix}search_v1" DROP COLUMN branch CASCADE`);
      const error = await engine.updateMapping().then(() => null, (e: unknown) => e);
      expect(error).to.be.instanceOf(MappingNeedsReindex);
      expect((error as MappingNeedsReindex).conflicts).to.deep.equal([`${prefix}search_v1: column branch is missing`]);
      expect(await indexes(), 'nothing changed').to.deep.equal(all.filter((n) => !n.endsWith('content_tsv')));
    }));

    it('administration: the alias (view) dropped by hand is repaired by createMissingIndices; health and the one node tell what PostgreSQL knows', () => withCorpus(async (engine, prefix) => {
      await knex.raw(`DROP VIEW "${prefix}search"`);
      expect(await engine.createMissingIndices()).to.deep.equal({ version: 1, created: [], aliasesRepaired: SEARCH_TYPES.map((t) => engine.aliasOf(t)) });
      expect((await engine.search(all())).total).to.equal(sampleDocuments.length);
      const health = await engine.clusterHealth();
      expect(health).to.deep.include({ status: 'green', nodes: 1, shards: null });
      expect(health.details.databaseSizeBytes).to.be.a('number').above(0);
      expect(Object.keys(health.details.tables as object)).to.have.members([`${prefix}search_v1`, `${prefix}search_versions`, `${prefix}search_checkpoints`]);
      let [node] = await engine.nodeStats();
      expect(node).to.deep.include({ heap: null, disk: null, searchTotal: null, documents: sampleDocuments.length });
      // Each connection reports its row counts to the statistics within seconds, not at commit.
      for (const deadline = Date.now() + 20_000; node.indexingTotal! < sampleDocuments.length && Date.now() < deadline;) {
        await new Promise((resolve) => setTimeout(resolve, 250));
        [node] = await engine.nodeStats();
      }
      expect(node.indexingTotal).to.be.at.least(sampleDocuments.length);
    }));

    it('a statement past the request timeout is cancelled: SearchUnavailable', async () => {
      const s = settings({ requestTimeoutMs: 300 });
      const engine = new PostgresSearchEngine(knex, s);
      try {
        await engine.ensureVersion(1);
        await engine.switchAlias(1);
        // Holds the view's lock: the search waits behind it until its statement timeout.
        const blocker = await knex.transaction();
        await blocker.raw(`LOCK TABLE "${s.indexPrefix}search_v1" IN ACCESS EXCLUSIVE MODE`);
        const started = Date.now();
        const error = await engine.search(all()).then(() => null, (e: unknown) => e);
        await blocker.rollback();
        expect(error).to.be.instanceOf(SearchUnavailable);
        expect(Date.now() - started).to.be.below(300 + 400);
      } finally {
        await dropPrefix(s.indexPrefix);
      }
    });
  });
});
