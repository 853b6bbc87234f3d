import type { Knex } from 'knex';
import { type ChainedEvent, contentHash } from '../../contracts/chain';
import { ENTITIES } from '../../contracts/entities';
import { rowsWrittenOf, streamOf } from '../../contracts/entityEvents';
import type { SignedEntity } from '../../contracts/events';
import { HttpError } from '../shared/errors';
import type { EventStore } from '../shared/eventStore';
import { importOriginOf } from '../history/importOrigin';

/**
 * The events behind a record: what a signature fixes and an evidence bundle carries
 * (docs/compliance.md). Built from the log: the read model only says which streams to read.
 *
 * - a repository case: its stream (its steps and field values are in it), or the import chunk
 *   that created it;
 * - a test run: its stream, its run cases' and results' streams (step results and field values
 *   are in those), and the import events that wrote its rows in bulk (a result import's whole job
 *   stream; an external import's chunks that hold a row of the run);
 * - a milestone: its stream and those of each of its runs.
 */

export interface RecordContent {
  events: ChainedEvent[];
  /** The last position of the content ('0': none), and SHA-256 of `<position>:<hash>\n` lines. */
  position: string;
  hash: string;
}

export const SIGNED_ENTITIES: readonly SignedEntity[] = ['testRun', 'milestone', 'repositoryCase'];

/** The chain is kept by both adapters (EventStoreDB's by a projection): a store without one is a 501. */
export function chainedStore(store: EventStore): Required<Pick<EventStore, 'readChained'>> {
  if (!store.readChained || !store.chainHead) {
    throw new HttpError(501, 'integrity-not-kept', `The ${store.kind} event store keeps no hash chain: signatures and evidence need the PostgreSQL or EventStoreDB adapter (docs/compliance.md)`, { store: store.kind });
  }
  return { readChained: (q) => store.readChained!(q) };
}

interface Sources { streams: Set<string>; positions: Set<string> }

async function runSources(knex: Knex, store: EventStore, runId: number, into: Sources): Promise<void> {
  into.streams.add(streamOf(ENTITIES.testRun, runId));
  const jobs = { results: new Set<number>(), external: new Set<number>() };
  const run = (await knex('test_runs').where({ id: runId }).first('external_import_job_id')) as { external_import_job_id: number | null } | undefined;
  if (run?.external_import_job_id) jobs.external.add(run.external_import_job_id);
  for (const entity of [ENTITIES.testRunCase, ENTITIES.testRunResult]) {
    const rows = (await knex(entity.table).where({ test_run_id: runId }).select('id', 'import_job_id', 'external_import_job_id')) as
      { id: number; import_job_id: number | null; external_import_job_id: number | null }[];
    for (const r of rows) {
      into.streams.add(streamOf(entity, r.id));
      if (r.import_job_id !== null) jobs.results.add(r.import_job_id);
      if (r.external_import_job_id !== null) jobs.external.add(r.external_import_job_id);
    }
  }
  // A result import's job serves one run: its whole stream (request, parse, chunks, completion).
  for (const job of jobs.results) into.streams.add(`importJob-${job}`);
  // An external import's chunks hold rows of many runs: only those with a row of this one.
  for (const job of jobs.external) {
    const streamId = `externalImport-${job}`;
    const chunks = (await store.readStream(streamId, { shallow: ['ExternalImportRowsWritten'] }))
      .filter((e) => e.type === 'ExternalImportRowsWritten' && ['testRun', 'testRunCase', 'testRunResult'].includes((e.data as { entity?: string }).entity ?? ''));
    for (const summary of chunks) {
      const [chunk] = await store.readStream(streamId, { fromRevision: BigInt(summary.revision), maxCount: 1 });
      const written = rowsWrittenOf(chunk.data as { entity: string; fields: string[]; rows: unknown[][] });
      const ofRun = written?.rows.some((row) => (written.entity.name === 'testRun' ? row.id : row.testRunId) === runId);
      if (ofRun) into.positions.add(chunk.position);
    }
  }
}

/** The streams and positions of the events behind a record. */
export async function contentSources(knex: Knex, store: EventStore, entity: SignedEntity, id: number): Promise<Sources> {
  const sources: Sources = { streams: new Set(), positions: new Set() };
  if (entity === 'repositoryCase') {
    sources.streams.add(streamOf(ENTITIES.repositoryCase, id));
    const origin = await importOriginOf(knex, store, ENTITIES.repositoryCase, id);
    if (origin) sources.positions.add(origin.event.position);
  } else if (entity === 'testRun') {
    await runSources(knex, store, id, sources);
  } else {
    sources.streams.add(streamOf(ENTITIES.milestone, id));
    const runs = (await knex('test_runs').where({ milestone_id: id }).orderBy('id').pluck('id')) as number[];
    for (const runId of runs) await runSources(knex, store, runId, sources);
  }
  return sources;
}

/** The record's content as of `upTo` (default: now). */
export async function recordContent(knex: Knex, store: EventStore, entity: SignedEntity, id: number, upTo?: string): Promise<RecordContent> {
  const chained = chainedStore(store);
  const { streams, positions } = await contentSources(knex, store, entity, id);
  const events = await chained.readChained({ streams: [...streams], positions: [...positions], ...(upTo !== undefined && { upTo }) });
  return { events, position: events.at(-1)?.position ?? '0', hash: contentHash(events) };
}
