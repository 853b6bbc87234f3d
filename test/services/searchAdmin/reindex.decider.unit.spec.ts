import { expect } from 'chai';
import type { SearchReindexEvent } from '../../../contracts/events';
import { currentType, documentsOf, type ReindexCommand, reindexDecider, reindexJobStream, type ReindexRequest } from '../../../services/searchAdmin/reindex.decider';
import { given } from '../../support/given';

const NOW = '2026-03-01T10:00:00.000Z';
const LATER = '2026-03-01T11:00:00.000Z';
const full: ReindexRequest = { mode: 'full', projectIds: null, types: null, batchSize: 2, runAt: null, repeatEveryMinutes: null, repeatOf: null };
const requested = (request: ReindexRequest = full): SearchReindexEvent => ({ type: 'SearchReindexRequested', data: { jobId: 4, ...request, requestedAt: NOW } });
const started: SearchReindexEvent = {
  type: 'SearchReindexStarted',
  data: { jobId: 4, engine: 'opensearch', target: 't_', version: 3, replacesVersion: 2, checkpoints: { search: '10' }, totals: { projects: 1, failures: 3 }, startedAt: NOW },
};
const progressed = (type: 'projects' | 'failures', afterId: number, documents: number, typeDone: boolean): SearchReindexEvent =>
  ({ type: 'SearchReindexProgressed', data: { jobId: 4, type, afterId, documents, typeDone, at: NOW } });
const progress = (type: 'projects' | 'failures', afterId: number, documents: number, typeDone = false): ReindexCommand =>
  ({ type: 'Progress', reindexType: type, afterId, documents, typeDone, now: NOW });
const start: ReindexCommand = { type: 'Start', engine: 'opensearch', target: 't_', version: 3, replacesVersion: 2, checkpoints: { search: '10' }, totals: { projects: 1, failures: 3 }, now: NOW };
const job = (...past: SearchReindexEvent[]) => given(reindexDecider, past);
const stateOf = (...past: SearchReindexEvent[]) => past.reduce(reindexDecider.evolve, reindexDecider.initialState);

