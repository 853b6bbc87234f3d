import { expect } from 'chai';
import { seedDefaults } from '../../services/entities/seed';
import { registerUser } from '../../services/identity/identity.handlers';
import { systemMetadata } from '../../services/shared/context';
import { expectRefused, startTestApp, type TestApp } from '../support/app';
import { HttpClient, signIn } from '../support/server';

/**
 * Writes that would cross a project boundary or skip a permission (issue 15, part 1). Two
 * projects, A and B; `tester` is a Tester in A and only a Viewer in B, `both` a Tester in both,
 * and the administrator may do everything. A write needs the permission in the row's project
 * before and after the change, along every relation by which the row reaches a project, and no
 * write moves a row into another project, whoever asks.
 */
describe('model API writes across projects and permissions', function () {
  this.timeout(180_000);
  let app: TestApp;
  let admin: HttpClient;
  let tester: HttpClient;
  let both: HttpClient;
  const ids: Record<string, number> = {};
  const PASSWORD = 'write-access-password-1';
  const connect = (id: number) => ({ connect: { id } });

  const login = (email: string) => signIn(app.url, email, PASSWORD);
  const created = async (c: HttpClient, entity: string, data: unknown) => {
    const res = await c.post(`/api/model/${entity}/create`, { data });
    expect(res.status, `${entity}: ${JSON.stringify(res.body)}`).to.equal(201);
    return res.body.data.id as number;
  };
  const row = async (entity: string, id: number) => {
    const res = await admin.post(`/api/model/${entity}/findUnique`, { where: { id } });
    expect(res.status).to.equal(200);
    return res.body.data;
  };
  const refused = (c: HttpClient, entity: string, op: string, body: unknown, status: number) =>
    expectRefused(app, () => c.post(`/api/model/${entity}/${op}`, body), status);
  const idOf = async (entity: string, where: unknown) => {
    const res = await admin.post(`/api/model/${entity}/findFirstOrThrow`, { where });
    expect(res.status, JSON.stringify(res.body)).to.equal(200);
    return res.body.data.id as number;
  };

  /** A run with one case and one result, a session with one result, a folder and a milestone in the project. */
  const projectRows = async (key: string, project: number) => {
    ids[`folder${key}`] = await created(admin, 'repositoryFolder', { name: `Folder ${key}`, project: connect(project) });
    ids[`case${key}`] = await created(admin, 'repositoryCase', { title: `Case ${key}`, project: connect(project) });
    ids[`otherCase${key}`] = await created(admin, 'repositoryCase', { title: `Other case ${key}`, project: connect(project) });
    ids[`run${key}`] = await created(admin, 'testRun', { name: `Run ${key}`, project: connect(project) });
    ids[`otherRun${key}`] = await created(admin, 'testRun', { name: `Other run ${key}`, project: connect(project) });
    ids[`runCase${key}`] = await created(admin, 'testRunCase', { testRun: connect(ids[`run${key}`]), repositoryCase: connect(ids[`case${key}`]) });
    ids[`result${key}`] = await created(admin, 'testRunResult', { testRun: connect(ids[`run${key}`]), testRunCase: connect(ids[`runCase${key}`]), status: connect(ids.passed) });
    ids[`session${key}`] = await created(admin, 'session', { name: `Session ${key}`, project: connect(project) });
    ids[`sessionResult${key}`] = await created(admin, 'sessionResult', { session: connect(ids[`session${key}`]), status: connect(ids.passed) });
    ids[`milestone${key}`] = await created(admin, 'milestone', { name: `Milestone ${key}`, project: connect(project) });
  };

  before(async () => {
    app = await startTestApp();
    const meta = systemMetadata('test');
    await seedDefaults(app.deps, meta); // roles Project Admin, Tester (the default: add/edit, no delete, no close), Viewer
    await registerUser(app.deps, { email: 'admin@example.com', name: 'Admin', password: PASSWORD, access: 'ADMIN' }, meta);
    const testerId = await registerUser(app.deps, { email: 'tester@example.com', name: 'Tester', password: PASSWORD, access: 'USER' }, meta);
    const bothId = await registerUser(app.deps, { email: 'both@example.com', name: 'Both', password: PASSWORD, access: 'USER' }, meta);
    admin = await login('admin@example.com');
    tester = await login('tester@example.com');
    both = await login('both@example.com');
    ids.passed = await idOf('status', { systemName: 'passed' });
    ids.a = await created(admin, 'project', { name: 'A' });
    ids.b = await created(admin, 'project', { name: 'B' });
    // The tester: assigned to A (the default role, Tester), a Viewer in B.
    await created(admin, 'projectAssignment', { user: connect(testerId), project: connect(ids.a) });
    await created(admin, 'userProjectPermission', { user: connect(testerId), project: connect(ids.b), accessType: 'SPECIFIC_ROLE', role: connect(await idOf('role', { name: 'Viewer' })) });
    await created(admin, 'projectAssignment', { user: connect(bothId), project: connect(ids.a) });
    await created(admin, 'projectAssignment', { user: connect(bothId), project: connect(ids.b) });
    await projectRows('A', ids.a);
    await projectRows('B', ids.b);
  });
  after(() => app?.stop());

  describe('a Tester of A who is only a Viewer of B cannot move rows into B (403, details.projectId B)', () => {
    const moves: [string, string, (() => Record<string, unknown>)][] = [
      ['testRunResult', 'resultA', () => ({ testRun: connect(ids.runB) })],
      ['testRunResult', 'resultA', () => ({ testRun: connect(ids.runB), testRunCase: connect(ids.runCaseB) })],
      ['testRunCase', 'runCaseA', () => ({ testRun: connect(ids.runB) })],
      ['testRunCase', 'runCaseA', () => ({ testRun: connect(ids.runB), repositoryCase: connect(ids.otherCaseB) })],
      ['testRunCase', 'runCaseA', () => ({ repositoryCase: connect(ids.otherCaseB) })],
      ['sessionResult', 'sessionResultA', () => ({ session: connect(ids.sessionB) })],
      ['testRun', 'runA', () => ({ project: connect(ids.b) })],
      ['testRun', 'runA', () => ({ milestone: connect(ids.milestoneB) })],
      ['repositoryCase', 'caseA', () => ({ folder: connect(ids.folderB) })],
      ['repositoryFolder', 'folderA', () => ({ project: connect(ids.b) })],
      ['milestone', 'milestoneA', () => ({ parent: connect(ids.milestoneB) })],
    ];
    for (const [entity, key, data] of moves) {
      it(`${entity} update connecting ${Object.keys(data()).join(' and ')} of B`, async () => {
        const before = await row(entity, ids[key]);
        const refusal = await refused(tester, entity, 'update', { where: { id: ids[key] }, data: data() }, 403);
        expect(refusal.code).to.equal('forbidden');
        expect(refusal.details.projectId).to.equal(ids.b);
        expect(await row(entity, ids[key])).to.deep.equal(before);
      });
    }

    it('nor creates rows in A that reach B (a run case of B\'s case, a result of B\'s run case)', async () => {
      for (const [entity, data] of [
        ['testRunCase', { testRun: connect(ids.runA), repositoryCase: connect(ids.otherCaseB) }],
        ['testRunResult', { testRun: connect(ids.runA), testRunCase: connect(ids.runCaseB), status: connect(ids.passed) }],
        ['testRun', { name: 'x', project: connect(ids.a), milestone: connect(ids.milestoneB) }],
        ['comment', { content: 'x', project: connect(ids.a), testRun: connect(ids.runB) }],
      ] as const) {
        const refusal = await refused(tester, entity, 'create', { data }, 403);
        expect(refusal.details.projectId, entity).to.equal(ids.b);
      }
    });

    it('nor through a nested child\'s reference: a step result naming a step of B\'s case', async () => {
      const caseB = await admin.post('/api/model/repositoryCase/update', { where: { id: ids.caseB }, data: { steps: { create: [{ step: 'Open B' }] } }, include: { steps: true } });
      expect(caseB.status, JSON.stringify(caseB.body)).to.equal(200);
      const stepOfB = caseB.body.data.steps[0].id as number;
      const stepResults = { create: [{ step: connect(stepOfB), status: connect(ids.passed) }] };
      for (const [op, body] of [
        ['create', { data: { testRun: connect(ids.runA), testRunCase: connect(ids.runCaseA), status: connect(ids.passed), stepResults } }],
        ['update', { where: { id: ids.resultA }, data: { stepResults } }],
      ] as const) {
        const refusal = await refused(tester, 'testRunResult', op, body, 403);
        expect(refusal.details.projectId, op).to.equal(ids.b);
      }
      // With the permission in both projects, the result's aggregate refuses the step of another project.
      const refusal = await refused(both, 'testRunResult', 'update', { where: { id: ids.resultA }, data: { stepResults } }, 400);
      expect(refusal.code).to.equal('step-in-other-project');
    });

    it('the bulk forms and upsert are checked alike', async () => {
      await refused(tester, 'testRunCase', 'createMany', { data: [{ testRun: connect(ids.runA), repositoryCase: connect(ids.otherCaseB) }] }, 403);
      await refused(tester, 'testRunResult', 'upsert', {
        where: { id: ids.resultA }, create: { testRun: connect(ids.runA), testRunCase: connect(ids.runCaseA), status: connect(ids.passed) }, update: { testRun: connect(ids.runB) },
      }, 403);
      await refused(tester, 'testRunResult', 'upsert', {
        where: { id: 2147483647 }, create: { testRun: connect(ids.runA), testRunCase: connect(ids.runCaseB), status: connect(ids.passed) }, update: { notes: 'x' },
      }, 403);
    });

    it('still writes within A', async () => {
      const res = await tester.post('/api/model/testRunResult/update', { where: { id: ids.resultA }, data: { notes: 'seen' } });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    });
  });

  describe('creating a run, session, milestone or run case already completed needs canClose, as completing it does', () => {
    const completed = (): [string, Record<string, unknown>][] => [
      ['testRun', { name: 'Done already', project: connect(ids.a), isCompleted: true }],
      ['session', { name: 'Done already', project: connect(ids.a), isCompleted: true }],
      ['milestone', { name: 'Done already', project: connect(ids.a), isCompleted: true }],
      ['testRunCase', { testRun: connect(ids.runA), repositoryCase: connect(ids.otherCaseA), isCompleted: true }],
    ];

    it('a Tester (no canClose) is refused on create, createMany and upsert, as on update', async () => {
      for (const [entity, data] of completed()) {
        for (const [op, body] of [
          ['create', { data }], ['createMany', { data: [data] }], ['upsert', { where: { id: 2147483647 }, create: data, update: { isCompleted: true } }],
        ] as const) {
          const refusal = await refused(tester, entity, op, body, 403);
          expect(refusal.error, `${entity} ${op}`).to.match(/canClose/);
          expect(refusal.details.projectId).to.equal(ids.a);
        }
      }
      await refused(tester, 'testRun', 'update', { where: { id: ids.runA }, data: { isCompleted: true } }, 403);
    });

    it('the same creates not completed are the Tester\'s to make; the administrator creates them completed', async () => {
      for (const [entity, data] of completed()) {
        await created(tester, entity, { ...data, isCompleted: false });
        if (entity === 'testRunCase') await admin.post('/api/model/testRunCase/deleteMany', { where: { repositoryCaseId: ids.otherCaseA } });
        expect((await row(entity, await created(admin, entity, data))).isCompleted, entity).to.equal(true);
      }
    });
  });

  describe('a completed run, session or milestone, and what is under a completed run or session, changes only with canClose', () => {
    let closer: HttpClient;
    const closed: Record<string, number> = {};
    const mark = async (entity: string, id: number, isCompleted: boolean) => {
      const res = await admin.post(`/api/model/${entity}/update`, { where: { id }, data: { isCompleted } });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
    };

    before(async () => {
      // A role with canClose (and add/edit) on runs, sessions and milestones, results and session results add/edit only.
      const role = await created(admin, 'role', { name: 'Closer' });
      for (const [area, canClose] of [['TestRuns', true], ['Sessions', true], ['Milestones', true], ['TestRunResults', false], ['SessionResults', false]] as const) {
        await created(admin, 'rolePermission', { role: connect(role), area, canAddEdit: true, canDelete: false, canClose });
      }
      const closerId = await registerUser(app.deps, { email: 'closer@example.com', name: 'Closer', password: PASSWORD, access: 'USER' }, systemMetadata('test'));
      await created(admin, 'userProjectPermission', { user: connect(closerId), project: connect(ids.a), accessType: 'SPECIFIC_ROLE', role: connect(role) });
      closer = await login('closer@example.com');
      closed.run = await created(admin, 'testRun', { name: 'Closed run', project: connect(ids.a) });
      closed.runCase = await created(admin, 'testRunCase', { testRun: connect(closed.run), repositoryCase: connect(ids.caseA) });
      closed.result = await created(admin, 'testRunResult', { testRun: connect(closed.run), testRunCase: connect(closed.runCase), status: connect(ids.passed) });
      closed.session = await created(admin, 'session', { name: 'Closed session', project: connect(ids.a) });
      closed.sessionResult = await created(admin, 'sessionResult', { session: connect(closed.session), status: connect(ids.passed) });
      closed.milestone = await created(admin, 'milestone', { name: 'Closed milestone', project: connect(ids.a) });
      closed.tag = await created(admin, 'tag', { name: 'closed-runs' });
      for (const entity of ['run', 'session', 'milestone']) await mark(entity === 'run' ? 'testRun' : entity, closed[entity], true);
    });

    /** Every write a Tester (add/edit, no canClose) tried on closed records; each must be a 403 naming the completed record, appending nothing. */
    const attempts = (): [string, string, string, unknown, { entity: string; id: number }][] => {
      const run = { entity: 'testRun', id: closed.run };
      const session = { entity: 'session', id: closed.session };
      const milestone = { entity: 'milestone', id: closed.milestone };
      return [
        ['reopen the run', 'testRun', 'update', { where: { id: closed.run }, data: { isCompleted: false } }, run],
        ['reopen the session', 'session', 'update', { where: { id: closed.session }, data: { isCompleted: false } }, session],
        ['reopen the milestone', 'milestone', 'update', { where: { id: closed.milestone }, data: { isCompleted: false } }, milestone],
        ['rename the run', 'testRun', 'update', { where: { id: closed.run }, data: { name: 'Renamed' } }, run],
        ['rename the session', 'session', 'update', { where: { id: closed.session }, data: { note: 'changed' } }, session],
        ['rename the milestone', 'milestone', 'update', { where: { id: closed.milestone }, data: { name: 'Renamed' } }, milestone],
        ['tag the run (a link)', 'testRun', 'update', { where: { id: closed.run }, data: { tags: { connect: [{ id: closed.tag }] } } }, run],
        ['add a run case to it', 'testRunCase', 'create', { data: { testRun: connect(closed.run), repositoryCase: connect(ids.otherCaseA) } }, run],
        ['add a result to it', 'testRunResult', 'create', { data: { testRun: connect(closed.run), testRunCase: connect(closed.runCase), status: connect(ids.passed) } }, run],
        ['change its result', 'testRunResult', 'update', { where: { id: closed.result }, data: { notes: 'edited after closing' } }, run],
        ['clear its result\'s step results (a nested write)', 'testRunResult', 'update', { where: { id: closed.result }, data: { stepResults: { deleteMany: {} } } }, run],
        ['change its run case', 'testRunCase', 'update', { where: { id: closed.runCase }, data: { notes: 'edited after closing' } }, run],
        ['add a session result', 'sessionResult', 'create', { data: { session: connect(closed.session), status: connect(ids.passed) } }, session],
        ['change a session result', 'sessionResult', 'update', { where: { id: closed.sessionResult }, data: { resultData: 'edited' } }, session],
        ['rename by updateMany', 'testRun', 'updateMany', { where: { id: closed.run }, data: { name: 'Renamed' } }, run],
        ['reopen by updateMany', 'milestone', 'updateMany', { where: { id: closed.milestone }, data: { isCompleted: false } }, milestone],
        ['add results by createMany', 'testRunResult', 'createMany', { data: [{ testRun: connect(closed.run), testRunCase: connect(closed.runCase), status: connect(ids.passed) }] }, run],
        ['rename by upsert', 'testRun', 'upsert', { where: { id: closed.run }, create: { name: 'x', project: connect(ids.a) }, update: { name: 'Renamed' } }, run],
        ['add a run case by upsert', 'testRunCase', 'upsert', {
          where: { testRunId_repositoryCaseId: { testRunId: closed.run, repositoryCaseId: ids.otherCaseA } },
          create: { testRun: connect(closed.run), repositoryCase: connect(ids.otherCaseA) }, update: { notes: 'x' },
        }, run],
      ];
    };

    it('a Tester without canClose is refused every change: reopening, renaming, tagging, run cases and results added or changed, through every write path (403, details.completed, nothing appended)', async () => {
      for (const [what, entity, op, body, record] of attempts()) {
        const refusal = await refused(tester, entity, op, body, 403);
        expect(refusal.code, what).to.equal('forbidden');
        expect(refusal.details, what).to.deep.include({ projectId: ids.a, completed: record });
        expect(refusal.error, what).to.match(/is completed.*canClose/);
      }
      for (const entity of ['testRun', 'session', 'milestone']) {
        const now = await row(entity, closed[entity === 'testRun' ? 'run' : entity]);
        expect(now.isCompleted, entity).to.equal(true);
        expect(now.name, entity).to.match(/^Closed/);
      }
    });

    it('nor may a Tester set completedAt: on an open run, on create', async () => {
      for (const [entity, id] of [['testRun', ids.runA], ['session', ids.sessionA], ['milestone', ids.milestoneA]] as const) {
        const refusal = await refused(tester, entity, 'update', { where: { id }, data: { completedAt: '2026-01-01T00:00:00Z' } }, 403);
        expect(refusal.error, entity).to.match(/canClose/);
      }
      await refused(tester, 'testRun', 'create', { data: { name: 'Back-dated', project: connect(ids.a), completedAt: '2026-01-01T00:00:00Z' } }, 403);
      expect((await row('testRun', ids.runA)).completedAt).to.equal(null);
    });

    it('open records stay the Tester\'s: a change, and isCompleted: false where it is false already, are no closing', async () => {
      expect((await tester.post('/api/model/testRun/update', { where: { id: ids.runA }, data: { note: 'still open', isCompleted: false } })).status).to.equal(200);
      expect((await tester.post('/api/model/testRunResult/update', { where: { id: ids.resultA }, data: { notes: 'open run' } })).status).to.equal(200);
      expect((await tester.post('/api/model/milestone/update', { where: { id: ids.milestoneA }, data: { name: 'Milestone A', isCompleted: false } })).status).to.equal(200);
    });

    it('with canClose every one of them is allowed: reopen, change, close again', async () => {
      for (const [entity, key] of [['testRun', 'run'], ['session', 'session'], ['milestone', 'milestone']] as const) {
        expect((await closer.post(`/api/model/${entity}/update`, { where: { id: closed[key] }, data: { note: 'after closing' } })).status, entity).to.equal(200);
        expect((await closer.post(`/api/model/${entity}/update`, { where: { id: closed[key] }, data: { isCompleted: false } })).status, entity).to.equal(200);
        expect((await closer.post(`/api/model/${entity}/update`, { where: { id: closed[key] }, data: { isCompleted: true, completedAt: '2026-06-01T12:00:00Z' } })).status, entity).to.equal(200);
      }
      expect((await closer.post('/api/model/testRunCase/create', { data: { testRun: connect(closed.run), repositoryCase: connect(ids.otherCaseA) } })).status).to.equal(201);
      expect((await closer.post('/api/model/testRunResult/create', { data: { testRun: connect(closed.run), testRunCase: connect(closed.runCase), status: connect(ids.passed) } })).status).to.equal(201);
      expect((await closer.post('/api/model/sessionResult/create', { data: { session: connect(closed.session), status: connect(ids.passed) } })).status).to.equal(201);
      expect((await closer.post('/api/model/testRun/update', { where: { id: ids.otherRunA }, data: { completedAt: '2026-06-01T12:00:00Z' } })).status).to.equal(200);
      expect((await row('testRun', closed.run)).isCompleted).to.equal(true);
    });
  });

  describe('nested writes the events do not carry are a 400 at parse time, not a 500 at the contract', () => {
    it('a tag\'s runs, cases and sessions, a field\'s templates, a variant\'s configurations are written from the other side', async () => {
      const tag = await created(admin, 'tag', { name: 'nested-writes' });
      const field = await created(admin, 'caseField', { displayName: 'Priority', systemName: 'priority', type: 'TEXT_STRING' });
      const category = await created(admin, 'configCategory', { name: 'Browsers' });
      const variant = await created(admin, 'configVariant', { name: 'Firefox', category: connect(category) });
      const configuration = await created(admin, 'configuration', { name: 'Firefox on Linux' });
      const template = await created(admin, 'template', { name: 'Nested' });
      for (const [entity, op, body, at] of [
        ['tag', 'update', { where: { id: tag }, data: { testRuns: { set: [{ id: ids.runA }] } } }, 'data.testRuns'],
        ['tag', 'update', { where: { id: tag }, data: { repositoryCases: { set: [] } } }, 'data.repositoryCases'],
        ['tag', 'update', { where: { id: tag }, data: { sessions: { connect: { id: ids.sessionA } } } }, 'data.sessions'],
        ['tag', 'create', { data: { name: 'with cases', repositoryCases: { connect: [{ id: ids.caseA }] } } }, 'data.repositoryCases'],
        ['tag', 'upsert', { where: { id: tag }, create: { name: 'x' }, update: { testRuns: { set: [] } } }, 'update.testRuns'],
        ['caseField', 'update', { where: { id: field }, data: { templates: { set: [{ id: template }] } } }, 'data.templates'],
        ['configVariant', 'update', { where: { id: variant }, data: { configurations: { connect: { id: configuration } } } }, 'data.configurations'],
        ['project', 'update', { where: { id: ids.a }, data: { testRuns: { create: { name: 'nested' } } } }, 'data.testRuns'],
      ] as const) {
        const refusal = await refused(admin, entity, op, body, 400);
        expect(refusal.code, `${entity} ${op}`).to.equal('invalid-argument');
        expect(refusal.details.path, `${entity} ${op}`).to.equal(at);
      }
      // The sides that carry them write them.
      for (const [entity, body] of [
        ['testRun', { where: { id: ids.runA }, data: { tags: { connect: { id: tag } } } }],
        ['template', { where: { id: template }, data: { caseFields: { set: [{ id: field }] } } }],
        ['configuration', { where: { id: configuration }, data: { variants: { connect: { id: variant } } } }],
      ] as const) {
        const res = await admin.post(`/api/model/${entity}/update`, body);
        expect(res.status, `${entity}: ${JSON.stringify(res.body)}`).to.equal(200);
      }
      const tagRow = await admin.post('/api/model/tag/findUnique', { where: { id: tag }, include: { testRuns: { select: { id: true } } } });
      expect(tagRow.body.data.testRuns).to.deep.equal([{ id: ids.runA }]);
    });
  });

  describe('nobody moves a row into another project, not even with the permission in both (400 cross-project-move)', () => {
    const moves: [string, string, (() => Record<string, unknown>)][] = [
      ['testRunResult', 'resultA', () => ({ testRun: connect(ids.runB), testRunCase: connect(ids.runCaseB) })],
      ['testRunCase', 'runCaseA', () => ({ testRun: connect(ids.otherRunB), repositoryCase: connect(ids.otherCaseB) })],
      ['sessionResult', 'sessionResultA', () => ({ session: connect(ids.sessionB) })],
      ['testRun', 'runA', () => ({ project: connect(ids.b) })],
      ['session', 'sessionA', () => ({ project: connect(ids.b) })],
      ['repositoryFolder', 'folderA', () => ({ project: connect(ids.b) })],
    ];
    for (const [entity, key, data] of moves) {
      for (const who of ['both', 'admin'] as const) {
        it(`${who}: ${entity} update connecting ${Object.keys(data()).join(' and ')} of B`, async () => {
          const before = await row(entity, ids[key]);
          const refusal = await refused(who === 'both' ? both : admin, entity, 'update', { where: { id: ids[key] }, data: data() }, 400);
          expect(refusal.code).to.equal('cross-project-move');
          expect(refusal.details).to.include({ from: ids.a, to: ids.b });
          expect(await row(entity, ids[key])).to.deep.equal(before);
        });
      }
    }

    it('a reference left unchanged is checked too: a result moved to B\'s run keeps its run case of A', async () => {
      const refusal = await refused(admin, 'testRunResult', 'update', { where: { id: ids.resultB }, data: { testRun: connect(ids.runA) } }, 400);
      expect(refusal.code).to.equal('cross-project-move');
    });

    it('within a project, a result moved to another run must take a run case of that run', async () => {
      const refusal = await refused(admin, 'testRunResult', 'update', { where: { id: ids.resultA }, data: { testRun: connect(ids.otherRunA) } }, 400);
      expect(refusal.code).to.equal('test-run-case-not-in-run');
    });

    it('connecting the project a row is already in is no move', async () => {
      for (const [entity, key] of [['testRun', 'runA'], ['session', 'sessionA'], ['repositoryFolder', 'folderA']] as const) {
        const res = await both.post(`/api/model/${entity}/update`, { where: { id: ids[key] }, data: { project: connect(ids.a) } });
        expect(res.status, `${entity}: ${JSON.stringify(res.body)}`).to.equal(200);
      }
    });
  });
});
