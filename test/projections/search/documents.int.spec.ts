import { expect } from 'chai';
import { expectCompleted } from '../../imports/importClient';
import { startTestApp, type TestApp } from '../../support/app';
import { loadDocuments, scanDocuments } from '../../../projections/search/documents';
import { buildWorld, JUNIT, type World } from './world';

/**
 * Search documents as the read model builds them (projections/search/documents.ts), for rows
 * written through the real command path and a real JUnit import: every field of each type, and
 * rows that are deleted, or under something deleted, answered as removals.
 */
describe('search documents from the read model', function () {
  this.timeout(120_000);
  let app: TestApp;
  let world: World;

  before(async () => {
    app = await startTestApp();
    world = await buildWorld(app);
  });
  after(() => app.stop());

  const one = async (type: Parameters<typeof loadDocuments>[1], id: number) => {
    const { upsert, remove } = await loadDocuments(app.deps.knex, type, [String(id)]);
    expect(remove, `${type} ${id} removed`).to.deep.equal([]);
    expect(upsert).to.have.length(1);
    return upsert[0];
  };

  it('a repository case: title, description, steps and expected results, custom fields, tags, folder path, template, state, project, creator, dates', async () => {
    const { ids } = world;
    const doc = await one('repository_cases', ids.case);
    expect(doc).to.deep.include({
      type: 'repository_cases', id: String(ids.case), projectId: String(ids.project), project: 'Payments',
      title: 'Pay with a saved card', description: 'The shopper pays with a card kept on file',
      content: 'Open the basket\nThe basket shows\nChoose the saved card\nThe payment succeeds',
      tags: ['checkout', 'smoke'], folder: 'Web / Cart', template: 'Default', state: 'Draft', creator: 'Admin',
      customFields: [{ name: 'Priority', value: 'High' }], status: null, runId: null, caseId: null, failureType: null,
    });
    expect(Date.parse(doc.createdAt)).to.be.greaterThan(0);
    expect(doc.updatedAt).to.be.a('string');
  });

  it('a test run, a session, a milestone, the project', async () => {
    const { ids } = world;
    expect(await one('test_runs', ids.run)).to.deep.include({
      title: 'Release 2.4 regression', description: 'Before the release', tags: ['smoke'], state: 'New', configuration: 'Chrome on Linux',
      branch: 'release/2.4', creator: 'Admin', projectId: String(ids.project), project: 'Payments', executedAt: null,
    });
    expect(await one('sessions', ids.session)).to.deep.include({
      title: 'Explore refunds', description: 'An hour', content: 'Find ways to refund twice', tags: ['checkout'], template: 'Default',
      state: 'In Progress', configuration: 'Chrome on Linux', creator: 'Admin',
    });
    expect(await one('milestones', ids.milestone)).to.deep.include({ title: 'Release 2.4', description: 'Spring release', projectId: String(ids.project) });
    expect(await one('projects', ids.project)).to.deep.include({ id: String(ids.project), projectId: String(ids.project), title: 'Payments', project: 'Payments' });
  });

  it('comments: their own documents, titled by their parent ("Comment" for a project\'s)', async () => {
    const { ids } = world;
    expect(await one('comments', ids.caseComment)).to.deep.include({
      content: 'Flaky on Safari', title: 'Pay with a saved card', caseId: String(ids.case), runId: null, projectId: String(ids.project),
    });
    expect(await one('comments', ids.projectComment)).to.deep.include({ content: 'Kick-off notes', title: 'Comment', caseId: null });
  });

  it('failures from an imported JUnit file: the failed and errored results, not the passed or skipped ones', async () => {
    const runId = expectCompleted(await world.upload({ format: 'junit', name: 'Nightly' }, [{ name: 'TEST-checkout.xml', content: JUNIT }]));
    const results: { id: number; status: string }[] = await app.deps.knex('test_run_results as r').join('statuses as s', 's.id', 'r.status_id')
      .where('r.test_run_id', runId).select('r.id', 's.system_name as status');
    expect(results.map((r) => r.status).sort()).to.deep.equal(['error', 'failed', 'passed', 'skipped']);
    const { upsert, remove } = await loadDocuments(app.deps.knex, 'failures', results.map((r) => String(r.id)));
    const byStatus = Object.fromEntries(results.map((r) => [r.status, String(r.id)]));
    expect(remove.map((k) => k.id).sort()).to.deep.equal([byStatus.passed, byStatus.skipped].sort());
    const failed = upsert.find((d) => d.id === byStatus.failed)!;
    expect(failed).to.deep.include({
      type: 'failures', title: 'expected 402 but was 200', failureType: 'org.opentest4j.AssertionFailedError', status: 'Failed',
      description: 'refuses an expired card — Nightly', runId: String(runId), projectId: String(world.ids.project), creator: 'Admin',
    });
    expect(failed.content).to.match(/^org\.opentest4j\.AssertionFailedError: expected 402 but was 200\n\tat com\.acme\.CheckoutTest/);
    expect(failed.caseId).to.be.a('string');
    expect(failed.executedAt).to.be.a('string');
    const errored = upsert.find((d) => d.id === byStatus.error)!;
    // No message attribute: the parser takes the body's first line.
    expect(errored).to.deep.include({ title: 'java.lang.NullPointerException: Cannot invoke "Tax.rate()"', status: 'Error', failureType: 'java.lang.NullPointerException' });
    expect(errored.content).to.contain('Cannot invoke "Tax.rate()"');
  });

  it('the stack trace is cut to its first 4,000 characters', async () => {
    const long = `<?xml version="1.0"?><testsuite name="S" tests="1"><testcase classname="S" name="long"><failure message="m" type="T">${'x'.repeat(9000)}</failure></testcase></testsuite>`;
    const runId = expectCompleted(await world.upload({ format: 'junit', name: 'Long' }, [{ name: 'long.xml', content: long }]));
    const [{ id }] = await app.deps.knex('test_run_results').where('test_run_id', runId).select('id');
    expect((await one('failures', id)).content).to.have.length(4000);
  });

  it('documents and removals come in the order of the ids asked (the log\'s: refused ones are recorded newest last)', async () => {
    const { model, ids, connect } = world;
    const created: string[] = [];
    for (let i = 0; i < 6; i++) created.push(String((await model('repositoryCase', 'create', { data: { title: `Ordered ${i}`, project: connect(ids.project), folder: connect(ids.folderA) } })).id));
    const asked = [created[4], '999998', created[1], created[5], created[0], '999997', created[3], created[2]];
    const { upsert, remove } = await loadDocuments(app.deps.knex, 'repository_cases', asked);
    expect(upsert.map((d) => d.id)).to.deep.equal(asked.filter((id) => !id.startsWith('9999')));
    expect(remove.map((k) => k.id)).to.deep.equal(['999998', '999997']);
  });

  it('a deleted row, and rows under a deleted folder, are removals; the scan leaves them out', async () => {
    const { model, ids, connect } = world;
    const other = (await model('repositoryCase', 'create', { data: { title: 'Short-lived', project: connect(ids.project), folder: connect(ids.folderA) } })).id;
    const inFolder = (await model('repositoryFolder', 'create', { data: { name: 'Gone', project: connect(ids.project) } })).id;
    const underGone = (await model('repositoryCase', 'create', { data: { title: 'Under a gone folder', project: connect(ids.project), folder: connect(inFolder) } })).id;
    await model('repositoryCase', 'delete', { where: { id: other } });
    await model('repositoryFolder', 'delete', { where: { id: inFolder } });
    const { upsert, remove } = await loadDocuments(app.deps.knex, 'repository_cases', [String(other), String(underGone), String(ids.case), '999999']);
    expect(upsert.map((d) => d.id)).to.deep.equal([String(ids.case)]);
    expect(remove.map((k) => k.id).sort()).to.deep.equal([String(other), String(underGone), '999999'].sort());
    const scanned = await scanDocuments(app.deps.knex, 'repository_cases', 0, 10_000);
    expect(scanned.documents.map((d) => d.id)).to.include(String(ids.case)).and.not.include(String(other)).and.not.include(String(underGone));
  });

  it('one batch: each case its own folder path (shared folders, nested ones, none), a deleted ancestor removes what is under it; a scan page keeps id order', async () => {
    const { model, ids, connect } = world;
    const folder = async (name: string, parent?: number) =>
      (await model('repositoryFolder', 'create', { data: { name, project: connect(ids.project), ...(parent && { parent: connect(parent) }) } })).id as number;
    const top = await folder('Top');
    const middle = await folder('Middle', top);
    const leaf = await folder('Leaf', middle);
    const doomed = await folder('Doomed');
    const doomedChild = await folder('Child', doomed);
    const kase = async (title: string, f?: number) =>
      String((await model('repositoryCase', 'create', { data: { title, project: connect(ids.project), ...(f && { folder: connect(f) }) } })).id);
    const [a, b, c, d, e] = [await kase('In leaf 1', leaf), await kase('In top', top), await kase('No folder'), await kase('In leaf 2', leaf), await kase('Under doomed', doomedChild)];
    await model('repositoryFolder', 'delete', { where: { id: doomed } });
    const { upsert, remove } = await loadDocuments(app.deps.knex, 'repository_cases', [e, a, b, c, d]);
    expect(upsert.map((doc) => [doc.id, doc.folder])).to.deep.equal([[a, 'Top / Middle / Leaf'], [b, 'Top'], [c, null], [d, 'Top / Middle / Leaf']]);
    expect(remove).to.deep.equal([{ type: 'repository_cases', id: e }]);
    const page = await scanDocuments(app.deps.knex, 'repository_cases', Number(a) - 1, 4);
    expect(page.documents.map((doc) => [doc.id, doc.folder])).to.deep.equal([[a, 'Top / Middle / Leaf'], [b, 'Top'], [c, null], [d, 'Top / Middle / Leaf']]);
    expect(page.lastId).to.equal(Number(d));
  });

  it('each read says when it read (microseconds, PostgreSQL\'s clock), removals only included; a later read a later time', async () => {
    const { ids } = world;
    const micros = (readAt: string | undefined) => {
      expect(readAt).to.match(/^\d{16}$/);
      return BigInt(readAt!);
    };
    const before = BigInt(Date.now() - 60_000) * 1000n;
    const first = await loadDocuments(app.deps.knex, 'repository_cases', [String(ids.case)]);
    const removalsOnly = await loadDocuments(app.deps.knex, 'repository_cases', ['999996']);
    expect(removalsOnly.upsert).to.deep.equal([]);
    const page = await scanDocuments(app.deps.knex, 'repository_cases', 0, 10);
    const times = [first.readAt, removalsOnly.readAt, page.readAt].map(micros);
    expect(times[0] > before, 'a time, in microseconds').to.equal(true);
    expect(times[1] > times[0] && times[2] > times[1], `in the order read: ${times.join(', ')}`).to.equal(true);
    expect((await scanDocuments(app.deps.knex, 'repository_cases', 2_000_000_000, 10)).readAt, 'an empty page writes nothing').to.equal(undefined);
  });

  it('everything of a deleted project is a removal', async () => {
    const { model, connect } = world;
    const p = (await model('project', 'create', { data: { name: 'Doomed' } })).id;
    const c = (await model('repositoryCase', 'create', { data: { title: 'Doomed case', project: connect(p) } })).id;
    const r = (await model('testRun', 'create', { data: { name: 'Doomed run', project: connect(p) } })).id;
    const m = (await model('comment', 'create', { data: { content: 'Doomed comment', project: connect(p), repositoryCase: connect(c) } })).id;
    await one('repository_cases', c);
    await model('project', 'update', { where: { id: p }, data: { isDeleted: true } });
    for (const [type, id] of [['projects', p], ['repository_cases', c], ['test_runs', r], ['comments', m]] as const) {
      const { upsert, remove } = await loadDocuments(app.deps.knex, type, [String(id)]);
      expect(upsert, type).to.deep.equal([]);
      expect(remove, type).to.deep.equal([{ type, id: String(id) }]);
    }
  });
});
