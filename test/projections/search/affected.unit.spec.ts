import { expect } from 'chai';
import type { EventEnvelope } from '../../../contracts/envelope';
import { affectedBy, writesResultsInBulk } from '../../../projections/search/affected';

let position = 0;
const event = (type: string, data: Record<string, unknown>): EventEnvelope => ({
  id: `e${++position}`, streamId: 's', type, revision: '0', position: String(position), recordedAt: '2026-06-01T12:00:00.000Z', version: 1, data,
  metadata: { actor: { userId: 1, via: 'api' }, correlationId: 'c', causationId: null },
} as unknown as EventEnvelope);

/** Which documents a batch touches, from its events alone (projections/search/affected.ts). */
describe('search indexer: documents a batch of events touches', () => {
  it('an entity\'s own events touch its document; a result its failure document', () => {
    const { direct, fanOuts } = affectedBy([
      event('RepositoryCaseCreated', { caseId: 7, title: 't' }),
      event('TestRunResultCreated', { testRunResultId: 9 }),
      event('CommentDeleted', { commentId: 3 }),
      event('SessionCreated', { sessionId: 4 }),
    ]);
    expect(Object.fromEntries([...direct].map(([t, ids]) => [t, [...ids]]))).to.deep.equal({
      repository_cases: ['7'], failures: ['9'], comments: ['3'], sessions: ['4'],
    });
    expect(fanOuts).to.deep.equal([]);
  });

  it('a migration\'s bulk chunk: its cases touch their documents; its results touch a failure document when their status is a failure (new rows have no document to remove)', () => {
    const { direct, fanOuts } = affectedBy([
      event('ExternalImportRowsWritten', { jobId: 1, dataset: 'repository_cases', chunk: 1, entity: 'repositoryCase', fields: ['caseId', 'title'], rows: [[7, 'a'], [8, 'b']] }),
      event('ExternalImportRowsWritten', { jobId: 1, dataset: 'run_results', chunk: 2, entity: 'testRunResult', fields: ['testRunResultId', 'statusId'], rows: [[21, 1], [22, 2], [23, 3], [24, null]] }),
    ], new Set([2, 3]));
    expect(Object.fromEntries([...direct].map(([t, ids]) => [t, [...ids]]))).to.deep.equal({ repository_cases: ['7', '8'], failures: ['22', '23'] });
    expect(fanOuts).to.deep.equal([]);
  });

  it('tells a batch with results written in bulk (the failure statuses are read for it) from one without', () => {
    const results = event('ExternalImportRowsWritten', { jobId: 1, dataset: 'run_results', chunk: 2, entity: 'testRunResult', fields: ['testRunResultId'], rows: [[21]] });
    const cases = event('ExternalImportRowsWritten', { jobId: 1, dataset: 'repository_cases', chunk: 1, entity: 'repositoryCase', fields: ['caseId'], rows: [[7]] });
    expect(writesResultsInBulk([cases, results])).to.equal(true);
    expect(writesResultsInBulk([cases, event('TestRunResultCreated', { testRunResultId: 9 })])).to.equal(false);
  });

  it('a renamed tag fans out to the cases, runs and sessions that show it, every rename of the batch in one statement per type', () => {
    const { direct, fanOuts } = affectedBy([
      event('TagUpdated', { tagId: 1, changes: { name: 'a' } }),
      event('TagUpdated', { tagId: 2, changes: { name: 'b' } }),
    ]);
    expect(direct.size).to.equal(0);
    expect(fanOuts.map((f) => f.type)).to.deep.equal(['repository_cases', 'test_runs', 'sessions']);
    expect(fanOuts.every((f) => JSON.stringify(f.bindings) === '[[1,2]]')).to.equal(true);
  });

  it('an update that changes nothing shown elsewhere fans out nothing; a deletion always does', () => {
    expect(affectedBy([event('StatusUpdated', { statusId: 1, changes: { color: '#fff' } })]).fanOuts).to.deep.equal([]);
    expect(affectedBy([event('StatusUpdated', { statusId: 1, changes: { isSuccess: true } })]).fanOuts.map((f) => f.type)).to.deep.equal(['failures']);
    expect(affectedBy([event('RepositoryFolderUpdated', { folderId: 5, changes: { parentId: 2 } })]).fanOuts.map((f) => f.type)).to.deep.equal(['repository_cases']);
    expect(affectedBy([event('RepositoryFolderDeleted', { folderId: 5 })]).fanOuts.map((f) => f.type)).to.deep.equal(['repository_cases']);
    const project = affectedBy([event('ProjectUpdated', { projectId: 3, changes: { name: 'New' } })]);
    expect([...project.direct.keys()]).to.deep.equal(['projects']);
    expect(project.fanOuts.map((f) => f.type).sort()).to.deep.equal(['comments', 'failures', 'milestones', 'repository_cases', 'sessions', 'test_runs']);
    expect(affectedBy([event('UserUpdated', { userId: 2, changes: { name: 'Ann' } })]).fanOuts).to.have.length(7);
    expect(affectedBy([event('UserUpdated', { userId: 2, changes: { access: 'ADMIN' } })]).fanOuts).to.have.length(0);
  });

  it('import chunks (read shallow) fan out to the rows they wrote, by job and chunk time', () => {
    const { fanOuts } = affectedBy([
      event('TestResultsImported', { jobId: 4, importedAt: '2026-06-01T12:00:00.000Z', cases: {}, results: {} }),
      event('TestResultsImported', { jobId: 4, importedAt: '2026-06-01T12:00:01.000Z', cases: {}, results: {} }),
    ]);
    expect(fanOuts.map((f) => f.type)).to.deep.equal(['repository_cases', 'failures']);
    expect(fanOuts[0].bindings).to.deep.equal([[4, 4], ['2026-06-01T12:00:00.000Z', '2026-06-01T12:00:01.000Z']]);
  });
});
