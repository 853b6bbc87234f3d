import type { Knex } from 'knex';
import { type ChainedEvent, contentHash } from '../../contracts/chain';
import type { EntityName } from '../../contracts/entities';
import type { EventEnvelope } from '../../contracts/envelope';
import type { DataOf } from '../../contracts/events';
import { chunkRows, importOriginOf } from '../history/importOrigin';
import { stateAfter } from '../history/timeline';
import { ENTITIES } from '../../contracts/entities';
import type { SignatureEvidence } from '../shared/evidenceBundle';
import type { EventStore } from '../shared/eventStore';
import { chainedStore, contentSources } from '../signatures/content';
import { signatureStream } from '../signatures/signature.decider';

/**
 * What an evidence bundle holds (docs/compliance.md), gathered from the log: the events behind a
 * run or a milestone (and its runs), its cases as executed, its signatures and the files kept
 * with it. The read model only says which streams to read; every value in the bundle is folded
 * from the events the bundle carries, so a reader can check each one against the chain.
 */

export type EvidenceSubject = { entity: 'testRun' | 'milestone'; id: number };

export interface StoredFileRef { key: string; name: string; sha256: string; size: number }

export interface Evidence {
  subject: EvidenceSubject & { projectId: number };
  /** The log's head when the bundle was gathered: nothing after it is in the bundle. */
  head: { position: string; hash: string | null };
  events: ChainedEvent[];
  /** milestone.json (a milestone's bundle) and runs/<id>.json. */
  documents: { path: string; value: unknown }[];
  signatures: SignatureEvidence[];
  files: StoredFileRef[];
}

const envelopeOf = (e: ChainedEvent): EventEnvelope => ({
  id: e.id, type: e.type, schemaVersion: e.schemaVersion, streamId: e.streamId, revision: e.revision, position: e.position,
  recordedAt: new Date(Number(BigInt(e.recordedAtMicros) / 1000n)).toISOString(), data: JSON.parse(e.data), metadata: JSON.parse(e.metadata),
});

/** Streams read in one statement at most (a run of 10,000 results names 20,000). */
const STREAMS_PER_READ = 5000;

async function read(store: EventStore, streams: Set<string>, positions: Set<string>, upTo: string): Promise<ChainedEvent[]> {
  const chained = chainedStore(store);
  const list = [...streams];
  const byPosition = new Map<string, ChainedEvent>();
  for (let i = 0; i === 0 || i < list.length; i += STREAMS_PER_READ) {
    for (const e of await chained.readChained({ streams: list.slice(i, i + STREAMS_PER_READ), positions: i === 0 ? [...positions] : [], upTo })) byPosition.set(e.position, e);
  }
  return [...byPosition.values()].sort((a, b) => (BigInt(a.position) < BigInt(b.position) ? -1 : 1));
}

