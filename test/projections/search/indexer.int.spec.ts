import { expect } from 'chai';
import { expectCompleted } from '../../imports/importClient';
import { startTestApp, type TestApp } from '../../support/app';
import { stopOutcome, waitUntil } from '../../support/wait';
import { rebuildSearch } from '../../../projections/search/rebuild';
import pino from 'pino';
import { startSearchIndexer, type SearchIndexer } from '../../../projections/search/indexer';
import { fanOutPages } from '../../../projections/search/affected';
import { SearchUnavailable, BulkWriteFailed, type SearchEngine } from '../../../services/shared/search';
import { buildWorld, JUNIT, type World } from './world';
import { FAST_RETRY, caughtUp, documents, expected, indexed, postgresEngine, quietLogger, startIndexer, wrapMethod, wrapWrites } from './support';

/**
 * The search indexer on the direct transport against PostgreSQL full-text search
 * (infra/search/postgres.ts), over a test app whose projector keeps the read model: version 1
 * built at start, then the log followed; renames fanned out in bounded writes; failures of an
 * import; its checkpoint in the engine across a stop mid-batch; the engine away and back;
 * refused documents recorded; a rebuild side by side.
 * Slow: 14 tests each with an app, its projector and an indexer following it; some wait for retries with backoff while the engine is away
 */
