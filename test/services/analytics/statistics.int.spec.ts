import { expect } from 'chai';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { readModelProjection } from '../../../projections/readModel';
import { rebuildProjection } from '../../../projections/runtime/rebuild';
import { expectRefusedAs, startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';
import { expectCompleted, importingAdmin, postImport } from '../../imports/importClient';

type Outcome = 'pass' | 'fail' | 'retried';

const DAY = 86_400_000;

/**
 * The analytics read models (docs/analytics.md) through the model API, from real JUnit imports
 * (Surefire's <flakyFailure> for a test that passed on a rerun): six runs of three tests on two
 * configurations and two branches over 40 days. Flips, retry flips, windows by day, the filters by
 * branch and configuration, the per-case, per-run and per-project-day numbers, a deleted run
 * counted out, access, asOf refused, and a rebuild giving the same statistics.
 */
describe('analytics read models: case, daily, run and project statistics', function () {
  this.timeout(180_000);
  let app: TestApp;
  let admin: HttpClient;
  let token: string;
  let projectId: number;
  let model: (entity: string, op: string, body: unknown) => Promise<any>;
  const runs: Record<string, number> = {};
  const cases: Record<string, number> = {};
  let configA: number;
  let configB: number;
  const now = Date.now();
  const at = (daysAgo: number, hours = 0) => new Date(now - daysAgo * DAY + hours * 3_600_000).toISOString().slice(0, 19);

  const junit = (timestamp: string, tests: Record<string, Outcome>) => `<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="Shop" tests="${Object.keys(tests).length}" timestamp="${timestamp}">${Object.entries(tests).map(([name, outcome]) => `
  <testcase classname="shop.Cart" name="${name}" time="${name.length / 10}">${outcome === 'fail' ? '<failure message="no"/>' : outcome === 'retried' ? '<flakyFailure message="first try"/>' : ''}</testcase>`).join('')}
</testsuite>`;
  const upload = async (key: string, fields: Record<string, string | number>, timestamp: string, tests: Record<string, Outcome>) => {
    runs[key] = expectCompleted(await postImport(app.url, '/api/junit/import', { projectId, name: key, ...fields }, [{ name: 'TEST-shop.xml', content: junit(timestamp, tests) }], token));
  };
  const read = async (c: HttpClient, entity: string, op: string, body: unknown) => {
    const res = await c.post(`/api/model/${entity}/${op}`, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.data;
  };
  /** The docs' example: flaky tests of a project in the last `days` days, by the flips and retry flips summed over its daily rows. */
  const flaky = (days: number, filters: Record<string, unknown> = {}) => read(admin, 'caseDailyStatistic', 'groupBy', {
    by: ['repositoryCaseId'],
    where: { projectId, day: { gte: new Date(now - days * DAY).toISOString() }, ...filters },
    _sum: { flips: true, retryFlips: true, executions: true },
    having: { OR: [{ flips: { _sum: { gt: 0 } } }, { retryFlips: { _sum: { gt: 0 } } }] },
    orderBy: [{ _sum: { flips: 'desc' } }, { repositoryCaseId: 'asc' }],
  });
  const byName = (groups: { repositoryCaseId: number; _sum: Record<string, number> }[]) =>
    Object.fromEntries(groups.map((g) => [Object.keys(cases).find((k) => cases[k] === g.repositoryCaseId), g._sum]));

  before(async () => {
    app = await startTestApp();
    ({ token, projectId, model } = await importingAdmin(app, 'Shop'));
    admin = new HttpClient(app.url, token);
    configA = (await model('configuration', 'create', { data: { name: 'Chrome' } })).id;
    configB = (await model('configuration', 'create', { data: { name: 'Firefox' } })).id;
    await upload('r1', { branch: 'main', configId: configA }, at(40), { add: 'pass', pay: 'pass', ship: 'pass' });
    await upload('r2', { branch: 'main', configId: configA }, at(40, 1), { add: 'fail', pay: 'pass', ship: 'pass' });
    await upload('r3', { branch: 'main', configId: configA }, at(5), { add: 'pass', pay: 'fail', ship: 'retried' });
    await upload('r4', { branch: 'main', configId: configA }, at(2), { add: 'pass', pay: 'fail', ship: 'pass' });
    await upload('r5', { branch: 'feature', configId: configA }, at(1), { add: 'fail', pay: 'pass', ship: 'pass' });
    await upload('r6', { branch: 'main', configId: configB }, at(1, 1), { add: 'fail' });
    for (const c of await model('repositoryCase', 'findMany', { where: { projectId }, select: { id: true, title: true } })) cases[c.title] = c.id;
    expect(Object.keys(cases)).to.have.members(['add', 'pay', 'ship']);
  });
  after(async () => {
    await app?.stop();
  });

  it('finds the flaky tests of the project in the last 30 days: flips on one branch and configuration, and a pass on retry', async () => {
    expect(byName(await flaky(30))).to.deep.equal({
      add: { flips: 1, retryFlips: 0, executions: 4 },
      pay: { flips: 1, retryFlips: 0, executions: 3 },
      ship: { flips: 0, retryFlips: 1, executions: 3 },
    });
    // Forty days back, add's first flip (r1 → r2) counts too.
    expect(byName(await flaky(41)).add).to.deep.equal({ flips: 2, retryFlips: 0, executions: 6 });
    // Each branch and configuration is a sequence of its own: the feature branch and Firefox ran once, nothing flipped there.
    expect(await flaky(30, { branch: 'feature' })).to.deep.equal([]);
    expect(await flaky(30, { configId: configB })).to.deep.equal([]);
    expect(byName(await flaky(30, { branch: 'main', configId: configA }))).to.have.keys('add', 'pay', 'ship');
  });

  it('keeps per case and configuration: executions, pass rate, first and last seen, durations, last statuses, flips and flakiness', async () => {
    const rows = await read(admin, 'caseStatistic', 'findMany', { where: { repositoryCaseId: cases.add }, orderBy: [{ allConfigurations: 'desc' }, { configId: 'asc' }] });
    expect(rows).to.have.length(3);
    const [all, chrome, firefox] = rows;
    expect(all).to.include({ allConfigurations: true, configId: null, executions: 6, passed: 3, failed: 3, passRate: 0.5, recentExecutions: 6, flips: 2, flakiness: 0.3333 });
    expect(all.firstSeenAt).to.equal(new Date(`${at(40)}Z`).toISOString());
    expect(all.lastSeenAt).to.equal(new Date(`${at(1, 1)}Z`).toISOString());
    expect(all.meanDurationMs).to.equal(300);
    expect(all.p95DurationMs).to.equal(300);
    const statuses = await model('status', 'findMany', { where: { systemName: { in: ['passed', 'failed'] } }, select: { id: true, systemName: true } });
    const name = (id: number) => statuses.find((s: any) => s.id === id)?.systemName;
    expect(all.lastStatusIds.map(name)).to.deep.equal(['failed', 'failed', 'passed', 'passed', 'failed', 'passed']);
    expect(chrome).to.include({ allConfigurations: false, configId: configA, executions: 5, flips: 2, flakiness: 0.4 });
    expect(firefox).to.include({ allConfigurations: false, configId: configB, executions: 1, flips: 0, flakiness: 0 });
  });

  it('keeps per run its totals, duration and pass rate, and per milestone through groupBy', async () => {
    const [r3] = await read(admin, 'testRunStatistic', 'findMany', { where: { testRunId: runs.r3 } });
    expect(r3).to.include({ projectId, configId: configA, branch: 'main', total: 3, executed: 3, passed: 2, failed: 1, other: 0, untested: 0, passRate: 0.6667 });
    const milestone = (await model('milestone', 'create', { data: { name: 'Release 1', project: { connect: { id: projectId } } } })).id;
    for (const key of ['r3', 'r4']) await model('testRun', 'update', { where: { id: runs[key] }, data: { milestone: { connect: { id: milestone } } } });
    const totals = await read(admin, 'testRunStatistic', 'aggregate', { where: { milestoneId: milestone }, _sum: { passed: true, failed: true, total: true } });
    expect(totals._sum).to.deep.equal({ passed: 4, failed: 2, total: 6 });
  });

  it('counts per project and day the executions by outcome, and the cases created', async () => {
    const days = await read(admin, 'projectDailyStatistic', 'findMany', { where: { projectId }, orderBy: { day: 'asc' } });
    const fiveDaysAgo = days.find((d: any) => d.day === `${at(5).slice(0, 10)}T00:00:00.000Z`);
    expect(fiveDaysAgo).to.include({ executions: 3, passed: 2, failed: 1, other: 0, casesCreated: 0 });
    const created = days.reduce((n: number, d: any) => n + d.casesCreated, 0);
    expect(created).to.equal(3);
    const executions = days.reduce((n: number, d: any) => n + d.executions, 0);
    expect(executions).to.equal(16);
  });

  it('counts a deleted run out, everywhere', async () => {
    expect((await admin.post('/api/model/testRun/delete', { where: { id: runs.r3 } })).status).to.equal(200);
    // add: r1 pass, r2 fail, r4 pass: its flip in the window is now r2 → r4; pay: r2 pass → r4 fail; ship has no retry left.
    expect(byName(await flaky(30))).to.deep.equal({
      add: { flips: 1, retryFlips: 0, executions: 3 },
      pay: { flips: 1, retryFlips: 0, executions: 2 },
    });
    expect(await read(admin, 'testRunStatistic', 'findMany', { where: { testRunId: runs.r3 } })).to.deep.equal([]);
    const days = await read(admin, 'projectDailyStatistic', 'findMany', { where: { projectId } });
    expect(days.find((d: any) => d.day === `${at(5).slice(0, 10)}T00:00:00.000Z`)).to.equal(undefined);
  });

  it('counts a deleted run case out of its case when it held a result; one without a result changes its run\'s totals only', async () => {
    const connect = (id: number) => ({ connect: { id } });
    // Without its row id: a recomputation writes the row anew.
    const caseRow = async (title: string) => {
      const [{ id: _id, ...row }] = await read(admin, 'caseStatistic', 'findMany', { where: { repositoryCaseId: cases[title], allConfigurations: true } });
      return row;
    };
    const runTotals = async (id: number) => (await read(admin, 'testRunStatistic', 'findMany', { where: { testRunId: id } }))[0];
    const before = await caseRow('add');
    // A planned run case, never executed: in its run's totals, in no case's executions.
    const planned = (await model('testRun', 'create', { data: { name: 'Planned', project: connect(projectId), branch: 'main', configuration: connect(configA) } })).id;
    const untested = (await model('testRunCase', 'create', { data: { testRun: connect(planned), repositoryCase: connect(cases.add) } })).id;
    expect(await runTotals(planned)).to.deep.include({ total: 1, untested: 1 });
    expect((await admin.post('/api/model/testRunCase/delete', { where: { id: untested } })).status).to.equal(200);
    expect(await runTotals(planned)).to.deep.include({ total: 0, untested: 0 });
    expect(await caseRow('add')).to.deep.equal(before);
    // An executed one (r5's, a fail on the feature branch), its result left in place: its case counts one execution less.
    const [executed] = await model('testRunCase', 'findMany', { where: { testRunId: runs.r5, repositoryCaseId: cases.add }, select: { id: true } });
    expect((await admin.post('/api/model/testRunCase/delete', { where: { id: executed.id } })).status).to.equal(200);
    const after = await caseRow('add');
    expect(after.executions).to.equal(before.executions - 1);
    expect(after.failed).to.equal(before.failed - 1);
    expect(await runTotals(runs.r5)).to.deep.include({ total: 2 });
  });

  it('is read-only, refuses asOf, and shows a user only the projects they may read', async () => {
    await expectRefusedAs(app, () => admin.post('/api/model/caseStatistic/create', { data: {} }), 400, 'read-only-entity');
    await expectRefusedAs(app, () => admin.post('/api/model/caseStatistic/findMany', { asOf: 1 }), 400, 'invalid-argument', 'asOf');
    await registerUser(app.deps, { email: 'outsider@example.com', name: 'Outsider', password: 'outsider-password-1', access: 'USER' }, systemMetadata('test'));
    const outsider = new HttpClient(app.url);
    expect((await outsider.post('/api/auth/login', { email: 'outsider@example.com', password: 'outsider-password-1' })).status).to.equal(200);
    for (const entity of ['caseStatistic', 'caseDailyStatistic', 'testRunStatistic', 'projectDailyStatistic']) {
      expect(await read(outsider, entity, 'findMany', {}), entity).to.deep.equal([]);
    }
  });

  it('comes out the same from a rebuild of the read model', async () => {
    const snapshot = async () => {
      const out: Record<string, unknown> = {};
      for (const [entity, orderBy] of [['caseStatistic', [{ repositoryCaseId: 'asc' }, { allConfigurations: 'asc' }, { configId: 'asc' }]],
        ['caseDailyStatistic', [{ repositoryCaseId: 'asc' }, { day: 'asc' }, { configId: 'asc' }, { branch: 'asc' }]], ['testRunStatistic', [{ testRunId: 'asc' }]],
        ['projectDailyStatistic', [{ day: 'asc' }]]] as const) {
        out[entity] = (await read(admin, entity, 'findMany', { where: { projectId }, orderBy })).map(({ id: _id, ...row }: any) => row);
      }
      return out;
    };
    const before = await snapshot();
    await rebuildProjection(readModelProjection, { store: app.deps.store, knex: app.deps.knex });
    expect(await snapshot()).to.deep.equal(before);
  });
});
