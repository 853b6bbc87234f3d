import { expect } from 'chai';
import { registerUser } from '../../../services/identity/identity.handlers';
import { DEFAULTS, DEFAULTS_STREAM, seedDefaults } from '../../../services/entities/seed';
import { systemMetadata } from '../../../services/shared/context';
import { startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';

/** The whole domain through the model API: every write a command and its events, every answer the read model's row. */
describe('the domain through the model API', function () {
  this.timeout(120_000);
  let app: TestApp;
  let c: HttpClient;
  let adminId: number;
  const ids: Record<string, number> = {};

  const create = async (entity: string, data: unknown, extra: Record<string, unknown> = {}) => {
    const res = await c.post(`/api/model/${entity}/create`, { data, ...extra });
    expect(res.status, `${entity}.create ${JSON.stringify(res.body)}`).to.equal(201);
    return res.body.data;
  };
  const refused = async (entity: string, op: string, body: unknown, status: number, code: string) => {
    const before = (await app.deps.store.headPosition()).toString();
    const res = await c.post(`/api/model/${entity}/${op}`, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(status);
    expect(res.body.code).to.equal(code);
    expect((await app.deps.store.headPosition()).toString(), 'a refused write appends nothing').to.equal(before);
    return res.body;
  };
  const first = async (entity: string, where: unknown) => (await c.post(`/api/model/${entity}/findFirst`, { where })).body.data;

  before(async () => {
    app = await startTestApp();
    adminId = await registerUser(app.deps, { email: 'domain@example.com', name: 'Dora', password: 'domain-password-1', access: 'ADMIN' }, systemMetadata('test'));
    c = new HttpClient(app.url);
    expect((await c.post('/api/auth/login', { email: 'domain@example.com', password: 'domain-password-1' })).status).to.equal(200);
  });
  after(() => app.stop());

  describe('a fresh installation, seeded through events', () => {
    it('has the default workflows, statuses, template, roles and milestone types', async () => {
      expect(await seedDefaults(app.deps, systemMetadata('seed'))).to.equal(DEFAULTS.length);
      const statuses = (await c.post('/api/model/status/findMany', { orderBy: { order: 'asc' }, select: { systemName: true, isSuccess: true, isFailure: true, aliases: true } })).body.data;
      expect(statuses.map((s: { systemName: string }) => s.systemName)).to.deep.equal(['untested', 'passed', 'failed', 'error', 'skipped', 'blocked', 'retest']);
      expect(statuses[1]).to.deep.include({ isSuccess: true, isFailure: false });
      expect(statuses[3].aliases).to.include('errored');
      const workflows = (await c.post('/api/model/workflow/groupBy', { by: ['scope'], _count: { _all: true }, orderBy: { scope: 'asc' } })).body.data;
      expect(workflows).to.deep.equal([{ scope: 'CASES', _count: { _all: 3 } }, { scope: 'RUNS', _count: { _all: 3 } }, { scope: 'SESSIONS', _count: { _all: 3 } }]);
      expect(await first('template', { isDefault: true })).to.include({ name: 'Default' });
      const tester = (await c.post('/api/model/role/findFirst', { where: { name: 'Tester' }, include: { permissions: true } })).body.data;
      expect(tester.isDefault).to.equal(true);
      expect(tester.permissions.map((p: { area: string }) => p.area)).to.include('TestRuns');
      expect(await first('milestoneType', { isDefault: true })).to.include({ name: 'Release' });
    });

    it('seeding again creates nothing, and the plan was written once', async () => {
      expect(await seedDefaults(app.deps, systemMetadata('seed'))).to.equal(0);
      expect(await app.deps.store.readStream(DEFAULTS_STREAM)).to.have.length(1);
    });

    it('a start killed half-way through the seeding finishes it on the next start', async () => {
      const other = await startTestApp();
      try {
        const killed = { ...other.deps, ids: other.deps.ids };
        let creates = 0;
        const store = killed.store;
        const dying = {
          ...killed,
          store: {
            ...store,
            append: async (...args: Parameters<typeof store.append>) => {
              if (args[1][0]?.type.endsWith('Created') && ++creates > 5) throw new Error('killed');
              return store.append(...args);
            },
          },
        };
        await seedDefaults(dying, systemMetadata('seed')).catch((e: Error) => expect(e.message).to.equal('killed'));
        expect(await seedDefaults(other.deps, systemMetadata('seed'))).to.equal(DEFAULTS.length - 5);
        expect(Number((await other.deps.knex('statuses').count({ n: '*' }))[0].n)).to.equal(7);
        expect(Number((await other.deps.knex('workflows').count({ n: '*' }))[0].n)).to.equal(9);
      } finally {
        await other.stop();
      }
    });
  });

  describe('test cases', () => {
    before(async () => {
      ids.project = (await create('project', { name: 'Shop' })).id;
      ids.otherProject = (await create('project', { name: 'Other' })).id;
      ids.folder = (await create('repositoryFolder', { name: 'Checkout', project: { connect: { id: ids.project } } })).id;
      ids.otherFolder = (await create('repositoryFolder', { name: 'Elsewhere', project: { connect: { id: ids.otherProject } } })).id;
      ids.smoke = (await create('tag', { name: 'smoke' })).id;
      ids.slow = (await create('tag', { name: 'slow' })).id;
      ids.draft = (await first('workflow', { scope: 'CASES', name: 'Draft' })).id;
      ids.runNew = (await first('workflow', { scope: 'RUNS', name: 'New' })).id;
      ids.template = (await first('template', { name: 'Default' })).id;
      ids.priority = (await create('caseField', { displayName: 'Priority', systemName: 'priority', type: 'DROPDOWN' })).id;
      await create('fieldOption', { name: 'High', caseField: { connect: { id: ids.priority } } });
    });

    it('a tag name is unique (whatever its case) among tags not deleted', async () => {
      await refused('tag', 'create', { data: { name: 'SMOKE' } }, 409, 'tag-name-taken');
      const doomed = (await create('tag', { name: 'doomed' })).id;
      await c.post('/api/model/tag/delete', { where: { id: doomed } });
      expect((await create('tag', { name: 'Doomed' })).name).to.equal('Doomed');
    });

    it('of ten creates of one new tag name at once, one lands; the others are refused with 409', async () => {
      const answers = await Promise.all(Array.from({ length: 10 }, (_, i) => c.post('/api/model/tag/create', { data: { name: i % 2 ? 'Race' : 'race' } })));
      expect(answers.filter((a) => a.status === 201)).to.have.length(1);
      for (const refusal of answers.filter((a) => a.status !== 201)) {
        expect(refusal.status, JSON.stringify(refusal.body)).to.equal(409);
        expect(refusal.body.code).to.be.oneOf(['tag-name-taken', 'tag-taken']);
      }
      const tags = (await c.post('/api/model/tag/findMany', { where: { name: { equals: 'race', mode: 'insensitive' } } })).body.data;
      expect(tags).to.have.length(1);
    });

    it('creates a case with steps, tags, template, state and field values in one write', async () => {
      const kase = await create('repositoryCase', {
        title: 'Pay by card', className: 'shop.Checkout', automated: true,
        project: { connect: { id: ids.project } }, folder: { connect: { id: ids.folder } },
        template: { connect: { id: ids.template } }, state: { connect: { id: ids.draft } },
        tags: { connect: [{ id: ids.smoke }, { id: ids.slow }] },
        steps: { create: [{ step: 'Open the cart', expectedResult: 'The cart shows', order: 1 }, { step: 'Pay', order: 2 }] },
        fieldValues: { create: { field: { connect: { id: ids.priority } }, value: 'High' } },
      }, { include: { steps: { orderBy: { order: 'asc' } }, tags: { orderBy: { name: 'asc' } }, fieldValues: true } });
      ids.case = kase.id;
      expect(kase).to.deep.include({ title: 'Pay by card', source: 'MANUAL', automated: true, currentVersion: 1, createdById: adminId, stateId: ids.draft });
      expect(kase.steps.map((s: { step: string; expectedResult: string | null }) => [s.step, s.expectedResult])).to.deep.equal([['Open the cart', 'The cart shows'], ['Pay', null]]);
      expect(kase.tags.map((t: { name: string }) => t.name)).to.deep.equal(['slow', 'smoke']);
      expect(kase.fieldValues).to.have.length(1);
      expect(kase.fieldValues[0]).to.include({ fieldId: ids.priority, value: 'High' });
      ids.step = kase.steps[0].id;
      // One event says it all: links as ids, children whole, who did it in the metadata.
      const [event] = await app.deps.store.readStream(`repositoryCase-${kase.id}`);
      expect(event.type).to.equal('RepositoryCaseCreated');
      expect(event.data).to.deep.include({ caseId: kase.id, title: 'Pay by card', tagIds: [ids.smoke, ids.slow], createdById: adminId, templateId: ids.template });
      expect((event.data as { steps: unknown[] }).steps).to.deep.equal([
        { id: kase.steps[0].id, step: 'Open the cart', expectedResult: 'The cart shows', order: 1 },
        { id: kase.steps[1].id, step: 'Pay', expectedResult: null, order: 2 },
      ]);
      expect(event.metadata.actor).to.deep.include({ userId: adminId, via: 'session' });
    });

    it('updates links with set / disconnect and replaces steps; every change is a new version', async () => {
      const res = await c.post('/api/model/repositoryCase/update', {
        where: { id: ids.case },
        data: { tags: { disconnect: { id: ids.slow } }, steps: { delete: [{ id: ids.step }], create: [{ step: 'Pay again' }] } },
        include: { tags: true, steps: true, versions: { orderBy: { version: 'asc' } } },
      });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body.data.tags.map((t: { id: number }) => t.id)).to.deep.equal([ids.smoke]);
      expect(res.body.data.steps.map((s: { step: string }) => s.step).sort()).to.deep.equal(['Pay', 'Pay again']);
      expect(res.body.data.currentVersion).to.equal(2);
      expect(res.body.data.versions.map((v: { version: number }) => v.version)).to.deep.equal([1, 2]);
      const [, updated] = await app.deps.store.readStream(`repositoryCase-${ids.case}`);
      expect(updated.type).to.equal('RepositoryCaseUpdated');
      expect(Object.keys((updated.data as { changes: object }).changes).sort()).to.deep.equal(['steps', 'tagIds']);
      const set = await c.post('/api/model/repositoryCase/update', { where: { id: ids.case }, data: { title: 'Pay by card (3DS)', tags: { set: [] } }, include: { tags: true } });
      expect(set.body.data.tags).to.deep.equal([]);
      expect(set.body.data.currentVersion).to.equal(3);
      const versions = (await c.post('/api/model/repositoryCaseVersion/findMany', { where: { repositoryCaseId: ids.case }, orderBy: { version: 'asc' } })).body.data;
      expect(versions.map((v: { title: string }) => v.title)).to.deep.equal(['Pay by card', 'Pay by card', 'Pay by card (3DS)']);
      expect(versions[0].changedById).to.equal(adminId);
    });

    it('refuses a state of another scope, a folder of another project, an unknown tag; appending nothing', async () => {
      const base = { title: 'x', project: { connect: { id: ids.project } } };
      await refused('repositoryCase', 'create', { data: { ...base, state: { connect: { id: ids.runNew } } } }, 400, 'workflow-scope-mismatch');
      await refused('repositoryCase', 'create', { data: { ...base, folder: { connect: { id: ids.otherFolder } } } }, 400, 'repository-folder-in-other-project');
      await refused('repositoryCase', 'create', { data: { ...base, tags: { connect: { id: 999_999 } } } }, 404, 'tag-not-found');
      await refused('repositoryCase', 'create', { data: { ...base, steps: { create: [{ expectedResult: 'no step' }] } } }, 400, 'invalid-argument');
      await refused('repositoryCase', 'create', { data: { ...base, source: 'FAX' } }, 400, 'invalid-argument');
      const forged = await refused('repositoryCase', 'create', { data: { ...base, createdBy: { connect: { id: adminId + 1 } } } }, 400, 'invalid-argument');
      expect(forged.details.path).to.equal('data.createdBy');
    });

    it('owned and derived entities are read-only on their own', async () => {
      await refused('step', 'create', { data: { step: 'x' } }, 400, 'read-only-entity');
      await refused('repositoryCaseVersion', 'delete', { where: { id: 1 } }, 400, 'read-only-entity');
    });
  });

  describe('test runs, results and sessions', () => {
    before(async () => {
      ids.configCategory = (await create('configCategory', { name: 'Browser' })).id;
      ids.chrome = (await create('configVariant', { name: 'Chrome', category: { connect: { id: ids.configCategory } } })).id;
      ids.config = (await create('configuration', { name: 'Chrome desktop', variants: { connect: [{ id: ids.chrome }] } }, { include: { variants: true } })).id;
      ids.milestone = (await create('milestone', {
        name: '1.0', project: { connect: { id: ids.project } }, milestoneType: { connect: { id: (await first('milestoneType', { name: 'Release' })).id } },
      })).id;
      ids.passed = (await first('status', { systemName: 'passed' })).id;
    });

    it('a run with its configuration, milestone, state and tags; its cases; results with step results', async () => {
      const run = await create('testRun', {
        name: 'Nightly', project: { connect: { id: ids.project } }, configuration: { connect: { id: ids.config } },
        milestone: { connect: { id: ids.milestone } }, state: { connect: { id: ids.runNew } }, tags: { connect: { id: ids.smoke } },
      }, { include: { tags: true, configuration: { include: { variants: true } }, milestone: true, state: true } });
      ids.run = run.id;
      expect(run).to.deep.include({ testRunType: 'REGULAR', isCompleted: false, createdById: adminId });
      expect(run.configuration.variants.map((v: { name: string }) => v.name)).to.deep.equal(['Chrome']);
      expect(run.state.scope).to.equal('RUNS');

      ids.runCase = (await create('testRunCase', { testRun: { connect: { id: ids.run } }, repositoryCase: { connect: { id: ids.case } } })).id;
      await refused('testRunCase', 'create', { data: { testRun: { connect: { id: ids.run } }, repositoryCase: { connect: { id: ids.case } } } }, 409, 'test-run-case-test-run-id-repository-case-id-taken');

      const kase = (await c.post('/api/model/repositoryCase/findUnique', { where: { id: ids.case }, include: { steps: true } })).body.data;
      const result = await create('testRunResult', {
        durationMs: 1534, executedAt: '2026-05-01T10:00:00Z', notes: 'fine',
        testRun: { connect: { id: ids.run } }, testRunCase: { connect: { id: ids.runCase } }, status: { connect: { id: ids.passed } },
        stepResults: { create: kase.steps.map((s: { id: number }) => ({ step: { connect: { id: s.id } }, status: { connect: { id: ids.passed } }, durationMs: 10 })) },
      }, { include: { stepResults: true, status: true } });
      expect(result).to.deep.include({ durationMs: 1534, attempt: 1, executedById: adminId, executedAt: '2026-05-01T10:00:00.000Z' });
      expect(result.status.systemName).to.equal('passed');
      expect(result.stepResults).to.have.length(2);

      const events = await app.deps.store.readAll({ after: '0' });
      const recorded = events.find((e) => e.type === 'TestRunResultCreated')!;
      expect(recorded.metadata.actor).to.deep.include({ userId: adminId, via: 'session' });
      expect(recorded.data).to.deep.include({ durationMs: 1534, statusId: ids.passed });
    });

    it('refuses a result whose run case is in another run, and a run case of another project\'s case', async () => {
      const other = (await create('testRun', { name: 'Other run', project: { connect: { id: ids.project } } })).id;
      await refused('testRunResult', 'create', {
        data: { testRun: { connect: { id: other } }, testRunCase: { connect: { id: ids.runCase } }, status: { connect: { id: ids.passed } } },
      }, 400, 'test-run-case-not-in-run');
      const foreign = (await create('repositoryCase', { title: 'Foreign', project: { connect: { id: ids.otherProject } } })).id;
      await refused('testRunCase', 'create', { data: { testRun: { connect: { id: other } }, repositoryCase: { connect: { id: foreign } } } }, 400, 'repository-case-in-other-project');
    });

    it('sessions with results, attachments, comments, integrations, assignments', async () => {
      const session = await create('session', { name: 'Explore checkout', mission: 'Break it', project: { connect: { id: ids.project } } });
      await create('sessionResult', { session: { connect: { id: session.id } }, status: { connect: { id: ids.passed } }, resultData: 'ok', durationMs: 60_000 });
      // An attachment holds a file uploaded to its project.
      const form = new FormData();
      form.append('projectId', String(ids.project));
      form.append('file', new Blob(['session log\n'], { type: 'text/plain' }), 'log.txt');
      const uploaded = await fetch(`${app.url}/api/files/upload`, { method: 'POST', headers: { cookie: c.cookie!, origin: new URL(app.url).origin }, body: form });
      const file = ((await uploaded.json()) as { data: { url: string; size: number }[] }).data[0];
      expect(uploaded.status).to.equal(201);
      await create('attachment', { name: 'log.txt', url: file.url, size: file.size, project: { connect: { id: ids.project } }, testRun: { connect: { id: ids.run } } });
      await create('comment', { content: 'Looks good', project: { connect: { id: ids.project } }, repositoryCase: { connect: { id: ids.case } } });
      await create('integration', { name: 'Jira', provider: 'JIRA', url: 'https://jira.example.com', settings: { projectKey: 'SHOP' } });
      await create('projectAssignment', { user: { connect: { id: adminId } }, project: { connect: { id: ids.project } } });
      await refused('projectAssignment', 'create', { data: { user: { connect: { id: adminId } }, project: { connect: { id: ids.project } } } }, 409, 'project-assignment-user-id-project-id-taken');
      const project = (await c.post('/api/model/project/findUnique', {
        where: { id: ids.project },
        select: { name: true, _count: { select: { repositoryCases: true, testRuns: true, sessions: true, attachments: true, comments: true, assignments: true } } },
      })).body.data;
      expect(project._count).to.deep.equal({ repositoryCases: 1, testRuns: 2, sessions: 1, attachments: 1, comments: 1, assignments: 1 });
      const integration = await first('integration', { name: 'Jira' });
      expect(integration.settings).to.deep.equal({ projectKey: 'SHOP' });
    });

    it('milestones form a tree: a milestone cannot move under itself or its descendants', async () => {
      const root = (await create('milestone', { name: '2.0', project: { connect: { id: ids.project } } })).id;
      const child = (await create('milestone', { name: '2.0-beta', project: { connect: { id: ids.project } }, parent: { connect: { id: root } } })).id;
      const grandchild = (await create('milestone', { name: '2.0-beta-1', project: { connect: { id: ids.project } }, parent: { connect: { id: child } } })).id;
      await refused('milestone', 'update', { where: { id: root }, data: { parent: { connect: { id: grandchild } } } }, 400, 'milestone-cycle');
      await refused('milestone', 'update', { where: { id: root }, data: { parent: { connect: { id: root } } } }, 400, 'milestone-cycle');
      const tree = (await c.post('/api/model/milestone/findUnique', { where: { id: root }, include: { children: { include: { children: true } } } })).body.data;
      expect(tree.children[0].children[0].id).to.equal(grandchild);
      const moved = await c.post('/api/model/milestone/update', { where: { id: grandchild }, data: { parent: { disconnect: true } } });
      expect(moved.body.data.parentId).to.equal(null);
    });

    it('a project assignment is removed for good on delete; a deleted project can be restored', async () => {
      const assignment = await first('projectAssignment', { projectId: ids.project });
      expect((await c.post('/api/model/projectAssignment/delete', { where: { id: assignment.id } })).status).to.equal(200);
      expect(await first('projectAssignment', { projectId: ids.project })).to.equal(null);
      await c.post('/api/model/project/delete', { where: { id: ids.otherProject } });
      const restored = await c.post('/api/model/project/update', { where: { id: ids.otherProject }, data: { isDeleted: false } });
      expect(restored.body.data.isDeleted).to.equal(false);
    });
  });
});
