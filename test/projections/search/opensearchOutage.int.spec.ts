import { expect } from 'chai';
import { openSearchEngine } from '../../../infra/search';
import { startSearchIndexer, type SearchIndexer } from '../../../projections/search/indexer';
import type { RetryPolicy } from '../../../services/shared/faults';
import { DEFAULT_SEARCH_SETTINGS, SearchUnavailable, type SearchEngine, type SearchSettings } from '../../../services/shared/search';
import { importingAdmin } from '../../imports/importClient';
import { startTestApp, type TestApp } from '../../support/app';
import { PrivateOpenSearchNode, requirePrivateOpenSearch } from '../../support/opensearchNode';
import { uniqueIndexPrefix } from '../../support/search';
import { waitUntil } from '../../support/wait';
import { documents, quietLogger, wrapWrites } from './support';

const SUITE = 'search indexer: OpenSearch away mid-burst';

/** Cases of the burst, written while the indexer follows; the node is killed once KILL_AFTER of them are indexed. */
const BURST = 300;
const KILL_AFTER = 60;
/** Cases written after the burst, the node still down. */
const EXTRA = 20;
/** Cases written before the second indexer starts, the node down. */
const BEFORE_START = 15;

/** Long enough for a node restart on a busy machine (10–30 s measured, more under load). */
const RETRY: RetryPolicy = { budgetMs: 600_000, firstMs: 100, maxMs: 1000 };
const BULK_SIZE = 10;

/** A word per case that the analyzer keeps as it is (ends in a digit: nothing to stem). */
const wordOf = (i: number) => `zq${String(i).padStart(4, '0')}`;

/**
 * The search indexer against a real OpenSearch node that this suite owns (a private node from the
 * same jars as npm run search:up, on free ports: test/support/opensearchNode.ts), killed with
 * SIGKILL in the middle of a burst of writes and started again on its data: the indexer reports
 * `retrying` with its last error, the checkpoint kept in the engine never passed a document that
 * was not written, and once the node is back it catches up — every case present exactly once.
 * Then the node down before an indexer starts: it retries, and builds its index when the node comes.
 * Slow: starts a private OpenSearch node 3 times (first, after a SIGKILL, after a SIGTERM; a restart measured at 10–30 s) and indexes 335 cases written through the API, in bulks of 10
 */
