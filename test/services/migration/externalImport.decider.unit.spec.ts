import { expect } from 'chai';
import type { ExternalImportEvent, ExternalMappingKey, ExternalMappings } from '../../../contracts/events';
import {
  type ExternalImportCommand, type ExternalImportState, decide, evolve, initialExternalImportState, isRunnable,
} from '../../../services/migration/externalImport.decider';
import { DomainError } from '../../../services/shared/errors';

const NOW = '2026-11-27T10:00:00.000Z';
const EMPTY = Object.fromEntries(['states', 'statuses', 'users', 'roles', 'templates', 'templateFields', 'milestoneTypes', 'groups', 'issueTrackers', 'configurations', 'tags']
  .map((k) => [k, []])) as unknown as ExternalMappings & Record<ExternalMappingKey, never[]>;
const FILE = { fileName: 'export.zip', fileSize: 10, sha256: 'a'.repeat(64), storedAs: 'b'.repeat(64), container: 'zip' as const };
const ANALYSIS = { datasets: [], ignored: [], warnings: [], errors: [], totals: { datasets: 0, rows: 0, warnings: 0, errors: 0 }, sources: EMPTY, suggestions: EMPTY };
const rows = (sourceIds: string[], ids: Array<number | null>, mapped = ids.map(() => false)) => ({
  sourceId: sourceIds, id: ids, key: ids.map(() => null), createdBy: ids.map(() => null), createdAt: ids.map(() => null),
  skipReason: ids.map((id) => (id === null ? 'its project is not imported' : null)), mapped,
});

/** Folds the commands from the empty stream; answers the state and every event. */
function run(commands: ExternalImportCommand[], from: ExternalImportState = initialExternalImportState()): { state: ExternalImportState; events: ExternalImportEvent[] } {
  let state = from;
  const events: ExternalImportEvent[] = [];
  for (const cmd of commands) {
    for (const e of decide(cmd, state)) {
      events.push(e);
      state = evolve(state, e);
    }
  }
  return { state, events };
}
const refusal = (cmd: ExternalImportCommand, state: ExternalImportState): string => {
  try {
    decide(cmd, state);
  } catch (err) {
    expect(err).to.be.instanceOf(DomainError);
    return (err as DomainError).code;
  }
  throw new Error('not refused');
};

const UPLOADED: ExternalImportCommand[] = [{ type: 'Upload', jobId: 5, file: FILE, now: NOW }];
const ANALYSED: ExternalImportCommand[] = [...UPLOADED, { type: 'StartAnalysis', now: NOW }, { type: 'RecordAnalysis', analysis: ANALYSIS, now: NOW }];
const CONFIGURED: ExternalImportCommand[] = [...ANALYSED, { type: 'Configure', mappings: EMPTY, durationUnit: 'us', reset: false, now: NOW }];
const IMPORTING: ExternalImportCommand[] = [...CONFIGURED, { type: 'Queue', now: NOW }, { type: 'Start', plan: [{ dataset: 'repository_cases', rows: 3 }], now: NOW }];

