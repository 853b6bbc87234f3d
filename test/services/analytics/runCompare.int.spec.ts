import { expect } from 'chai';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { expectRefusedAs, startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';
import { expectCompleted, importingAdmin, postImport } from '../../imports/importClient';

type Outcome = 'pass' | 'fail' | 'skip';
/** A JUnit file of these tests (name → outcome and seconds), as CI would upload it. */
const junit = (tests: Record<string, [Outcome, number]>) => `<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="shop.Checkout" tests="${Object.keys(tests).length}">${Object.entries(tests).map(([name, [outcome, time]]) =>
  `<testcase classname="shop.Checkout" name="${name}" time="${time}">${outcome === 'fail' ? '<failure message="boom">at Checkout.java:12</failure>' : outcome === 'skip' ? '<skipped/>' : ''}</testcase>`).join('')}
</testsuite>`;

/**
 * GET /api/runs/compare against the whole application, on runs made by real result imports: the
 * one new failure found among the others, fixed, still failing, new and removed tests, other status
 * changes and duration changes; the base found by branch; who may compare; bad input.
 */
describe('GET /api/runs/compare', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: HttpClient;
  let token: string;
  let projectId: number;
  let model: (entity: string, op: string, body: unknown) => Promise<any>;
  let baseRun: number;
  let headRun: number;

  const upload = async (name: string, branch: string, tests: Record<string, [Outcome, number]>, project = projectId) =>
    expectCompleted(await postImport(app.url, '/api/junit/import', { projectId: project, name, branch }, [{ name: 'TEST-shop.xml', content: junit(tests) }], token));
  const compare = async (c: HttpClient, query: string) => {
    const res = await c.get(`/api/runs/compare?${query}`);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.data;
  };
  const refused = (c: HttpClient, query: string, status: number, code: string, path?: string) =>
    expectRefusedAs(app, () => c.get(`/api/runs/compare?${query}`), status, code, path);
  const titles = (category: { cases: { title: string }[] }) => category.cases.map((c) => c.title);

  before(async () => {
    app = await startTestApp();
    ({ token, projectId, model } = await importingAdmin(app, 'Shop'));
    admin = new HttpClient(app.url, token);
    baseRun = await upload('nightly 1', 'main', {
      pays: ['pass', 1], refunds: ['fail', 1], lists: ['pass', 1], ships: ['fail', 2], prints: ['pass', 1], exports: ['skip', 0],
      ...Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`stable ${i}`, ['pass', 0.5]])),
    });
    headRun = await upload('nightly 2', 'main', {
      pays: ['fail', 1], refunds: ['pass', 1], lists: ['pass', 5], ships: ['fail', 2], exports: ['pass', 0.2], audits: ['fail', 1],
      ...Object.fromEntries(Array.from({ length: 40 }, (_, i) => [`stable ${i}`, ['pass', 0.5]])),
    });
  });
  after(async () => {
    await app?.stop();
  });

  it('finds the one new failure among the others, and every other change case by case', async () => {
    const data = await compare(admin, `base=${baseRun}&head=${headRun}`);
    expect(data.base).to.include({ id: baseRun, name: 'nightly 1', branch: 'main' });
    expect(data.head).to.include({ id: headRun, name: 'nightly 2', branch: 'main' });
    expect(titles(data.categories.newFailures)).to.deep.equal(['pays']);
    expect(titles(data.categories.fixed)).to.deep.equal(['refunds']);
    expect(titles(data.categories.stillFailing)).to.deep.equal(['ships']);
    expect(titles(data.categories.newTests)).to.deep.equal(['audits']);
    expect(titles(data.categories.removedTests)).to.deep.equal(['prints']);
    expect(titles(data.categories.otherChanges)).to.deep.equal(['exports']);
    expect(titles(data.categories.durationChanges)).to.deep.equal(['lists']);
    expect(data.summary).to.deep.equal({ newFailures: 1, fixed: 1, stillFailing: 1, newTests: 1, removedTests: 1, otherChanges: 1, quarantined: 0, durationChanges: 1, unchanged: 41 });
    const [pays] = data.categories.newFailures.cases;
    expect(pays.className).to.equal('shop.Checkout');
    expect(pays.base.status.systemName).to.equal('passed');
    expect(pays.head.status.systemName).to.equal('failed');
    expect(data.categories.newTests.cases[0].base).to.equal(null);
    expect(data.categories.removedTests.cases[0].head).to.equal(null);
    const [lists] = data.categories.durationChanges.cases;
    expect([lists.base.durationMs, lists.head.durationMs]).to.deep.equal([1000, 5000]);
    for (const category of Object.values(data.categories) as { truncated: boolean }[]) expect(category.truncated).to.equal(false);
  });

  it('takes the base as the latest finished run on a branch, thresholds and a limit per category', async () => {
    const byBranch = await compare(admin, `baseBranch=main&head=${headRun}`);
    expect(byBranch.base.id).to.equal(baseRun);
    const strict = await compare(admin, `base=${baseRun}&head=${headRun}&durationPercent=500&durationMinMs=0`);
    // lists grew by 400 %, less than 500 %; exports from 0 ms to 200 ms, past any percent.
    expect(titles(strict.categories.durationChanges)).to.deep.equal(['exports']);
    const loose = await compare(admin, `base=${baseRun}&head=${headRun}&durationPercent=1&durationMinMs=0`);
    expect(titles(loose.categories.durationChanges)).to.have.members(['lists', 'exports']);
    const limited = await compare(admin, `base=${headRun}&head=${baseRun}&limit=1`);
    expect(limited.summary.newFailures).to.equal(1);
    expect(titles(limited.categories.newFailures)).to.deep.equal(['refunds']);
    await refused(admin, `baseBranch=release&head=${headRun}`, 404, 'not-found', 'baseBranch');
  });

  it('answers 404 for a run the caller may not read, 400 for runs of two projects', async () => {
    await registerUser(app.deps, { email: 'outsider@example.com', name: 'Out', password: 'compare-password-1', access: 'USER' }, systemMetadata('test'));
    const outsider = new HttpClient(app.url);
    expect((await outsider.post('/api/auth/login', { email: 'outsider@example.com', password: 'compare-password-1' })).status).to.equal(200);
    await refused(outsider, `base=${baseRun}&head=${headRun}`, 404, 'not-found', 'head');
    await refused(admin, `base=${baseRun}&head=${headRun + 1000}`, 404, 'not-found', 'head');
    const other = (await model('project', 'create', { data: { name: 'Other shop' } })).id as number;
    const elsewhere = await upload('nightly', 'main', { pays: ['pass', 1] }, other);
    await refused(admin, `base=${elsewhere}&head=${headRun}`, 400, 'runs-in-different-projects');
  });

  it('refuses bad input with 400 and the error shape', async () => {
    await refused(admin, `base=${baseRun}`, 400, 'invalid-argument', 'head');
    await refused(admin, `head=${headRun}`, 400, 'invalid-argument', 'base');
    await refused(admin, `base=${baseRun}&baseBranch=main&head=${headRun}`, 400, 'invalid-argument', 'base');
    await refused(admin, `base=x&head=${headRun}`, 400, 'invalid-argument', 'base');
    await refused(admin, `base=${baseRun}&head=${headRun}&limit=0`, 400, 'invalid-argument', 'limit');
    await refused(admin, `base=${baseRun}&head=${headRun}&limit=5001`, 400, 'invalid-argument', 'limit');
    await refused(admin, `base=${baseRun}&head=${headRun}&durationPercent=-1`, 400, 'invalid-argument', 'durationPercent');
    await refused(admin, `base=${baseRun}&head=${headRun}&head=1`, 400, 'invalid-argument', 'head');
    await refused(admin, `base=${baseRun}&head=${headRun}&flaky=1`, 400, 'invalid-argument', 'flaky');
    expect((await new HttpClient(app.url).get(`/api/runs/compare?base=${baseRun}&head=${headRun}`)).status).to.equal(401);
  });
});