export async function collectEvidence(deps: { knex: Knex; store: EventStore }, subject: EvidenceSubject & { projectId: number }): Promise<Evidence> {
  const { knex, store } = deps;
  // What the log holds now; readChained waits for a chain kept by a projection (EventStoreDB) to reach it.
  const upTo = await store.headPosition();
  const content = await contentSources(knex, store, subject.entity, subject.id);
  const runIds = subject.entity === 'testRun' ? [subject.id] : ((await knex('test_runs').where({ milestone_id: subject.id }).orderBy('id').pluck('id')) as number[]);
  const streams = new Set(content.streams);
  const positions = new Set(content.positions);
  streams.add(signatureStream(subject.entity, subject.id));
  for (const runId of runIds) streams.add(signatureStream('testRun', runId));

  // The cases the runs executed, with the imports that created them (a case may come from an earlier import than the run's).
  const cases = (await knex('test_run_cases as rc').join('repository_cases as c', 'c.id', 'rc.repository_case_id').whereIn('rc.test_run_id', runIds)
    .distinct('c.id', 'c.import_job_id', 'c.external_import_job_id').orderBy('c.id')) as { id: number; import_job_id: number | null; external_import_job_id: number | null }[];
  for (const c of cases) {
    streams.add(`repositoryCase-${c.id}`);
    if (c.import_job_id !== null) streams.add(`importJob-${c.import_job_id}`);
    else if (c.external_import_job_id !== null) {
      const origin = await importOriginOf(knex, store, ENTITIES.repositoryCase, c.id);
      if (origin) positions.add(origin.event.position);
    }
  }
  // Files kept with it: the result files of its imports, attachments of its runs and results.
  const jobs = [...streams].filter((s) => s.startsWith('importJob-')).map((s) => Number(s.slice('importJob-'.length)));
  const files = (await knex('stored_files as f').whereNull('f.deleted_at').where((q) => q.whereIn('f.import_job_id', jobs).orWhereIn('f.attachment_id',
    knex('attachments as a').whereIn('a.test_run_id', runIds).orWhereIn('a.test_run_result_id', knex('test_run_results').whereIn('test_run_id', runIds).select('id')).select('a.id')))
    .orderBy('f.key').select('f.key', 'f.name', 'f.sha256', 'f.size')) as { key: string; name: string; sha256: string; size: string }[];
  for (const f of files) streams.add(`file-${f.key}`);

  const events = await read(store, streams, positions, upTo);
  const head = await store.chainHead!();
  const envelopes = new Map<string, EventEnvelope[]>();
  const created = new Map<string, { position: string; values: Record<string, unknown> }>();
  for (const e of events) {
    const envelope = envelopeOf(e);
    if (!envelopes.has(e.streamId)) envelopes.set(e.streamId, []);
    envelopes.get(e.streamId)!.push(envelope);
    for (const row of chunkRows(envelope)) created.set(`${row.entity}-${row.id}`, { position: e.position, values: row.values });
  }
  /** A row folded from its events up to `upTo` (all of them by default), from the chunk that created it when an import did. */
  const fold = (entity: EntityName, id: number, upTo?: bigint) => {
    const stream = (envelopes.get(`${entity}-${id}`) ?? []).filter((e) => upTo === undefined || BigInt(e.position) <= upTo);
    const origin = created.get(`${entity}-${id}`);
    const initial = origin && (upTo === undefined || BigInt(origin.position) <= upTo) ? origin.values : null;
    const state = stateAfter(entity, stream, initial);
    const first = origin?.position ?? stream[0]?.position ?? null;
    return { id, exists: state.exists, createdAt: first, ...state.values };
  };

  const documents: Evidence['documents'] = [];
  if (subject.entity === 'milestone') documents.push({ path: 'milestone.json', value: fold('milestone', subject.id) });
  for (const runId of runIds) {
    const runCases = ((await knex('test_run_cases').where({ test_run_id: runId }).orderBy('id').pluck('id')) as number[]).map((id) => fold('testRunCase', id));
    const caseOf = new Map(runCases.map((rc) => [rc.id, (rc as Record<string, unknown>).repositoryCaseId as number]));
    const results = ((await knex('test_run_results').where({ test_run_id: runId }).orderBy('id').pluck('id')) as number[]).map((id) => {
      const result = fold('testRunResult', id);
      const caseId = caseOf.get((result as Record<string, unknown>).testRunCaseId as number);
      // The case as it was when the result was recorded: its events up to the result's creation.
      const executed = caseId === undefined || result.createdAt === null ? null : fold('repositoryCase', caseId, BigInt(result.createdAt));
      return { ...result, caseAsExecuted: executed };
    });
    documents.push({ path: `runs/${runId}.json`, value: { run: fold('testRun', runId), runCases, results } });
  }

  const signatures: SignatureEvidence[] = [];
  for (const e of events) {
    if (e.type === 'RecordSigned') {
      const d = JSON.parse(e.data) as DataOf<'RecordSigned'>;
      // A run signed on its own within a milestone's bundle: its content is the run's (within the milestone's).
      const sources = d.entity === subject.entity && d.entityId === subject.id ? content : await contentSources(knex, store, d.entity, d.entityId);
      const own = events.filter((x) => sources.streams.has(x.streamId) || sources.positions.has(x.position));
      const signed = own.filter((x) => BigInt(x.position) <= BigInt(d.contentPosition));
      signatures.push({
        signatureId: d.signatureId, entity: d.entity, entityId: d.entityId, position: e.position, revokedAt: null,
        contentPositions: signed.map((x) => x.position), contentIncluded: contentHash(signed) === d.contentHash,
      });
    } else if (e.type === 'SignatureRevoked') {
      const d = JSON.parse(e.data) as DataOf<'SignatureRevoked'>;
      const s = signatures.find((x) => x.signatureId === d.signatureId);
      if (s) s.revokedAt = d.revokedAt;
    }
  }
  return {
    subject, head, events, documents, signatures,
    files: files.map((f) => ({ key: f.key, name: f.name, sha256: f.sha256, size: Number(f.size) })),
  };
}