describe('external import job decider', () => {
  it('goes uploaded → analysing → analysed → configured → queued → importing → completed → closed', () => {
    const { state, events } = run([
      ...IMPORTING,
      { type: 'PlanChunk', dataset: 'repository_cases', entity: 'repositoryCase', lastRow: 3, rows: rows(['1', '2', '3'], [40, null, 41]) },
      { type: 'RecordChunk', created: 2, skipped: 1, now: NOW },
      { type: 'Complete', counts: { repository_cases: { created: 2, mapped: 0, skipped: 1 } }, notificationId: 9, now: NOW },
      { type: 'Close', fileDeleted: true, now: NOW },
    ]);
    expect(events.map((e) => e.type)).to.deep.equal([
      'ExternalImportUploaded', 'ExternalImportAnalysisStarted', 'ExternalImportAnalysed', 'ExternalImportConfigured', 'ExternalImportQueued',
      'ExternalImportStarted', 'ExternalImportChunkPlanned', 'ExternalImportChunkImported', 'ExternalImportCompleted', 'ExternalImportClosed',
    ]);
    expect(state).to.include({ phase: 'completed', closed: true, fileDeleted: true, notificationId: 9 });
    expect(state.progress.repository_cases).to.deep.equal({ lastRow: 3, chunks: 1, created: 2, skipped: 1 });
    expect([...state.ids.get('repository_cases')!.bySource]).to.deep.equal([['1', 40], ['3', 41]]);
    expect(isRunnable(state)).to.equal(false);
  });

  it('keeps the planned ids as the source → new id map; mapped rows resolve but are not the job\'s to roll back', () => {
    const { state } = run([
      ...IMPORTING,
      { type: 'PlanChunk', dataset: 'repository_cases', entity: 'repositoryCase', lastRow: 2, rows: rows(['1', '2'], [40, 7], [false, true]) },
    ]);
    const map = state.ids.get('repository_cases')!;
    expect(map.bySource.get('2')).to.equal(7);
    expect(map.created).to.deep.equal([40]);
    expect(state.openChunk).to.include({ dataset: 'repository_cases', chunk: 0, lastRow: 2 });
  });

  it('refuses steps out of order: one chunk open at a time, no chunk planned twice, no completion with a chunk open', () => {
    const { state } = run([...IMPORTING, { type: 'PlanChunk', dataset: 'repository_cases', entity: 'repositoryCase', lastRow: 2, rows: rows(['1', '2'], [40, 41]) }]);
    expect(refusal({ type: 'PlanChunk', dataset: 'repository_cases', entity: 'repositoryCase', lastRow: 3, rows: rows(['3'], [42]) }, state)).to.equal('external-import-chunk-open');
    expect(refusal({ type: 'Complete', counts: {}, notificationId: null, now: NOW }, state)).to.equal('external-import-importing');
    const recorded = run([{ type: 'RecordChunk', created: 2, skipped: 0, now: NOW }], state).state;
    expect(refusal({ type: 'PlanChunk', dataset: 'repository_cases', entity: 'repositoryCase', lastRow: 2, rows: rows(['2'], [41]) }, recorded)).to.equal('external-import-chunk-repeated');
    expect(refusal({ type: 'RecordChunk', created: 0, skipped: 0, now: NOW }, recorded)).to.equal('external-import-no-chunk');
  });

  it('refuses configuration, execution and rollback in the wrong phase, with the phase in the code', () => {
    const uploaded = run(UPLOADED).state;
    expect(refusal({ type: 'Configure', mappings: EMPTY, durationUnit: 'us', reset: false, now: NOW }, uploaded)).to.equal('external-import-uploaded');
    expect(refusal({ type: 'Queue', now: NOW }, run(ANALYSED).state)).to.equal('external-import-not-configured');
    expect(refusal({ type: 'RequestRollback', now: NOW }, run(IMPORTING).state)).to.equal('external-import-importing');
    expect(refusal({ type: 'Upload', jobId: 5, file: FILE, now: NOW }, uploaded)).to.equal('external-import-exists');
    expect(refusal({ type: 'Fail', code: 'x', error: 'x', details: {}, notificationId: null, now: NOW }, initialExternalImportState())).to.equal('external-import-not-found');
  });

  it('an analysis with errors fails the job in the same append; such a job is never configured', () => {
    const { state, events } = run([...UPLOADED, { type: 'StartAnalysis', now: NOW }, {
      type: 'RecordAnalysis', analysis: { ...ANALYSIS, errors: [{ code: 'no-importable-dataset', message: 'x', details: {} }] }, now: NOW,
      failure: { code: 'external-import-has-errors', error: 'The export has 1 error(s)', details: { errors: 1 }, notificationId: 3 },
    }]);
    expect(events.map((e) => e.type).slice(-2)).to.deep.equal(['ExternalImportAnalysed', 'ExternalImportFailed']);
    expect(state).to.include({ phase: 'failed', analysisErrors: 1, notificationId: 3 });
    expect(state.failure).to.deep.equal({ code: 'external-import-has-errors', error: 'The export has 1 error(s)' });
  });

  it('cancel: a job waiting for the administrator or a worker ends at once; a running one when its chunk is written', () => {
    const waiting = run([...CONFIGURED, { type: 'RequestCancel', now: NOW }]);
    expect(waiting.events.map((e) => e.type).slice(-2)).to.deep.equal(['ExternalImportCancelRequested', 'ExternalImportCancelled']);
    expect(waiting.state.phase).to.equal('cancelled');
    const running = run([...IMPORTING, { type: 'PlanChunk', dataset: 'repository_cases', entity: 'repositoryCase', lastRow: 1, rows: rows(['1'], [40]) }, { type: 'RequestCancel', now: NOW }]);
    expect(running.state).to.include({ phase: 'importing', cancelRequested: true });
    expect(refusal({ type: 'Cancel', now: NOW }, running.state)).to.equal('external-import-chunk-open');
    const cancelled = run([{ type: 'RecordChunk', created: 1, skipped: 0, now: NOW }, { type: 'Cancel', now: NOW }], running.state).state;
    expect(cancelled.phase).to.equal('cancelled');
    expect(decide({ type: 'RequestCancel', now: NOW }, cancelled), 'again: nothing').to.deep.equal([]);
    expect(refusal({ type: 'RequestCancel', now: NOW }, run([{ type: 'RequestRollback', now: NOW }], cancelled).state)).to.equal('external-import-rolling-back');
  });

  it('rollback: requested after the end, progress per dataset, then rolled back; it reopens a closed job and closes again', () => {
    const completed = run([...IMPORTING, { type: 'Complete', counts: {}, notificationId: null, now: NOW }, { type: 'Close', fileDeleted: false, now: NOW }]).state;
    expect(completed.closed).to.equal(true);
    const { state, events } = run([
      { type: 'RequestRollback', now: NOW }, { type: 'RequestRollback', now: NOW },
      { type: 'RecordRollback', dataset: 'repository_cases', processed: 2, deleted: 2, now: NOW }, { type: 'RecordRollback', dataset: 'repository_cases', processed: 2, deleted: 2, now: NOW },
      // Gone through, none of them written: nothing deleted, and not listed as deleted at the end.
      { type: 'RecordRollback', dataset: 'users', processed: 2, deleted: 0, now: NOW },
      { type: 'FinishRollback', now: NOW },
    ], completed);
    expect(events.map((e) => e.type)).to.deep.equal(['ExternalImportRollbackRequested', 'ExternalImportRollbackProgressed', 'ExternalImportRollbackProgressed', 'ExternalImportRolledBack']);
    expect(state).to.include({ phase: 'rolledBack', closed: false });
    expect(isRunnable(state), 'it closes again (the file goes)').to.equal(true);
    expect(state.processed).to.deep.equal({ repository_cases: 2, users: 2 });
    expect(events[3].data).to.deep.include({ deleted: { repository_cases: 2 } });
    expect(refusal({ type: 'Queue', now: NOW }, state)).to.equal('external-import-rolled-back');
  });

  it('rollback progress written before v3 (deleted only) counts as rows gone through', () => {
    const s = evolve({ ...initialExternalImportState(), phase: 'rollingBack' }, { type: 'ExternalImportRollbackProgressed', data: { jobId: 1, dataset: 'runs', deleted: 4, at: NOW } } as never);
    expect(s.processed).to.deep.equal({ runs: 4 });
    expect(s.deleted).to.deep.equal({ runs: 4 });
  });

  it('a failure during a rollback ends it failed (a new rollback may be asked); repeats append nothing', () => {
    const failed = run([...IMPORTING, { type: 'Fail', code: 'x', error: 'boom', details: {}, notificationId: null, now: NOW }]).state;
    expect(decide({ type: 'Fail', code: 'x', error: 'again', details: {}, notificationId: null, now: NOW }, failed)).to.deep.equal([]);
    const rolling = run([{ type: 'RequestRollback', now: NOW }], failed).state;
    const again = run([{ type: 'Fail', code: 'y', error: 'rollback failed', details: {}, notificationId: null, now: NOW }], rolling);
    expect((again.events[0].data as { phase: string }).phase).to.equal('rollingBack');
    expect(again.state.phase).to.equal('failed');
    expect(decide({ type: 'RequestRollback', now: NOW }, again.state)).to.have.length(1);
  });
});