describe('search indexer: OpenSearch killed mid-burst, started again (a private node)', function () {
  this.timeout(600_000);
  let node: PrivateOpenSearchNode | null = null;
  let app: TestApp;
  let model: Awaited<ReturnType<typeof importingAdmin>>['model'];
  let projectId: number;
  const engines: SearchEngine[] = [];
  let indexer: SearchIndexer | null = null;
  /** Case id → its word, for every case written. */
  const words = new Map<string, string>();
  const timings: Record<string, number> = {};
  /** Opens the first test's write gate (also in afterEach, so a failed test never leaves the indexer held). */
  let openGate = () => {};

  const settings = (url: string, overrides: Partial<SearchSettings> = {}): SearchSettings => ({
    ...DEFAULT_SEARCH_SETTINGS, url, indexPrefix: uniqueIndexPrefix(), requestTimeoutMs: 2000, maxRetries: 1, bulkSize: BULK_SIZE, ...overrides,
  });
  const start = (engine: SearchEngine) => startSearchIndexer({
    engine, knex: app.deps.knex, store: app.deps.store, databaseUrl: app.databaseUrl, logger: quietLogger(), retry: RETRY, bulkSize: BULK_SIZE,
  });

  let written = 0;
  const writeCase = async () => {
    const word = wordOf(written++);
    const created = await model('repositoryCase', 'create', { data: { title: `Outage case ${word}`, project: { connect: { id: projectId } } } });
    words.set(String(created.id), word);
  };
  /** Writes `count` cases, `parallel` at a time. */
  const writeCases = async (count: number, parallel = 3) => {
    let left = count;
    await Promise.all(Array.from({ length: parallel }, async () => {
      while (left > 0) {
        left--;
        await writeCase();
      }
    }));
  };

  /** The log position of each case's creation. */
  const createdAt = async (): Promise<Map<string, bigint>> => {
    const positions = new Map<string, bigint>();
    for (let after = '0'; ;) {
      const page = await app.deps.store.readAll({ after, maxCount: 1000 });
      if (page.length === 0) return positions;
      for (const e of page) if (e.type === 'RepositoryCaseCreated') positions.set(String((e.data as { caseId: number }).caseId), BigInt(e.position));
      after = page[page.length - 1].position;
    }
  };

  const caughtUp = async (engine: SearchEngine, current: SearchIndexer) => {
    const head = BigInt(await app.deps.store.headPosition());
    await waitUntil(() => current.status().state === 'running' && BigInt(current.status().position) >= head, `the indexer at ${head}`, 240_000,
      () => JSON.stringify(current.status()));
    await engine.refresh();
  };

  /** Every case present exactly once with its title; a sample found by its word, once. */
  const everyCaseOnce = async (engine: SearchEngine) => {
    const version = (await engine.liveVersion())!;
    expect(await engine.count(version, 'repository_cases')).to.equal(words.size);
    const indexed = await documents(engine, 'repository_cases');
    expect([...indexed.keys()].sort()).to.deep.equal([...words.keys()].sort());
    for (const [id, word] of words) expect(indexed.get(id)?.title, id).to.equal(`Outage case ${word}`);
    // A terms aggregation over the documents' ids: each id counted once.
    const perId = (await engine.facets({ types: ['repository_cases'], query: { kind: 'all' }, filter: [], fields: ['id'], size: 10_000 })).id;
    expect(Object.keys(perId).length).to.equal(words.size);
    expect(Object.entries(perId).filter(([, n]) => n !== 1), 'ids counted more than once').to.deep.equal([]);
    const all = [...words.entries()];
    const sample = all.filter((_, i) => i % Math.ceil(all.length / 25) === 0 || i === all.length - 1);
    for (const [id, word] of sample) {
      const found = await engine.search({
        types: ['repository_cases'], query: { kind: 'text', query: word, fields: [{ field: 'title', boost: 1 }], operator: 'or', phrase: false },
        filter: [], sort: [], highlight: [], from: 0, size: 10,
      });
      expect({ word, total: found.total, ids: found.hits.map((h) => h.id) }).to.deep.equal({ word, total: 1, ids: [id] });
    }
  };

  before(async function () {
    requirePrivateOpenSearch(this, SUITE);
    node = await PrivateOpenSearchNode.create();
    app = await startTestApp();
    ({ model, projectId } = await importingAdmin(app, 'Outage'));
    timings.firstStartMs = await node.start();
  });

  afterEach(async () => {
    openGate();
    await indexer?.stop();
    indexer = null;
  });

  after(async () => {
    // Also when a test failed half-way: the node killed and its directory removed, whatever else fails.
    try {
      await indexer?.stop();
      for (const engine of engines) await engine.close().catch(() => undefined);
    } finally {
      await node?.remove();
      await app?.stop();
      if (Object.keys(timings).length) console.log(`      timings (ms): ${JSON.stringify(timings)}`);
    }
  });

  it('killed (SIGKILL) mid-burst: retrying with its last error, checkpoint kept and never past an unwritten case; started again: every case once', async () => {
    const real = await openSearchEngine(settings(node!.url), { knex: app.deps.knex, logger: quietLogger() });
    engines.push(real);
    expect(real.engine).to.equal('opensearch');
    // Writes pass through a gate, open but for one moment: after the restart, while what the kill
    // left is read (the engine behind it is the real one; nothing else is changed).
    let gate: Promise<void> = Promise.resolve();
    const engine = wrapWrites(real, async (write, ...args) => {
      await gate;
      return write(...args);
    });
    indexer = start(engine);
    const current = indexer;
    await caughtUp(engine, current);
    // Version 1, unless creating its indices outran the short request timeout on a busy machine (a retry builds the next).
    const version = (await engine.liveVersion())!;
    expect(version).to.be.a('number');
    const base = current.status().documentsWritten;

    // The burst, in the background; the node killed once KILL_AFTER of its cases are indexed.
    const began = Date.now();
    const burst = writeCases(BURST);
    let burstDone = false;
    void burst.then(() => (burstDone = true), () => undefined);
    await waitUntil(() => current.status().documentsWritten - base >= KILL_AFTER || burstDone, `${KILL_AFTER} cases indexed`, 180_000,
      () => JSON.stringify(current.status()));
    const before = (await engine.readCheckpoints(version)).search;
    await node!.kill('SIGKILL');
    timings.killedAfterMs = Date.now() - began;
    const writtenAtKill = words.size;
    const indexedAtKill = current.status().documentsWritten - base;
    expect(burstDone, 'the burst was still being written when the node was killed').to.equal(false);
    expect(indexedAtKill, 'some of the burst was indexed before the kill').to.be.at.least(KILL_AFTER);

    // Away: retrying with its last error, for as long as the node is down (not failed).
    await waitUntil(() => current.status().state === 'retrying', 'the indexer retrying', 60_000, () => JSON.stringify(current.status()));
    expect(current.status().lastError).to.be.a('string').and.contain('does not answer');
    await burst;
    await writeCases(EXTRA);
    timings.writtenWhileDown = words.size - writtenAtKill;
    expect(words.size).to.equal(BURST + EXTRA);
    expect(node!.running).to.equal(false);
    expect(current.status()).to.deep.include({ state: 'retrying' });
    const head = BigInt(await app.deps.store.headPosition());
    expect(BigInt(current.status().position) < head, 'the indexer has not applied the cases written while the node was down').to.equal(true);

    // Started again on its data, the indexer's writes held back until what the kill left is read.
    gate = new Promise((resolve) => (openGate = resolve));
    timings.restartMs = await node!.start();
    const kept = (await engine.readCheckpoints(version)).search;
    expect(kept, 'the checkpoint survived the kill').to.be.a('string');
    expect(BigInt(kept) >= BigInt(before), `checkpoint ${kept} kept (it was ${before} before the kill)`).to.equal(true);
    // The checkpoint never passed a case that was not written: every case created at or before it is there.
    await engine.refresh();
    const present = await documents(engine, 'repository_cases');
    const positions = await createdAt();
    const missing = [...positions].filter(([id, at]) => at <= BigInt(kept) && !present.has(id)).map(([id]) => id);
    expect(missing, `cases at or before checkpoint ${kept} missing from the engine`).to.deep.equal([]);
    timings.casesIndexedAtRestart = [...present.keys()].filter((id) => words.has(id)).length;
    expect(timings.casesIndexedAtRestart, 'not every case was indexed before the kill').to.be.below(BURST + EXTRA);
    openGate();

    const back = Date.now();
    await caughtUp(engine, current);
    timings.catchUpMs = Date.now() - back;
    expect(current.status()).to.deep.include({ state: 'running', lastError: null, version });
    expect((await engine.readCheckpoints(version)).search).to.equal(await app.deps.store.headPosition());
    await everyCaseOnce(engine);
  });

  it('down before the indexer starts: starting, then retrying; the node started: the index is built and every case is there once', async () => {
    await node!.kill('SIGTERM');
    // Nothing answers: no engine to detect.
    const refused = await openSearchEngine(settings(node!.url), { knex: app.deps.knex, logger: quietLogger() }).then(() => null, (e: unknown) => e);
    expect(refused).to.be.instanceOf(SearchUnavailable);
    const engine = await openSearchEngine(settings(node!.url, { engine: 'opensearch' }), { knex: app.deps.knex, logger: quietLogger() });
    engines.push(engine);
    indexer = start(engine);
    const current = indexer;
    expect(current.status().state).to.be.oneOf(['starting', 'retrying']);
    await waitUntil(() => current.status().state === 'retrying', 'the indexer retrying', 60_000, () => JSON.stringify(current.status()));
    expect(current.status()).to.deep.include({ version: null });
    expect(current.status().lastError).to.be.a('string').and.contain('does not answer');
    await writeCases(BEFORE_START);
    expect(current.status().state).to.equal('retrying');

    timings.secondStartMs = await node!.start();
    const back = Date.now();
    await caughtUp(engine, current);
    timings.secondCatchUpMs = Date.now() - back;
    // The first build may have been tried more than once while the node was starting (each try a new
    // version): the live one is the indexer's, and no other is left behind.
    const live = (await engine.liveVersion())!;
    timings.secondVersion = live;
    expect(current.status()).to.deep.include({ state: 'running', lastError: null, version: live });
    expect(await engine.versions()).to.deep.equal([live]);
    expect(words.size).to.equal(BURST + EXTRA + BEFORE_START);
    await everyCaseOnce(engine);
  });
});
