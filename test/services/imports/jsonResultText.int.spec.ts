import { expect } from 'chai';
import { startTestApp, type TestApp } from '../../support/app';
import { expectCompleted, importingAdmin } from '../../imports/importClient';

/**
 * Issue 15, section 2, in result files: JSON's escapes can spell a lone surrogate or NUL, which
 * no text column holds. A Mocha JSON file with a title cut in the middle of an emoji failed its
 * import with import-internal-error (PostgreSQL refusing the chunk). Such a string now reads as
 * U+FFFD in its place, as a byte that is not UTF-8 does, and the import completes.
 */
describe('a JSON result file whose strings no text column holds', function () {
  this.timeout(120_000);
  let app: TestApp;
  before(async () => (app = await startTestApp()));
  after(() => app?.stop());

  it('imports, each unpaired surrogate and NUL read as U+FFFD; a surrogate pair stays', async () => {
    const t = await importingAdmin(app, 'Json text');
    const test = (title: string) => ({ title, fullTitle: `suite ${title}`, file: 'spec.js', duration: 1, err: {} });
    const tests = [test('cut \ud83d'), test('nul \u0000 inside'), test('low \ude80 alone'), test('rocket \ud83d\ude80')];
    const file = JSON.stringify({ stats: { tests: 4, passes: 4, failures: 0 }, tests, passes: tests, failures: [], pending: [] });
    expect(file).to.include('\\ud83d"').and.to.include('\\u0000');
    const answer = await t.upload({ name: 'Json text', format: 'mocha' }, [{ name: 'mocha.json', content: file }]);
    const runId = expectCompleted(answer);
    const cases = await t.model('testRunCase', 'findMany', { where: { testRunId: runId }, include: { repositoryCase: true } });
    expect(cases.map((c: { repositoryCase: { title: string } }) => c.repositoryCase.title).sort()).to.deep.equal(
      ['cut \ufffd', 'low \ufffd alone', 'nul \ufffd inside', 'rocket \ud83d\ude80'],
    );
  });
});