describe('SearchReindex decider (a reindex job\'s stream)', () => {
  it('names its stream searchReindex-<id>', () => expect(reindexJobStream(4)).to.equal('searchReindex-4'));

  it('a request is recorded once; a full one has no scope, a scheduled one is in the future, a repeat at least every 5 minutes', () => {
    job().when({ type: 'Request', jobId: 4, request: full, now: NOW }).then([requested()]);
    const partial: ReindexRequest = { ...full, mode: 'partial', projectIds: [7], types: ['repository_cases', 'failures'] };
    job().when({ type: 'Request', jobId: 4, request: partial, now: NOW }).then([requested(partial)]);
    job(requested()).when({ type: 'Request', jobId: 4, request: full, now: NOW }).thenFailsWith('reindex-job-exists');
    job().when({ type: 'Request', jobId: 4, request: { ...full, types: ['projects'] }, now: NOW }).thenFailsWith('reindex-full-has-no-scope');
    job().when({ type: 'Request', jobId: 4, request: { ...full, runAt: NOW }, now: NOW }).thenFailsWith('reindex-run-at-past');
    job().when({ type: 'Request', jobId: 4, request: { ...full, repeatEveryMinutes: 4 }, now: NOW }).thenFailsWith('reindex-repeat-too-often');
  });

  it('starts once, when due; the types come from the totals, in the order of SEARCH_TYPES', () => {
    job(requested()).when(start).then([started]);
    job(requested(), started).when(start).thenNothing();
    job(requested(), started).when({ ...start, version: 4 } as ReindexCommand).thenFailsWith('reindex-job-started');
    job(requested({ ...full, runAt: LATER })).when(start).thenFailsWith('reindex-job-not-due');
    job(requested({ ...full, runAt: LATER })).when({ ...start, now: LATER } as ReindexCommand).then([{ ...started, data: { ...started.data, startedAt: LATER } } as SearchReindexEvent]);
    job().when(start).thenFailsWith('reindex-job-not-found');
    expect(stateOf(requested(), started).types).to.deep.equal(['projects', 'failures']);
  });

  it('records a batch after the cursor, adding its documents; a batch written again (a resumed job) changes nothing', () => {
    job(requested(), started).when(progress('projects', 5, 1, true)).then([progressed('projects', 5, 1, true)]);
    const past = [requested(), started, progressed('projects', 5, 1, true), progressed('failures', 20, 2, false)];
    job(...past).when(progress('failures', 30, 1, true)).then([progressed('failures', 30, 3, true)]);
    job(...past).when(progress('failures', 20, 2)).thenNothing();
    job(...past).when(progress('failures', 10, 2)).thenNothing();
    job(...past).when(progress('projects', 9, 1)).thenNothing();
    // An empty last page ends the type where it is.
    job(...past).when(progress('failures', 20, 0, true)).then([progressed('failures', 20, 2, true)]);
    expect(documentsOf(stateOf(...past))).to.equal(3);
    expect(currentType(stateOf(...past))).to.equal('failures');
  });

  it('writes the types in order, only its own, only while running', () => {
    job(requested(), started).when(progress('failures', 5, 1)).thenFailsWith('reindex-progress-out-of-order');
    job(requested(), started).when({ ...progress('projects', 5, 1), reindexType: 'comments' } as ReindexCommand).thenFailsWith('reindex-type-unknown');
    job(requested()).when(progress('projects', 5, 1)).thenFailsWith('reindex-job-queued');
    const paused: SearchReindexEvent = { type: 'SearchReindexPaused', data: { jobId: 4, pausedAt: NOW } };
    job(requested(), started, paused).when(progress('projects', 5, 1)).thenFailsWith('reindex-job-paused');
  });

  it('pauses and resumes (to running once started, to queued before); the same again changes nothing', () => {
    const paused: SearchReindexEvent = { type: 'SearchReindexPaused', data: { jobId: 4, pausedAt: NOW } };
    const resumed: SearchReindexEvent = { type: 'SearchReindexResumed', data: { jobId: 4, resumedAt: NOW } };
    job(requested(), started).when({ type: 'Pause', now: NOW }).then([paused]);
    job(requested(), started, paused).when({ type: 'Pause', now: NOW }).thenNothing();
    job(requested(), started, paused).when({ type: 'Resume', now: NOW }).then([resumed]);
    job(requested(), started).when({ type: 'Resume', now: NOW }).thenNothing();
    expect(stateOf(requested(), started, paused, resumed).status).to.equal('running');
    expect(stateOf(requested(), paused, resumed).status).to.equal('queued');
    job(requested(), paused).when(start).thenFailsWith('reindex-job-paused');
  });

  it('cancels with the documents written so far; a finished job can be neither paused, resumed nor cancelled', () => {
    const past = [requested(), started, progressed('projects', 5, 1, true)];
    job(...past).when({ type: 'Cancel', now: NOW }).then([{ type: 'SearchReindexCancelled', data: { jobId: 4, documents: 1, cancelledAt: NOW } }]);
    const cancelled: SearchReindexEvent = { type: 'SearchReindexCancelled', data: { jobId: 4, documents: 1, cancelledAt: NOW } };
    job(...past, cancelled).when({ type: 'Cancel', now: NOW }).thenNothing();
    for (const cmd of [{ type: 'Pause', now: NOW }, { type: 'Resume', now: NOW }] as ReindexCommand[]) job(...past, cancelled).when(cmd).thenFailsWith('reindex-job-finished');
    const failed: SearchReindexEvent = { type: 'SearchReindexFailed', data: { jobId: 4, code: 'x', error: 'x', details: {}, failedAt: NOW } };
    job(...past, failed).when({ type: 'Cancel', now: NOW }).thenFailsWith('reindex-job-finished');
    job().when({ type: 'Cancel', now: NOW }).thenFailsWith('reindex-job-not-found');
  });

  it('completes once every type is done, with the documents per type; fails once', () => {
    const done = [requested(), started, progressed('projects', 5, 1, true), progressed('failures', 30, 3, true)];
    job(requested(), started, progressed('projects', 5, 1, true)).when({ type: 'Complete', switched: true, droppedVersions: [2], now: NOW }).thenFailsWith('reindex-incomplete');
    const completed: SearchReindexEvent = { type: 'SearchReindexCompleted', data: { jobId: 4, documents: { projects: 1, failures: 3 }, switched: true, droppedVersions: [2], completedAt: NOW } };
    job(...done).when({ type: 'Complete', switched: true, droppedVersions: [2], now: NOW }).then([completed]);
    job(...done, completed).when({ type: 'Complete', switched: true, droppedVersions: [2], now: NOW }).thenNothing();
    const fail: ReindexCommand = { type: 'Fail', code: 'search-engine-changed', error: 'changed', details: {}, now: NOW };
    job(...done, completed).when(fail).thenNothing();
    job(requested(), started).when(fail).then([{ type: 'SearchReindexFailed', data: { jobId: 4, code: 'search-engine-changed', error: 'changed', details: {}, failedAt: NOW } }]);
  });
});
