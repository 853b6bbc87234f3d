import { randomInt } from 'node:crypto';
import { expect } from 'chai';
import type { Knex } from 'knex';
import { LIMITS } from '../../contracts/limits';
import { startTestApp, type TestApp } from '../support/app';
import { JUNIT_IMPORT_PATH } from '../../services/imports/imports.routes';
import { expectCompleted, importingAdmin, postImport } from './importClient';

/** `n` random letters, ASCII or not: what a generated test name holds. */
function letters(n: number, alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'): string {
  const chars = [...alphabet];
  let text = '';
  for (let i = 0; i < n; i++) text += chars[randomInt(chars.length)];
  return text;
}
const NON_ASCII = '𠀀𠀁𠀂𠜎𠝹𝒜𝒞😀🎉🦀äöüßéèêçñøåæœłśźżčřšžğışŋðþαβγδεζηθλμπσφψωжзийклмнпфцчшщыэюя中文字測試数据漢字ひらがなカタカナ한국어';

/**
 * Long values that an event contract accepts and the read model used to refuse (issue 35): a
 * case whose title and class together outgrow a btree index row, a folder of a long name. The
 * import completes and the read model shows the case; a value past the contract's limit is
 * refused with 400 before anything is appended.
 * Slow: 7 tests on one app, each importing through the API and waiting for the job; one grows a case to 10,000 steps in 10 updates of 1,000 (~11 s)
 */