describe('search indexer (direct transport, PostgreSQL search)', function () {
  this.timeout(180_000);
  let app: TestApp;
  let world: World;
  let engine: SearchEngine;
  let indexer: SearchIndexer | null = null;

  before(async () => {
    app = await startTestApp();
    world = await buildWorld(app);
    engine = postgresEngine(app);
  });
  afterEach(async () => {
    await indexer?.stop();
    indexer = null;
  });
  after(() => app.stop());

  it('builds version 1 from the read model at start, then follows the log: every document, once', async () => {
    expect(await engine.liveVersion()).to.equal(null);
    indexer = startIndexer(app, engine);
    await caughtUp(app, indexer, engine);
    expect(await engine.liveVersion()).to.equal(1);
    expect(indexer.status()).to.deep.include({ state: 'running', version: 1, engine: 'postgres', lastError: null });
    expect(await indexed(engine)).to.deep.equal(await expected(app));
    const cases = await documents(engine, 'repository_cases');
    expect(cases.get(String(world.ids.case))).to.deep.include({ title: 'Pay with a saved card', folder: 'Web / Cart', tags: ['checkout', 'smoke'] });

    // Followed: a new case, a changed one, a deleted comment.
    const added = (await world.model('repositoryCase', 'create', { data: { title: 'Refund a payment', project: world.connect(world.ids.project) } })).id;
    await world.model('repositoryCase', 'update', { where: { id: world.ids.case }, data: { description: 'Now with 3-D Secure', steps: { create: [{ step: 'Confirm the code' }] } } });
    await world.model('comment', 'delete', { where: { id: world.ids.projectComment } });
    await caughtUp(app, indexer, engine);
    const after = await documents(engine, 'repository_cases');
    expect(after.get(String(added))?.title).to.equal('Refund a payment');
    expect(after.get(String(world.ids.case))).to.deep.include({ description: 'Now with 3-D Secure' });
    expect(after.get(String(world.ids.case))?.content).to.contain('Confirm the code');
    expect((await documents(engine, 'comments')).has(String(world.ids.projectComment))).to.equal(false);
    // The checkpoint lives in the engine, at the head.
    expect((await engine.readCheckpoints(1)).search).to.equal(await app.deps.store.headPosition());
    expect(await indexed(engine)).to.deep.equal(await expected(app));
  });

  it('a fan-out hands its ids on a page at a time, read several pages a statement: every id not deleted, once, in order', async () => {
    const made: number[] = [];
    for (let i = 0; i < 7; i++) made.push((await world.model('repositoryCase', 'create', { data: { title: `Fanned ${i}`, project: world.connect(world.ids.project) } })).id);
    await world.model('repositoryCase', 'delete', { where: { id: made[3] } });
    const fanOut = { type: 'repository_cases' as const, where: 'x.project_id = ANY(?::integer[])', bindings: [[world.ids.project]] };
    const all = (await app.deps.knex('repository_cases').where({ project_id: world.ids.project, is_deleted: false }).orderBy('id').select('id')).map((r) => String(r.id));
    expect(all).to.include.members(made.filter((_, i) => i !== 3).map(String)).and.not.include(String(made[3]));
    for (const [pageSize, idsPerRead] of [[2, 3], [2, 4], [3, 3], [1, 1], [100, 2000]]) {
      const pages: string[][] = [];
      for await (const page of fanOutPages(app.deps.knex, fanOut, pageSize, idsPerRead)) pages.push(page);
      expect(pages.flat(), `pages of ${pageSize}, ${idsPerRead} a read`).to.deep.equal(all);
      expect(pages.every((page) => page.length > 0 && page.length <= pageSize)).to.equal(true);
    }
  });

  it('a renamed tag re-indexes the 3 cases that show it, in bounded writes; a moved folder changes its cases\' path', async () => {
    const writes: number[] = [];
    const counting = wrapWrites(engine, async (real, version, ops, checkpoints) => {
      writes.push(ops.upsert.length + ops.remove.length);
      return real(version, ops, checkpoints);
    });
    indexer = startIndexer(app, counting, { bulkSize: 2 });
    await caughtUp(app, indexer, engine);
    const tag = (await world.model('tag', 'create', { data: { name: 'legacy' } })).id;
    const tagged: number[] = [];
    for (const title of ['One', 'Two', 'Three']) {
      tagged.push((await world.model('repositoryCase', 'create', { data: { title, project: world.connect(world.ids.project), folder: world.connect(world.ids.folderB), tags: { connect: [{ id: tag }] } } })).id);
    }
    await caughtUp(app, indexer, engine);
    writes.length = 0;
    await world.model('tag', 'update', { where: { id: tag }, data: { name: 'heritage' } });
    await caughtUp(app, indexer, engine);
    const cases = await documents(engine, 'repository_cases');
    for (const id of tagged) expect(cases.get(String(id))?.tags).to.deep.equal(['heritage']);
    // Pages of bulkSize (2): the 3 cases in 2 writes (the others move checkpoints only: the tag's name claim, the checkpoint after the pages).
    expect(writes.filter((n) => n > 0)).to.deep.equal([2, 1]);
    expect(writes.length).to.be.at.most(4);

    // Folder B moves to the top: its cases' path loses "Web".
    await world.model('repositoryFolder', 'update', { where: { id: world.ids.folderB }, data: { name: 'Basket', parent: { disconnect: true } } });
    await caughtUp(app, indexer, engine);
    const moved = await documents(engine, 'repository_cases');
    for (const id of [...tagged, world.ids.case]) expect(moved.get(String(id))?.folder).to.equal('Basket');
  });

  it('indexes the failures of an imported JUnit file (failed and errored, not passed or skipped)', async () => {
    indexer = startIndexer(app, engine);
    await caughtUp(app, indexer, engine);
    const runId = expectCompleted(await world.upload({ format: 'junit', name: 'Nightly 7' }, [{ name: 'TEST-checkout.xml', content: JUNIT }]));
    await caughtUp(app, indexer, engine);
    const failures = [...(await documents(engine, 'failures')).values()].filter((d) => d.runId === String(runId));
    expect(failures.map((f) => f.status).sort()).to.deep.equal(['Error', 'Failed']);
    expect(failures.find((f) => f.status === 'Failed')).to.deep.include({ title: 'expected 402 but was 200', failureType: 'org.opentest4j.AssertionFailedError' });
    // The import's new cases are indexed too.
    const cases = [...(await documents(engine, 'repository_cases')).values()].map((d) => d.title);
    expect(cases).to.include.members(['pays by card', 'refuses an expired card', 'computes the tax', 'ships abroad']);
    // Renaming the run re-indexes its failures (their description shows it).
    await world.model('testRun', 'update', { where: { id: runId }, data: { name: 'Nightly 7b' } });
    await caughtUp(app, indexer, engine);
    const renamed = [...(await documents(engine, 'failures')).values()].filter((d) => d.runId === String(runId));
    expect(renamed.map((f) => f.description?.endsWith('— Nightly 7b'))).to.deep.equal([true, true]);
  });

  it('a status renamed re-indexes its failures; a status that stops being a failure removes them (a fan-out page answers removals too)', async () => {
    indexer = startIndexer(app, engine, { bulkSize: 1 });
    await caughtUp(app, indexer, engine);
    const runId = expectCompleted(await world.upload({ format: 'junit', name: 'Nightly 8' }, [{ name: 'TEST-checkout.xml', content: JUNIT }]));
    await caughtUp(app, indexer, engine);
    const ofRun = async () => [...(await documents(engine, 'failures')).values()].filter((d) => d.runId === String(runId));
    expect((await ofRun()).map((f) => f.status).sort()).to.deep.equal(['Error', 'Failed']);
    const errorId = Number((await app.deps.knex('statuses').where({ system_name: 'error' }).first('id')).id);
    await world.model('status', 'update', { where: { id: errorId }, data: { name: 'Broken' } });
    await caughtUp(app, indexer, engine);
    expect((await ofRun()).map((f) => f.status).sort()).to.deep.equal(['Broken', 'Failed']);
    // Neither a success nor a failure, completed: a skip. Its results have no failure document any more.
    await world.model('status', 'update', { where: { id: errorId }, data: { isFailure: false } });
    await caughtUp(app, indexer, engine);
    expect((await ofRun()).map((f) => f.status)).to.deep.equal(['Failed']);
  });

  it('stopped mid-batch, its checkpoint stays before the unwritten work; started again, every document is present once', async () => {
    let block: (() => void) | null = null;
    let blocked: (() => void) | null = null;
    const isBlocked = new Promise<void>((r) => (blocked = r));
    const blocking = wrapWrites(engine, async (real, version, ops, checkpoints) => {
      if (ops.upsert.some((d) => d.title === 'Blocked case') && !block) {
        blocked!();
        await new Promise<void>((r) => (block = r));
      }
      return real(version, ops, checkpoints);
    });
    indexer = startIndexer(app, blocking, { bulkSize: 1 });
    await caughtUp(app, indexer, engine);
    const version = (await engine.liveVersion())!;
    const before = (await engine.readCheckpoints(version)).search;
    await world.model('repositoryCase', 'create', { data: { title: 'Blocked case', project: world.connect(world.ids.project) } });
    await world.model('repositoryCase', 'create', { data: { title: 'Next case', project: world.connect(world.ids.project) } });
    await isBlocked;
    const stopping = indexer.stop();
    block!();
    await stopping;
    indexer = null;
    expect((await engine.readCheckpoints(version)).search, 'the checkpoint did not move past the stopped batch').to.equal(before);

    indexer = startIndexer(app, engine);
    await caughtUp(app, indexer, engine);
    expect(await indexed(engine)).to.deep.equal(await expected(app));
    const titles = [...(await documents(engine, 'repository_cases')).values()].map((d) => d.title);
    expect(titles.filter((t) => t === 'Blocked case' || t === 'Next case')).to.have.members(['Blocked case', 'Next case']);
  });

  it('stopped while it reads its checkpoints, before it follows the log: stop() ends, no subscription opened after it', async () => {
    let release: (() => void) | null = null;
    let reading: (() => void) | null = null;
    const isReading = new Promise<void>((r) => (reading = r));
    // The indexer reads its checkpoints once the live version is known, right before it subscribes.
    const slow = wrapMethod(engine, 'readCheckpoints', async (real, version) => {
      if (!release) {
        reading!();
        await new Promise<void>((r) => (release = r));
      }
      return real(version);
    });
    indexer = startIndexer(app, slow);
    await isReading;
    const stopping = indexer.stop();
    release!();
    const ended = await stopOutcome(stopping, 'still stopping after 20 s');
    expect(ended).to.equal('stopped');
    expect(indexer.status().state).to.equal('stopped');
    indexer = null;
    // Nothing follows the log any more: an event appended now reaches no search document.
    await world.model('repositoryCase', 'create', { data: { title: 'After the stop', project: world.connect(world.ids.project) } });
    await new Promise((r) => setTimeout(r, 300));
    const titles = [...(await documents(engine, 'repository_cases')).values()].map((d) => d.title);
    expect(titles).not.to.include('After the stop');
  });

  it('stopped while it reads the live version at start: stop() ends, and nothing asks the engine for its version after it', async () => {
    let release: (() => void) | null = null;
    let reading: (() => void) | null = null;
    const isReading = new Promise<void>((r) => (reading = r));
    let stopped = false;
    let askedAfterStop = 0;
    const slow = wrapMethod(engine, 'liveVersion', async (real) => {
      if (stopped) askedAfterStop++;
      if (!release) {
        reading!();
        await new Promise<void>((r) => (release = r));
      }
      return real();
    });
    indexer = startIndexer(app, slow);
    await isReading;
    const stopping = indexer.stop();
    release!();
    await stopping;
    stopped = true;
    indexer = null;
    // The live version is checked every 3 s while an indexer follows: none may be left checking.
    await new Promise((r) => setTimeout(r, 3500));
    expect(askedAfterStop).to.equal(0);
  });

  it('stopped while it decides its pause after a failed write (the engine away): stop() does not wait the pause out', async () => {
    let release: (() => void) | null = null;
    let deciding: (() => void) | null = null;
    const isDeciding = new Promise<void>((r) => (deciding = r));
    let failedWrite = false;
    const away = wrapMethod(wrapWrites(engine, async (real, version, ops, checkpoints) => {
      if (ops.upsert.some((d) => d.title === 'Paused case')) {
        failedWrite = true;
        throw new SearchUnavailable('postgres', new Error('connection refused'));
      }
      return real(version, ops, checkpoints);
    }), 'liveVersion', async (real) => {
      // After a failed write the indexer asks for the live version (a rebuild may have switched), then pauses.
      if (failedWrite && !release) {
        deciding!();
        await new Promise<void>((r) => (release = r));
      }
      return real();
    });
    indexer = startSearchIndexer({
      engine: away, knex: app.deps.knex, store: app.deps.store, databaseUrl: app.databaseUrl, logger: quietLogger(),
      retry: { budgetMs: 600_000, firstMs: 60_000, maxMs: 60_000 }, bulkSize: 500,
    });
    await caughtUp(app, indexer, engine);
    await world.model('repositoryCase', 'create', { data: { title: 'Paused case', project: world.connect(world.ids.project) } });
    await isDeciding;
    const stopping = indexer.stop();
    release!();
    const ended = await stopOutcome(stopping, 'still waiting out its 60 s pause after 20 s');
    expect(ended).to.equal('stopped');
    indexer = null;
  });

  it('the engine away: retrying with its last error, checkpoint unmoved; back: catches up', async () => {
    let away = true;
    let refused = 0;
    const flaky = wrapWrites(engine, async (real, version, ops, checkpoints) => {
      if (away) {
        refused++;
        throw new SearchUnavailable('postgres', new Error('connect ECONNREFUSED'));
      }
      return real(version, ops, checkpoints);
    });
    away = false;
    indexer = startIndexer(app, flaky);
    await caughtUp(app, indexer, engine);
    const version = (await engine.liveVersion())!;
    const before = (await engine.readCheckpoints(version)).search;
    away = true;
    const id = (await world.model('repositoryCase', 'create', { data: { title: 'Written while away', project: world.connect(world.ids.project) } })).id;
    await waitUntil(() => refused >= 3, 'refused writes');
    expect(indexer.status()).to.deep.include({ state: 'retrying' });
    expect(indexer.status().lastError).to.contain('does not answer');
    expect((await engine.readCheckpoints(version)).search).to.equal(before);
    away = false;
    await caughtUp(app, indexer, engine);
    expect(indexer.status()).to.deep.include({ state: 'running', lastError: null });
    expect((await documents(engine, 'repository_cases')).get(String(id))?.title).to.equal('Written while away');
    expect(await indexed(engine)).to.deep.equal(await expected(app));
  });

  it('a document the engine keeps refusing is recorded in search_failures, and the indexer goes on', async () => {
    let refuse = true;
    const refusing = wrapWrites(engine, async (real, version, ops, checkpoints) => {
      const bad = ops.upsert.filter((d) => refuse && d.title === 'Refused case');
      if (bad.length > 0) {
        await real(version, { upsert: ops.upsert.filter((d) => !bad.includes(d)), remove: ops.remove });
        throw new BulkWriteFailed(bad.map((d) => ({ type: d.type, id: d.id, reason: 'mapper_parsing_exception', status: 400 })));
      }
      return real(version, ops, checkpoints);
    });
    indexer = startIndexer(app, refusing);
    await caughtUp(app, indexer, engine);
    const bad = (await world.model('repositoryCase', 'create', { data: { title: 'Refused case', project: world.connect(world.ids.project) } })).id;
    const good = (await world.model('repositoryCase', 'create', { data: { title: 'Accepted case', project: world.connect(world.ids.project) } })).id;
    await caughtUp(app, indexer, engine);
    const rows = await app.deps.knex('search_failures').where({ doc_id: String(bad) });
    expect(rows).to.have.length(1);
    expect(rows[0]).to.deep.include({ engine: 'postgres', type: 'repository_cases', reason: 'mapper_parsing_exception', resolved_at: null });
    const cases = await documents(engine, 'repository_cases');
    expect(cases.has(String(good))).to.equal(true);
    expect(cases.has(String(bad))).to.equal(false);
    expect(indexer.status().state).to.equal('running');

    // Accepted at its next change: its failure is resolved.
    refuse = false;
    await world.model('repositoryCase', 'update', { where: { id: bad }, data: { description: 'accepted now' } });
    await caughtUp(app, indexer, engine);
    expect((await documents(engine, 'repository_cases')).has(String(bad))).to.equal(true);
    expect((await app.deps.knex('search_failures').where({ doc_id: String(bad) }).first()).resolved_at).to.be.instanceOf(Date);
  });

  it('a write refused as a whole because of one document (a statement PostgreSQL cannot run): that document recorded, the rest written, the indexer goes on', async () => {
    let refuse = true;
    const refusing = wrapWrites(engine, async (real, version, ops, checkpoints) => {
      if (refuse && ops.upsert.some((d) => d.title === 'Too big to index')) {
        throw Object.assign(new Error('string is too long for tsvector (1048576 bytes, max 1048575 bytes)'), { code: '54000' });
      }
      return real(version, ops, checkpoints);
    });
    indexer = startIndexer(app, refusing);
    await caughtUp(app, indexer, engine);
    for (const title of ['Before it', 'Too big to index', 'After it']) await world.model('repositoryCase', 'create', { data: { title, project: world.connect(world.ids.project) } });
    await caughtUp(app, indexer, engine);
    const cases = [...(await documents(engine, 'repository_cases')).values()].map((d) => d.title);
    expect(cases).to.include.members(['Before it', 'After it']);
    expect(cases).not.to.include('Too big to index');
    const rows = await app.deps.knex('search_failures').where({ type: 'repository_cases' }).whereNull('resolved_at').select('doc_id', 'reason');
    expect(rows.map((r) => r.reason)).to.deep.equal(['string is too long for tsvector (1048576 bytes, max 1048575 bytes) (54000)']);
    expect(indexer.status()).to.deep.include({ state: 'running', lastError: null });
    refuse = false;
  });

  it('an error that is not transient fails it: `failed`, logged once at error level with a correlation id, checkpoint unmoved', async () => {
    let broken = false;
    const buggy = wrapWrites(engine, async (real, version, ops, checkpoints) => {
      if (broken) throw new TypeError('Cannot read properties of undefined (reading \'id\')');
      return real(version, ops, checkpoints);
    });
    const lines: Record<string, unknown>[] = [];
    const logger = pino({ level: 'info' }, { write: (line: string) => void lines.push(JSON.parse(line)) });
    let failedCalls = 0;
    indexer = startSearchIndexer({
      engine: buggy, knex: app.deps.knex, store: app.deps.store, databaseUrl: app.databaseUrl, logger, retry: FAST_RETRY, bulkSize: 500, onFailed: () => failedCalls++,
    });
    await caughtUp(app, indexer, engine);
    const version = (await engine.liveVersion())!;
    const before = (await engine.readCheckpoints(version)).search;
    broken = true;
    await world.model('repositoryCase', 'create', { data: { title: 'Never indexed', project: world.connect(world.ids.project) } });
    await waitUntil(() => indexer!.status().state === 'failed', 'the indexer failed', 20_000);
    const status = indexer.status();
    expect(status.lastError).to.contain('Cannot read properties of undefined');
    expect(status.correlationId).to.be.a('string');
    const errors = lines.filter((l) => l.level === 50);
    expect(errors).to.have.length(1);
    expect(errors[0]).to.deep.include({ correlationId: status.correlationId });
    expect(failedCalls).to.equal(1);
    expect((await engine.readCheckpoints(version)).search).to.equal(before);
    await indexer.stop();
    expect(indexer.status().state).to.equal('failed');
    indexer = null;
  });

  it('a rebuild fills version N+1 side by side (search answers from N meanwhile), switches, drops N; the indexer follows N+1', async () => {
    indexer = startIndexer(app, engine);
    await caughtUp(app, indexer, engine);
    const old = (await engine.liveVersion())!;
    // (What the old version holds: the case a test above had refused is not in it.)
    const shown = (await documents(engine, 'repository_cases')).size;
    // At each write into the new version, search still answers from the old one, whole.
    const during: { live: number | null; total: number }[] = [];
    const watching = wrapWrites(engine, async (real, version, ops, checkpoints) => {
      if (version === old + 1 && ops.upsert.length > 0) {
        const hits = await engine.search({ types: ['repository_cases'], query: { kind: 'all' }, filter: [], sort: [], highlight: [], from: 0, size: 1 });
        during.push({ live: await engine.liveVersion(), total: hits.total });
      }
      return real(version, ops, checkpoints);
    });
    const result = await rebuildSearch({ engine: watching, knex: app.deps.knex, logger: quietLogger(), bulkSize: 3 });
    expect(during.length).to.be.greaterThan(3);
    expect(during.every((d) => d.live === old && d.total === shown), JSON.stringify(during)).to.equal(true);
    expect(result.version).to.equal(old + 1);
    expect(await engine.liveVersion()).to.equal(old + 1);
    expect(await engine.versions()).to.deep.equal([old + 1]);
    expect(result.dropped).to.deep.equal([old]);
    await waitUntil(() => indexer!.status().version === old + 1, 'the indexer on the new version', 20_000);
    const id = (await world.model('repositoryCase', 'create', { data: { title: 'After the rebuild', project: world.connect(world.ids.project) } })).id;
    await caughtUp(app, indexer, engine);
    expect((await documents(engine, 'repository_cases')).get(String(id))?.title).to.equal('After the rebuild');
    expect(await indexed(engine)).to.deep.equal(await expected(app));
  });
  it('a first build the engine failed is built again in the same version, not in a new one beside it', async () => {
    const fresh = postgresEngine(app);
    let refusals = 2;
    const flaky = wrapWrites(fresh, async (real, version, ops, checkpoints) => {
      if (refusals > 0) {
        refusals--;
        throw new SearchUnavailable('postgres', new Error('timed out'));
      }
      return real(version, ops, checkpoints);
    });
    indexer = startIndexer(app, flaky);
    await caughtUp(app, indexer, fresh);
    expect(refusals).to.equal(0);
    expect(await fresh.liveVersion()).to.equal(1);
    expect(await fresh.versions()).to.deep.equal([1]);
    expect(await indexed(fresh)).to.deep.equal(await expected(app));
  });
});
