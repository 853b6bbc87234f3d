import { expect } from 'chai';
import type { ExternalImportEvent, ExternalMappingKey, ExternalMappings } from '../../../contracts/events';
import { type ExternalImportCommand, decide, evolve, externalImportStream, initialExternalImportState } from '../../../services/migration/externalImport.decider';
import { foldJobStream } from '../../../services/migration/externalImport.saga';
import { MemoryEventStore } from '../../support/memoryEventStore';

const NOW = '2026-11-27T10:00:00.000Z';
const EMPTY = Object.fromEntries(['states', 'statuses', 'users', 'roles', 'templates', 'templateFields', 'milestoneTypes', 'groups', 'issueTrackers', 'configurations', 'tags']
  .map((k) => [k, []])) as unknown as ExternalMappings & Record<ExternalMappingKey, never[]>;
const FILE = { fileName: 'export.zip', fileSize: 10, sha256: 'a'.repeat(64), storedAs: 'b'.repeat(64), container: 'zip' as const };
const ANALYSIS = { datasets: [], ignored: [], warnings: [], errors: [], totals: { datasets: 0, rows: 0, warnings: 0, errors: 0 }, sources: EMPTY, suggestions: EMPTY };
const meta = { actor: { userId: 1, via: 'api' as const }, correlationId: 'fold-test', causationId: null };

describe('external import job: folding its stream a page at a time', () => {
  it('gives the state, first and last event of the whole stream whatever the page size (a page boundary inside a chunk too)', async () => {
    const chunks = 80;
    const commands: ExternalImportCommand[] = [
      { type: 'Upload', jobId: 5, file: FILE, now: NOW }, { type: 'StartAnalysis', now: NOW }, { type: 'RecordAnalysis', analysis: ANALYSIS, now: NOW },
      { type: 'Configure', mappings: EMPTY, durationUnit: 'us', reset: false, now: NOW }, { type: 'Queue', now: NOW },
      { type: 'Start', plan: [{ dataset: 'repository_cases', rows: chunks * 2 }], now: NOW },
    ];
    for (let c = 0; c < chunks; c++) {
      // Decimal ids, an id with a leading zero (not the same row as without), and one that is not a number.
      const sourceIds = [String(c * 2 + 1), c % 2 === 0 ? `0${c * 2 + 2}` : `row-${c}`];
      const ids = [1000 + c * 2, 1001 + c * 2];
      commands.push({ type: 'PlanChunk', dataset: 'repository_cases', entity: 'repositoryCase', lastRow: c * 2 + 2,
        rows: { sourceId: sourceIds, id: ids, key: [null, null], createdBy: [null, null], createdAt: [null, null], skipReason: [null, null], mapped: [false, c === 3] } });
      commands.push({ type: 'RecordChunk', created: c === 3 ? 1 : 2, skipped: 0, now: NOW });
    }
    const store = new MemoryEventStore();
    let expected = initialExternalImportState();
    const appended: ExternalImportEvent[] = [];
    for (const cmd of commands) {
      const events = decide(cmd, expected);
      for (const e of events) expected = evolve(expected, e);
      appended.push(...events);
    }
    await store.append(externalImportStream(5), appended, { expectedRevision: 'no-stream', metadata: meta });

    for (const page of [1, 7, 200, 10_000]) {
      const { state, first, last } = await foldJobStream(store, 5, page);
      expect(first?.type, `page ${page}`).to.equal('ExternalImportUploaded');
      expect(last?.revision, `page ${page}`).to.equal(String(appended.length - 1));
      expect(state.progress, `page ${page}`).to.deep.equal(expected.progress);
      const ids = state.ids.get('repository_cases')!;
      expect([...ids.bySource], `page ${page}`).to.deep.equal([...expected.ids.get('repository_cases')!.bySource]);
      expect(ids.bySource.size).to.equal(chunks * 2);
      expect(ids.created).to.have.length(chunks * 2 - 1);
      expect([ids.bySource.get('1'), ids.bySource.get('02'), ids.bySource.get('2'), ids.bySource.get('row-1')]).to.deep.equal([1000, 1001, undefined, 1003]);
    }
    expect(await foldJobStream(store, 6)).to.deep.include({ first: undefined, last: undefined });

    // Without ids (the administrator's commands): the plans are read shallow, the state the same but for the map.
    const reads: Array<readonly string[] | undefined> = [];
    const spying = { ...store, readStream: (id: string, o: Parameters<MemoryEventStore['readStream']>[1]) => (reads.push(o?.shallow), store.readStream(id, o)) } as unknown as MemoryEventStore;
    const light = await foldJobStream(spying, 5, 7, { withIds: false });
    expect(reads[0]).to.have.members(['ExternalImportRowsWritten', 'ExternalImportChunkPlanned']);
    expect(light.last?.revision).to.equal(String(appended.length - 1));
    expect({ phase: light.state.phase, progress: light.state.progress, openChunk: light.state.openChunk, cancelRequested: light.state.cancelRequested })
      .to.deep.equal({ phase: expected.phase, progress: expected.progress, openChunk: null, cancelRequested: expected.cancelRequested });
    expect(light.state.ids.get('repository_cases')?.bySource.size ?? 0).to.equal(0);
    for (const cmd of [{ type: 'RequestCancel' as const, now: NOW }, { type: 'RequestRollback' as const, now: NOW }]) {
      const outcome = (state: typeof expected) => { try { return decide(cmd, state); } catch (err) { return (err as Error).message; } };
      expect(outcome(light.state), cmd.type).to.deep.equal(outcome(expected));
    }
  });
});