describe('long values: what the contracts accept, the read model stores (issue 35)', function () {
  this.timeout(300_000);
  let app: TestApp;
  let t: Awaited<ReturnType<typeof importingAdmin>>;

  before(async () => {
    app = await startTestApp();
    t = await importingAdmin(app, 'Long names');
  });
  after(() => app?.stop());

  const head = () => app.deps.store.headPosition();

  it('imports a JUnit case whose class and name have 1,500 random letters each, and shows it', async () => {
    const className = `com.example.${letters(1500)}`;
    const name = `shouldWork[${letters(1500)}]`;
    const file = `<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="long"><testcase classname="${className}" name="${name}"/></testsuite>\n`;
    const runId = expectCompleted(await postImport(app.url, JUNIT_IMPORT_PATH, { projectId: t.projectId, name: 'long' }, [{ name: 'long.xml', content: file }], t.token));
    const cases = await t.model('testRunCase', 'findMany', { where: { testRunId: runId }, include: { repositoryCase: true, status: true } });
    expect(cases.map((c: any) => [c.repositoryCase.title, c.repositoryCase.className, c.status.systemName])).to.deep.equal([[name, className, 'passed']]);
    // A second import of the same test finds the case again (the identity lookup) instead of making another.
    const again = expectCompleted(await postImport(app.url, JUNIT_IMPORT_PATH, { projectId: t.projectId, name: 'long' }, [{ name: 'long.xml', content: file }], t.token));
    const second = await t.model('testRunCase', 'findMany', { where: { testRunId: again } });
    expect(second.map((c: any) => c.repositoryCaseId)).to.deep.equal(cases.map((c: any) => c.repositoryCaseId));
  });

  it('imports cases of the longest title and class the contract keeps, in non-ASCII letters (4 bytes and 3 a letter), under long suite names', async () => {
    const title = letters(LIMITS.caseTitle, NON_ASCII);
    const className = letters(LIMITS.caseTitle, NON_ASCII);
    const suite = letters(LIMITS.name, NON_ASCII);
    const file = `<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="${suite}"><testcase classname="${className}" name="${title}"/></testsuite>\n`;
    const runId = expectCompleted(await postImport(app.url, JUNIT_IMPORT_PATH, { projectId: t.projectId, name: 'wide' }, [{ name: 'wide.xml', content: file }], t.token));
    const [runCase] = await t.model('testRunCase', 'findMany', { where: { testRunId: runId }, include: { repositoryCase: { include: { folder: true } } } });
    expect([runCase.repositoryCase.title, runCase.repositoryCase.className]).to.deep.equal([title, className]);
    expect(runCase.repositoryCase.folder.name).to.equal(suite);
  });

  it('keeps a folder of the longest name the contract takes (non-ASCII), and refuses a longer one with 400 before anything is appended', async () => {
    const name = letters(LIMITS.name, NON_ASCII);
    const folder = await t.model('repositoryFolder', 'create', { data: { name, project: { connect: { id: t.projectId } } } });
    expect(folder.name).to.equal(name);
    const before = await head();
    const res = await t.admin.post('/api/model/repositoryFolder/create', { data: { name: letters(3000), project: { connect: { id: t.projectId } } } });
    expect(res.status, JSON.stringify(res.body)).to.equal(400);
    expect(res.body).to.deep.include({ code: 'invalid-argument' });
    expect(res.body.details).to.deep.include({ path: 'data.name', maxLength: LIMITS.name });
    expect(await head()).to.equal(before);
  });

  it('refuses a case title of 900,000 characters with 400 invalid-argument before anything is appended; the longest title it takes is shown', async () => {
    const created = await t.model('repositoryCase', 'create', { data: { title: 'short', project: { connect: { id: t.projectId } } } });
    const before = await head();
    const res = await t.admin.post('/api/model/repositoryCase/update', { where: { id: created.id }, data: { title: letters(900_000) } });
    expect(res.status, JSON.stringify(res.body).slice(0, 500)).to.equal(400);
    expect(res.body.code).to.equal('invalid-argument');
    expect(res.body.details).to.deep.include({ path: 'data.title', maxLength: LIMITS.caseTitle });
    expect(await head()).to.equal(before);
    const longest = letters(LIMITS.caseTitle, NON_ASCII);
    const updated = await t.model('repositoryCase', 'update', { where: { id: created.id }, data: { title: longest, className: longest } });
    expect([updated.title, updated.className]).to.deep.equal([longest, longest]);
  });

  it('the import\'s lookups of a case by title and class and of a folder by name use their digest indexes (EXPLAIN)', async () => {
    const plan = async (sql: string, bindings: Knex.RawBinding[]) => app.deps.knex.transaction(async (trx) => {
      await trx.raw('SET LOCAL enable_seqscan = off'); // what the query's form allows, whatever the table's size
      return ((await trx.raw(`EXPLAIN ${sql}`, bindings)).rows as { 'QUERY PLAN': string }[]).map((r) => r['QUERY PLAN']).join('\n');
    });
    // The statements of services/imports/importJob.saga.ts (findCases' legacy lookup, foldersFor).
    const cases = await plan(`SELECT x.i, array(SELECT c.id FROM repository_cases c
        WHERE c.project_id = ? AND c.source = ? AND md5(c.title) = md5(x.t) AND c.title = x.t AND c.class_name IS NOT DISTINCT FROM x.c
          AND c.identity_key IS NULL AND NOT c.is_deleted ORDER BY c.id LIMIT 50) AS ids
      FROM unnest(?::text[], ?::text[]) WITH ORDINALITY AS x(t, c, i)`, [t.projectId, 'JUNIT', ['a'], ['b']]);
    expect(cases).to.include('repository_cases_identity');
    const folders = await app.deps.knex('repository_folders').where({ project_id: t.projectId, name: 'x', is_deleted: false }).whereRaw('md5(name) = md5(?)', ['x'])
      .whereNull('parent_id').orderBy('id').first('id').toSQL().toNative();
    expect(await plan(folders.sql.replace(/\$\d+/g, '?'), [...folders.bindings] as Knex.RawBinding[])).to.include('repository_folders_by_name');
  });

  it('completes an import whose warnings quote long values, each quoted value cut to LIMITS.name with an ellipsis (issue 36)', async () => {
    const time = '9'.repeat(1500) + 'x'.repeat(1500);
    const suite = letters(2100);
    const junit = `<?xml version="1.0" encoding="UTF-8"?>\n<testsuites><testsuite name="t"><testcase classname="A" name="slow" time="${time}"/></testsuite>`
      + `<testsuite name="${suite}" timestamp="not a time ${letters(50)}"><testcase classname="B" name="stamped"/></testsuite></testsuites>\n`;
    const testName = letters(2100);
    const testng = `<?xml version="1.0" encoding="UTF-8"?>\n<testng-results><suite name="S"><test name="${testName}" started-at="sometime ${letters(10)}">`
      + '<class name="C"><test-method name="m" status="PASS" duration-ms="1"/></class></test></suite></testng-results>\n';
    for (const [name, content] of [['long-time.xml', junit], ['testng-results.xml', testng]]) {
      const answer = await t.upload({ name: `quotes ${name}` }, [{ name, content }]);
      expectCompleted(answer);
      const warnings = answer.events.filter((e) => 'warning' in e).map((e) => e.warning as { message: string; case?: string });
      expect(warnings.length, name).to.be.greaterThan(0);
      for (const w of warnings) {
        expect(w.message.length, w.message.slice(0, 300)).to.be.at.most(2 * LIMITS.name + 200);
        expect(w.case?.length ?? 0).to.be.at.most(LIMITS.name);
      }
      expect(warnings.some((w) => w.message.includes('…')), JSON.stringify(warnings).slice(0, 500)).to.equal(true);
    }
  });

  it('refuses steps added past a list\'s limit (10,000) with 400 before anything is appended', async () => {
    const created = await t.model('repositoryCase', 'create', { data: { title: 'many steps', project: { connect: { id: t.projectId } } } });
    const steps = (n: number) => Array.from({ length: n }, (_, i) => ({ step: `step ${i}` }));
    for (let i = 0; i < LIMITS.items / 1000; i++) await t.model('repositoryCase', 'update', { where: { id: created.id }, data: { steps: { create: steps(1000) } } });
    const before = await head();
    const res = await t.admin.post('/api/model/repositoryCase/update', { where: { id: created.id }, data: { steps: { create: steps(1) } } });
    expect(res.status, JSON.stringify(res.body)).to.equal(400);
    expect(res.body).to.deep.include({ code: 'invalid-argument' });
    expect(res.body.details).to.deep.equal({ path: 'data.steps', maxItems: LIMITS.items });
    expect(await head()).to.equal(before);
  });
});
