import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import pg from 'pg';
import pino from 'pino';
import type { EventMetadata } from '../contracts/envelope';
import { loadContracts } from '../contracts/validator';
import { type AppendRequest, PostgresEventStore } from '../infra/eventstore/postgres';
import { createKnex } from '../infra/postgres/database';
import { bulkBody, indexBody } from '../infra/search/engineBodies';
import { openElasticsearch } from '../infra/search/elasticsearch';
import { openSearchEngine } from '../infra/search/index';
import { PostgresSearchEngine } from '../infra/search/postgres';
import { CONFIG, analysed } from '../infra/search/postgresQuery';
import { INDEXED_TYPES, scanDocuments } from '../projections/search/documents';
import { SEARCH_WRITES_AT_ONCE, startSearchIndexer, type SearchIndexer } from '../projections/search/indexer';
import { rebuildSearch } from '../projections/search/rebuild';
import { buildApp } from '../services/api/app';
import { registerUser } from '../services/identity/identity.handlers';
import { parseFacetParameters, parseSearchBody, parseSearchParameters } from '../services/search/query';
import { FACET_SIZE, filtersOf, searchRequestOf } from '../services/search/search.service';
import { systemMetadata } from '../services/shared/context';
import { DEFAULT_SEARCH_SETTINGS, type FacetRequest, type SearchDocument, type SearchEngine, type SearchRequest, type SearchSettings } from '../services/shared/search';
import { startTestApp, type TestApp } from '../test/support/app';
import { HttpClient } from '../test/support/server';
import { dropIndices, searchAnswers, searchFetch, uniqueIndexPrefix } from '../test/support/search';
import { BenchSanityError, describeCode, describeMachine, percentile, round, seconds, seededRandom, writeResult } from './support';

/**
 * The search benchmark (issue 16), per engine (PostgreSQL full-text search always; OpenSearch when
 * one answers at SEARCH_URL or 127.0.0.1:9200; Elasticsearch when ELASTICSEARCH_URL is set), over a
 * log of 100,000 repository cases (RepositoryCaseCreated v2, 3 steps and 2 of 50 tags each, in
 * 1,000 folders across 20 projects) appended with the event store's bulk path into a started test
 * app's database, whose projector brings the read model to the head before anything is measured:
 * 1. indexing from the log: an empty index version 1 with its checkpoint at 0, switched live, then
 *    startSearchIndexer on the direct transport until its checkpoint is the head and the engine
 *    (refreshed) counts every document; and the scan path (rebuildSearch, version 2);
 * 2. the same documents (scanned beforehand, held in memory) sent straight to the engine with the
 *    same bulk size, as many bulks at once as the indexer writes on a quiet log (SEARCH_WRITES_AT_ONCE): `_bulk` over fetch into fresh indices with the same settings and mapping, or
 *    for PostgreSQL one multi-row INSERT per bulk into a table `LIKE` the adapter's (same
 *    tsvector expressions, same GIN indexes); before and after the indexer, the mean of the two.
 *    Goal: from-the-log docs/s ≥ 0.8 × straight docs/s (issue 37);
 * 3. five typical queries over HTTP (a started test app with deps.search, an administrator's
 *    token) against the same SearchRequest / FacetRequest on the engine port in-process, the two
 *    ways interleaved after a warm-up. Goal: HTTP p50 ≤ 2 × engine p50 per query.
 */

export interface SearchBenchOptions {
  cases: number;
  projects: number;
  folders: number;
  tags: number;
  stepsPerCase: number;
  tagsPerCase: number;
  bulkSize: number;
  seedBatch: number;
  warmup: number;
  iterations: number;
}

export const SEARCH_DEFAULTS: SearchBenchOptions = {
  cases: 100_000, projects: 20, folders: 1_000, tags: 50, stepsPerCase: 3, tagsPerCase: 2, bulkSize: DEFAULT_SEARCH_SETTINGS.bulkSize,
  seedBatch: 250, warmup: 30, iterations: 200,
};

/** From the log against straight (issue 37; 0.5 before). */
const GOAL_RATIO = 0.8;
const GOAL_HTTP_OVER_ENGINE = 2;
const PROJECT = 7;
const START = Date.parse('2025-01-01T00:00:00.000Z');

// ---------------------------------------------------------------------------------------------
// the log

const VOCABULARY = (
  'login logout password reset email user admin project folder case run result export import report filter search ' +
  'page list table column sort order date time zone invoice payment refund cart checkout address profile avatar ' +
  'upload download file image attachment comment mention notification badge token session cookie timeout retry ' +
  'error warning banner modal dialog button link menu sidebar header footer mobile tablet desktop browser ' +
  'account billing plan subscription coupon discount price tax currency shipping delivery tracking order warehouse ' +
  'inventory product catalog category variant stock supplier customer vendor contract approval workflow status ' +
  'dashboard chart widget metric alert threshold schedule calendar reminder task assignee priority label milestone ' +
  'release build deploy rollback version branch commit review merge pipeline artifact cache queue worker job ' +
  'api endpoint request response header payload webhook callback integration sync backup restore archive audit ' +
  'permission role group team member invite onboarding tutorial help feedback survey rating language locale ' +
  'keyboard shortcut accessibility contrast font theme layout grid responsive scroll pagination loading spinner'
).split(' ');
const VERBS = ['Open', 'Click', 'Enter', 'Select', 'Submit', 'Verify', 'Check', 'Navigate to', 'Type', 'Drag'];
/** Phrases some steps carry, so that a phrase query has documents to find. */
const PHRASES = ['session timeout', 'reset password', 'upload attachment', 'export report', 'apply discount'];

/** The log: projects, tags, folders (some nested), then the cases, one append request each. */
class SearchSeed {
  private readonly random: () => number;
  private stepId = 0;
  events = 0;
  readonly foldersOfProject: number[][] = [];

  constructor(private readonly o: SearchBenchOptions, private readonly metadata: EventMetadata, seed = 20261127) {
    this.random = seededRandom(seed);
  }

  private pick<T>(list: readonly T[]): T {
    return list[Math.floor(this.random() * list.length)];
  }

  private words(min: number, max: number): string {
    const n = min + Math.floor(this.random() * (max - min + 1));
    const out: string[] = [];
    for (let i = 0; i < n; i++) out.push(this.pick(VOCABULARY));
    return out.join(' ');
  }

  private sentence(min: number, max: number): string {
    const text = this.words(min, max);
    return text[0].toUpperCase() + text.slice(1);
  }

  private at(): string {
    return new Date(START + this.events * 1000).toISOString();
  }

  private request(streamId: string, type: string, data: Record<string, unknown>, schemaVersion = 1): AppendRequest {
    const createdAt = this.at();
    this.events++;
    return {
      streamId, events: [{ type, data: { ...data, createdAt }, schemaVersion }], expectedRevision: 'no-stream',
      metadata: { ...this.metadata, correlationId: randomUUID() },
    };
  }

  *requests(): Generator<AppendRequest> {
    const o = this.o;
    for (let p = 1; p <= o.projects; p++) {
      this.foldersOfProject.push([]);
      yield this.request(`project-${p}`, 'ProjectCreated', {
        projectId: p, name: `Project ${p} ${this.sentence(1, 2)}`, note: null, iconUrl: null, isCompleted: false, completedAt: null,
        defaultAccessType: 'DEFAULT', defaultRoleId: null, createdById: null,
      }, 3);
    }
    for (let t = 1; t <= o.tags; t++) yield this.request(`tag-${t}`, 'TagCreated', { tagId: t, name: `tag-${t}` });
    for (let f = 1; f <= o.folders; f++) {
      const projectId = 1 + ((f - 1) % o.projects);
      const siblings = this.foldersOfProject[projectId - 1];
      const parentId = siblings.length >= 5 && this.random() < 0.6 ? this.pick(siblings) : null;
      siblings.push(f);
      yield this.request(`repositoryFolder-${f}`, 'RepositoryFolderCreated', { folderId: f, projectId, parentId, name: this.sentence(1, 3) });
    }
    for (let c = 1; c <= o.cases; c++) {
      const projectId = 1 + ((c - 1) % o.projects);
      const tagIds = new Set<number>();
      while (tagIds.size < Math.min(o.tagsPerCase, o.tags)) tagIds.add(1 + Math.floor(this.random() * o.tags));
      const steps = [];
      for (let s = 0; s < o.stepsPerCase; s++) {
        const phrase = this.random() < 0.1 ? ` ${this.pick(PHRASES)}` : '';
        steps.push({
          id: ++this.stepId, step: `${this.pick(VERBS)} the ${this.words(2, 6)}${phrase}`,
          expectedResult: this.random() < 0.85 ? `The ${this.words(2, 5)} is shown` : null, order: s,
        });
      }
      yield this.request(`repositoryCase-${c}`, 'RepositoryCaseCreated', {
        caseId: c, title: this.sentence(3, 9), description: this.random() < 0.6 ? this.sentence(8, 24) : null, className: null,
        source: 'MANUAL', estimate: null, automated: false, isArchived: false, order: c, projectId,
        folderId: this.pick(this.foldersOfProject[projectId - 1]), templateId: null, stateId: null, createdById: null,
        tagIds: [...tagIds], steps, fieldValues: [],
      }, 2);
    }
  }
}

async function seedLog(store: PostgresEventStore, o: SearchBenchOptions, metadata: EventMetadata) {
  const contracts = loadContracts();
  const checked = new Set<string>();
  const seed = new SearchSeed(o, metadata);
  const started = process.hrtime.bigint();
  let batch: AppendRequest[] = [];
  let writing: Promise<void> = Promise.resolve();
  const total = o.projects + o.tags + o.folders + o.cases;
  let nextReport = total / 5;
  const write = async (requests: AppendRequest[]) => {
    const outcomes = await store.appendMany(requests);
    const refused = outcomes.findIndex((x) => !x.ok);
    if (refused !== -1) throw new BenchSanityError(`seed request ${requests[refused].streamId} refused: ${JSON.stringify(outcomes[refused])}`);
  };
  for (const request of seed.requests()) {
    const event = request.events[0];
    if (!checked.has(event.type)) {
      contracts.check(event);
      checked.add(event.type);
    }
    batch.push(request);
    if (batch.length >= o.seedBatch) {
      await writing;
      writing = write(batch);
      batch = [];
      if (seed.events >= nextReport) {
        console.log(`  appended ${seed.events.toLocaleString('en')}/${total.toLocaleString('en')} events (${seconds(started).toFixed(1)} s)`);
        nextReport += total / 5;
      }
    }
  }
  await writing;
  if (batch.length > 0) await write(batch);
  return { events: seed.events, seconds: seconds(started), validatedTypes: [...checked].sort() };
}

/** Until the app's projector has applied the head in every projection (the indexer reads readModel's and identity's rows). */
async function projectedToHead(knex: Knex, head: string, timeoutMs = 30 * 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastReport = Date.now();
  for (;;) {
    const rows: { name: string; position: string }[] = await knex('projection_checkpoints').whereIn('name', ['readModel', 'identity']).select('name', 'position');
    const behind = ['readModel', 'identity'].filter((name) => BigInt(rows.find((r) => r.name === name)?.position ?? '0') < BigInt(head));
    if (behind.length === 0) return;
    if (Date.now() > deadline) throw new BenchSanityError(`the read model did not reach ${head}: ${JSON.stringify(rows)}`);
    if (Date.now() - lastReport > 15_000) {
      console.log(`  projecting: ${rows.map((r) => `${r.name} ${r.position}`).join(', ')} of ${head}`);
      lastReport = Date.now();
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

// ---------------------------------------------------------------------------------------------
// indexing

interface IndexerProfile {
  engineWrites: { calls: number; documentCalls: number; ms: number; documents: number };
  documentSql: { statements: number; ms: number };
  otherSql: { statements: number; ms: number };
  /**
   * From the end of one batch (its checkpoint written) to the first document read or write of the
   * next (from the start for the first): reading the log, finding the documents the events touch,
   * waiting for the read model.
   */
  betweenBatchesMs: number;
  batches: number;
  eventsPerBatch: number;
  /** From the head's checkpoint being seen to every document counted (refresh, count). */
  finishMs: number;
  /** The rest of the wall clock: the indexer's JavaScript within a batch (documents from rows, bulk bodies), its other SQL. */
  restMs: number;
  benchProcessCpuSeconds: number;
}

/** Marks the end of a batch and counts the time until the next one does something. */
class BatchClock {
  private idleSince: number | null = performance.now();
  constructor(private readonly profile: IndexerProfile) {}
  busy(): void {
    if (this.idleSince === null) return;
    this.profile.betweenBatchesMs += performance.now() - this.idleSince;
    this.idleSince = null;
  }
  idle(): void {
    this.idleSince = performance.now();
  }
}

/** The engine with its writes timed. */
function timedWrites(engine: SearchEngine, profile: IndexerProfile, clock: BatchClock): SearchEngine {
  const real = engine.write.bind(engine);
  return new Proxy(engine, {
    get(target, prop, receiver) {
      if (prop === 'write') {
        return async (...args: Parameters<SearchEngine['write']>) => {
          clock.busy();
          const t = performance.now();
          try {
            return await real(...args);
          } finally {
            const ops = args[1];
            const docs = ops.upsert.length + ops.remove.length;
            profile.engineWrites.calls++;
            profile.engineWrites.ms += performance.now() - t;
            profile.engineWrites.documents += docs;
            if (docs > 0) profile.engineWrites.documentCalls++;
            if (args[2] && Object.keys(args[2]).length > 0 && docs === 0) {
              profile.batches++;
              clock.idle();
            }
          }
        };
      }
      const value = Reflect.get(target, prop, receiver);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

function timeSql(knex: Knex, profile: IndexerProfile, clock: BatchClock): () => void {
  const started = new Map<string, { t: number; documents: boolean }>();
  const onQuery = (q: { __knexQueryUid: string; sql: string }) => {
    const documents = q.sql.includes('WHERE x.id = ANY(');
    if (documents) clock.busy();
    started.set(q.__knexQueryUid, { t: performance.now(), documents });
  };
  const done = (uid: string) => {
    const s = started.get(uid);
    if (!s) return;
    started.delete(uid);
    const into = s.documents ? profile.documentSql : profile.otherSql;
    into.statements++;
    into.ms += performance.now() - s.t;
  };
  const onResponse = (_r: unknown, q: { __knexQueryUid: string }) => done(q.__knexQueryUid);
  knex.on('query', onQuery);
  knex.on('query-response', onResponse);
  knex.on('query-error', onResponse);
  return () => {
    knex.off('query', onQuery);
    knex.off('query-response', onResponse);
    knex.off('query-error', onResponse);
  };
}

/** Indexer from the log into a fresh, empty, live version 1 whose checkpoint is 0. */
async function indexFromLog(ctx: Ctx, engine: SearchEngine, expected: Expected): Promise<{ seconds: number; docsPerSecond: number; profile: IndexerProfile }> {
  await engine.ensureVersion(1);
  await engine.write(1, { upsert: [], remove: [] }, { search: '0' });
  await engine.switchAlias(1);
  if ((await engine.count(1, 'repository_cases')) !== 0) throw new BenchSanityError('version 1 is not empty before the indexer starts');
  const profile: IndexerProfile = {
    engineWrites: { calls: 0, documentCalls: 0, ms: 0, documents: 0 }, documentSql: { statements: 0, ms: 0 }, otherSql: { statements: 0, ms: 0 },
    betweenBatchesMs: 0, batches: 0, eventsPerBatch: 0, finishMs: 0, restMs: 0, benchProcessCpuSeconds: 0,
  };
  const knex = createKnex(ctx.dbUrl);
  const clock = new BatchClock(profile);
  const untime = timeSql(knex, profile, clock);
  let indexer: SearchIndexer | null = null;
  try {
    const cpu = process.cpuUsage();
    const started = process.hrtime.bigint();
    indexer = startSearchIndexer({
      engine: timedWrites(engine, profile, clock), knex, store: ctx.store, databaseUrl: ctx.dbUrl,
      logger: ctx.logger, bulkSize: ctx.o.bulkSize,
    });
    const head = BigInt(ctx.head);
    let lastReport = Date.now();
    for (;;) {
      const status = indexer.status();
      if (status.state === 'failed') throw new BenchSanityError(`the indexer failed: ${status.lastError}`);
      if (BigInt(status.position) >= head) break;
      if (Date.now() - lastReport > 15_000) {
        console.log(`    indexer at ${status.position}/${ctx.head}, ${status.documentsWritten} documents, ${status.state}`);
        lastReport = Date.now();
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    const caughtUp = performance.now();
    // What the indexer does after the head (waiting for more) is not its work: the figures end here.
    const measured = JSON.parse(JSON.stringify(profile)) as IndexerProfile;
    await engine.refresh(1);
    const cases = await engine.count(1, 'repository_cases');
    const projects = await engine.count(1, 'projects');
    const took = seconds(started);
    measured.finishMs = performance.now() - caughtUp;
    const used = process.cpuUsage(cpu);
    measured.benchProcessCpuSeconds = round((used.user + used.system) / 1e6, 2);
    if (cases !== expected.repository_cases || projects !== expected.projects) {
      throw new BenchSanityError(`from the log: ${cases} cases and ${projects} projects indexed, expected ${expected.repository_cases} and ${expected.projects}`);
    }
    const checkpoint = (await engine.readCheckpoints(1)).search;
    if (checkpoint !== ctx.head) throw new BenchSanityError(`the indexer's checkpoint is ${checkpoint}, not the head ${ctx.head}`);
    const ms = took * 1000;
    measured.restMs = round(Math.max(0, ms - measured.engineWrites.ms - measured.documentSql.ms - measured.betweenBatchesMs - measured.finishMs));
    measured.eventsPerBatch = measured.batches ? round(Number(ctx.head) / measured.batches, 1) : 0;
    for (const part of [measured.engineWrites, measured.documentSql, measured.otherSql]) part.ms = round(part.ms);
    measured.betweenBatchesMs = round(measured.betweenBatchesMs);
    measured.finishMs = round(measured.finishMs);
    return { seconds: round(took, 2), docsPerSecond: round(expected.total / took), profile: measured };
  } finally {
    await indexer?.stop();
    untime();
    await knex.destroy();
  }
}

/** The scan path: rebuildSearch builds version 2 from the read model, switches to it, drops version 1. */
async function indexByScan(ctx: Ctx, engine: SearchEngine, expected: Expected): Promise<{ seconds: number; docsPerSecond: number; version: number }> {
  const knex = createKnex(ctx.dbUrl);
  try {
    const started = process.hrtime.bigint();
    const built = await rebuildSearch({ engine, knex, logger: ctx.logger, bulkSize: ctx.o.bulkSize });
    const cases = await engine.count(built.version, 'repository_cases');
    const took = seconds(started);
    if (cases !== expected.repository_cases || built.documents.repository_cases !== expected.repository_cases || built.documents.projects !== expected.projects) {
      throw new BenchSanityError(`scan: ${cases} cases counted, ${JSON.stringify(built.documents)} written; expected ${JSON.stringify(expected)}`);
    }
    return { seconds: round(took, 2), docsPerSecond: round(expected.total / took), version: built.version };
  } finally {
    await knex.destroy();
  }
}

// ---------------------------------------------------------------------------------------------
// straight to the engine

/** The documents of the read model, scanned once, in pages of the bulk size (what a bulk request carries). */
async function scanAll(knex: Knex, bulkSize: number): Promise<SearchDocument[][]> {
  const pages: SearchDocument[][] = [];
  for (const type of INDEXED_TYPES) {
    let after = 0;
    for (;;) {
      const page = await scanDocuments(knex, type, after, bulkSize);
      if (page.lastId === null) break;
      after = page.lastId;
      if (page.documents.length > 0) pages.push(page.documents);
    }
  }
  return pages;
}

/** `_bulk` over fetch, one request at a time, into fresh indices with the adapter's settings and mapping. */
async function straightToDocumentEngine(url: string, settings: SearchSettings, pages: SearchDocument[][], expected: Expected): Promise<number> {
  const prefix = `${settings.indexPrefix}straight_`;
  const types = [...new Set(pages.flatMap((p) => p.map((d) => d.type)))];
  const indices = types.map((t) => `${prefix}${t}_v1`);
  const call = async (path: string, init: RequestInit) => {
    const response = await searchFetch(url, path, { ...init, timeoutMs: 120_000 });
    const text = await response.text();
    if (!response.ok) throw new BenchSanityError(`${init.method ?? 'GET'} ${path}: ${response.status} ${text.slice(0, 500)}`);
    return JSON.parse(text) as Record<string, unknown>;
  };
  try {
    for (const index of indices) {
      await call(`/${index}`, { method: 'PUT', headers: { 'content-type': 'application/json' }, body: JSON.stringify(indexBody(settings)) });
    }
    const started = process.hrtime.bigint();
    await eachPageAtOnce(pages, async (page) => {
      const body = `${bulkBody(prefix, 1, page, []).map((line) => JSON.stringify(line)).join('\n')}\n`;
      const answer = await call('/_bulk?refresh=false', { method: 'POST', headers: { 'content-type': 'application/x-ndjson' }, body });
      if (answer.errors !== false || (answer.items as unknown[]).length !== page.length) throw new BenchSanityError(`a straight bulk request had errors: ${JSON.stringify(answer).slice(0, 500)}`);
    });
    await call(`/${indices.join(',')}/_refresh`, { method: 'POST' });
    const counted = Number((await call(`/${indices.join(',')}/_count`, { method: 'POST' })).count);
    const took = seconds(started);
    if (counted !== expected.total) throw new BenchSanityError(`straight: ${counted} documents counted, expected ${expected.total}`);
    return took;
  } finally {
    await dropIndices(url, prefix);
  }
}

/** The adapter's columns; the tsvectors follow, with its expressions (infra/search/postgres.ts). */
const PG_COLUMNS = [
  'type', 'id', 'project_id', 'project', 'title', 'tags', 'folder', 'template', 'state', 'status', 'creator', 'configuration',
  'branch', 'failure_type', 'run_id', 'case_id', 'custom_names', 'created_at', 'updated_at', 'executed_at', 'document',
];
const PG_CASTS: Record<string, string> = { tags: '::text[]', custom_names: '::text[]', created_at: '::timestamptz', updated_at: '::timestamptz', executed_at: '::timestamptz', document: '::jsonb' };

function pgRow(doc: SearchDocument): unknown[] {
  return [
    doc.type, doc.id, doc.projectId, doc.project, doc.title, doc.tags, doc.folder, doc.template, doc.state, doc.status, doc.creator,
    doc.configuration, doc.branch, doc.failureType, doc.runId, doc.caseId, doc.customFields.map((f) => f.name), doc.createdAt,
    doc.updatedAt, doc.executedAt, JSON.stringify(doc),
    doc.description, doc.content, doc.customFields.length ? doc.customFields.map((f) => f.value).join('\n') : null,
  ];
}

/**
 * One multi-row INSERT of a bulk: every value a parameter of one VALUES list, the tsvectors computed
 * from it with the adapter's expressions (written once, over the list, as the adapter's are).
 */
function pgInsert(table: string, rows: number): string {
  const per = PG_COLUMNS.length + 3;
  const names = [...PG_COLUMNS, 'description', 'content', 'custom_values'];
  const tsv = (column: string, weight: string) => `setweight(to_tsvector(${CONFIG}, ${analysed(`coalesce(v.${column}, '')`)}), '${weight}')`;
  const values: string[] = [];
  for (let r = 0; r < rows; r++) {
    const base = r * per;
    values.push(`(${names.map((c, i) => `$${base + i + 1}${PG_CASTS[c] ?? '::text'}`).join(', ')})`);
  }
  return `INSERT INTO ${table} (${PG_COLUMNS.join(', ')}, title_tsv, description_tsv, content_tsv, custom_tsv)
    SELECT ${PG_COLUMNS.map((c) => `v.${c}`).join(', ')}, ${tsv('title', 'A')}, ${tsv('description', 'B')}, ${tsv('content', 'C')}, ${tsv('custom_values', 'D')}
      FROM (VALUES ${values.join(', ')}) AS v(${names.join(', ')})`;
}

async function straightToPostgres(pool: pg.Pool, likeTable: string, pages: SearchDocument[][], expected: Expected): Promise<number> {
  const table = 'bench_search_straight';
  const clients = await Promise.all(Array.from({ length: SEARCH_WRITES_AT_ONCE }, () => pool.connect()));
  const [client] = clients;
  try {
    await client.query(`DROP TABLE IF EXISTS ${table}; CREATE TABLE ${table} (LIKE ${likeTable} INCLUDING ALL)`);
    const statements = new Map<number, string>();
    const free = [...clients];
    const started = process.hrtime.bigint();
    await eachPageAtOnce(pages, async (page) => {
      if (!statements.has(page.length)) statements.set(page.length, pgInsert(table, page.length));
      const writer = free.pop()!;
      try {
        await writer.query(statements.get(page.length)!, page.flatMap(pgRow));
      } finally {
        free.push(writer);
      }
    });
    const counted = Number((await client.query(`SELECT count(*) AS n FROM ${table}`)).rows[0].n);
    const took = seconds(started);
    if (counted !== expected.total) throw new BenchSanityError(`straight: ${counted} rows, expected ${expected.total}`);
    return took;
  } finally {
    await client.query(`DROP TABLE IF EXISTS ${table}`).catch(() => undefined);
    for (const c of clients) c.release();
  }
}

/** Each page sent as the indexer sends them: SEARCH_WRITES_AT_ONCE at a time (it writes that many at once on a quiet log). */
async function eachPageAtOnce(pages: SearchDocument[][], send: (page: SearchDocument[]) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: SEARCH_WRITES_AT_ONCE }, async () => {
    while (next < pages.length) await send(pages[next++]);
  }));
}

// ---------------------------------------------------------------------------------------------
// queries

type Json = Record<string, unknown>;

interface BenchQuery {
  name: string;
  description: string;
  method: 'GET' | 'POST';
  path: string;
  body?: Json;
  /** The same request on the engine port. */
  engine: { search: SearchRequest } | { facets: FacetRequest };
}

function queries(): BenchQuery[] {
  const get = (path: string, query: Record<string, string>) => `${path}?${new URLSearchParams(query).toString()}`;
  const searchOf = (parsed: ReturnType<typeof parseSearchBody>) => ({ search: searchRequestOf(parsed, filtersOf('all', parsed)!) });
  const word = { q: 'invoice' };
  const phrase = { query: { match_phrase: { content: 'session timeout' } }, filters: { type: 'repository_cases' } };
  const filtered = {
    query: { multi_match: { query: 'payment checkout', fields: ['title^3', 'description^2', 'content'] } },
    filters: { type: 'repository_cases', tags: ['tag-7'], projectId: PROJECT },
  };
  const highlight = {
    query: { multi_match: { query: 'refund', fields: ['title^3', 'content'] } }, filters: { type: 'repository_cases' },
    highlight: { fields: { title: {}, content: {} } },
  };
  const facetParams = { type: 'repository_cases', project: String(PROJECT) };
  const facetQuery = parseFacetParameters(facetParams);
  return [
    { name: 'oneWord', description: 'GET /api/search?q=invoice: one word in every type\'s default fields (title^3, description^2, content, custom field values), 25 hits, highlights of every text field (the default)', method: 'GET', path: get('/api/search', word), engine: searchOf(parseSearchParameters(word)) },
    { name: 'phrase', description: 'POST /api/search: match_phrase "session timeout" in cases\' content', method: 'POST', path: '/api/search', body: phrase, engine: searchOf(parseSearchBody(phrase)) },
    { name: 'wordTagProject', description: 'POST /api/search: multi_match "payment checkout" (title^3, description^2, content) in cases of project 7 carrying tag-7', method: 'POST', path: '/api/search', body: filtered, engine: searchOf(parseSearchBody(filtered)) },
    {
      name: 'facets', description: 'GET /api/search/facets?type=repository_cases&project=7: tags, folders, templates, states of a project\'s cases', method: 'GET', path: get('/api/search/facets', facetParams),
      engine: { facets: { types: facetQuery.types, query: facetQuery.query, filter: filtersOf('all', { projectId: facetQuery.projectId, tags: [], dateRange: null })!, fields: ['tags', 'folder', 'template', 'state'], size: FACET_SIZE } },
    },
    { name: 'highlight', description: 'POST /api/search: multi_match "refund" (title^3, content) in cases, highlight title and content', method: 'POST', path: '/api/search', body: highlight, engine: searchOf(parseSearchBody(highlight)) },
  ];
}

/** Requests over one kept-alive connection with node:http (as bench/query.ts: fetch costs the client more). */
function httpClient(url: string, token: string) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const call = (q: BenchQuery) => new Promise<Json>((resolve, reject) => {
    const body = q.body === undefined ? undefined : JSON.stringify(q.body);
    const headers: Record<string, string | number> = { authorization: `Bearer ${token}` };
    if (body !== undefined) Object.assign(headers, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    const req = http.request(`${url}${q.path}`, { method: q.method, agent, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        try {
          const answer = JSON.parse(Buffer.concat(chunks).toString('utf8')) as Json;
          if (res.statusCode !== 200) reject(new BenchSanityError(`${q.name} over HTTP: ${res.statusCode} ${JSON.stringify(answer)}`));
          else resolve(answer);
        } catch (err) {
          reject(err);
        }
      });
    });
    req.on('error', reject);
    req.end(body);
  });
  return { call, close: () => agent.destroy() };
}

interface Latency { p50Ms: number; p99Ms: number; meanMs: number }

function stats(values: number[]): Latency {
  const sorted = Float64Array.from(values).sort();
  return { p50Ms: round(percentile(sorted, 50), 3), p99Ms: round(percentile(sorted, 99), 3), meanMs: round(values.reduce((a, b) => a + b, 0) / values.length, 3) };
}

async function runEngineQuery(engine: SearchEngine, q: BenchQuery): Promise<{ answer: unknown; tookMs: number | null }> {
  if ('search' in q.engine) {
    const result = await engine.search(q.engine.search);
    return { answer: result, tookMs: result.tookMs };
  }
  return { answer: await engine.facets(q.engine.facets), tookMs: null };
}

/** What must agree between the two ways: total and hit ids, or the facet counts. */
function keyOf(q: BenchQuery, answer: unknown, way: 'http' | 'engine'): unknown {
  if ('search' in q.engine) {
    const a = answer as { total: number; hits: { type: string; id: string }[] };
    return { total: a.total, hits: a.hits.map((h) => `${h.type}/${h.id}`) };
  }
  if (way === 'http') {
    const f = (answer as { facets: Record<string, Record<string, number>> }).facets;
    return { tags: f.tags, folder: f.folders, template: f.templates, state: f.states };
  }
  const f = answer as Record<string, Record<string, number>>;
  return { tags: f.tags, folder: f.folder, template: f.template, state: f.state };
}

async function measureQueries(ctx: Ctx, engine: SearchEngine) {
  const app = buildApp({ ...ctx.app.appDeps, search: { engine: () => engine } });
  const server = await new Promise<http.Server>((resolve) => {
    const s = app.listen(0, '127.0.0.1', () => resolve(s));
  });
  const client = httpClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, ctx.token);
  try {
    const results = [];
    for (const q of queries()) {
      const viaHttp = await client.call(q);
      const { answer } = await runEngineQuery(engine, q);
      const httpKey = keyOf(q, viaHttp, 'http');
      const engineKey = keyOf(q, answer, 'engine');
      if (JSON.stringify(httpKey) !== JSON.stringify(engineKey)) {
        throw new BenchSanityError(`${q.name}: HTTP answers ${JSON.stringify(httpKey).slice(0, 300)}, the engine ${JSON.stringify(engineKey).slice(0, 300)}`);
      }
      const total = 'search' in q.engine ? (httpKey as { total: number }).total : Object.keys((httpKey as { tags: Json }).tags).length;
      if (total === 0) throw new BenchSanityError(`${q.name}: nothing found; the seed does not fit the query`);
      const samples = { http: [] as number[], engine: [] as number[], took: [] as number[] };
      for (let i = 0; i < ctx.o.warmup + ctx.o.iterations; i++) {
        // Alternate which way goes first, so that neither always follows the other.
        for (const way of i % 2 === 0 ? ['http', 'engine'] as const : ['engine', 'http'] as const) {
          const t0 = process.hrtime.bigint();
          const took = way === 'http' ? (await client.call(q), null) : (await runEngineQuery(engine, q)).tookMs;
          const ms = Number(process.hrtime.bigint() - t0) / 1e6;
          if (i < ctx.o.warmup) continue;
          samples[way].push(ms);
          if (took !== null) samples.took.push(took);
        }
      }
      const httpStats = stats(samples.http);
      const engineStats = stats(samples.engine);
      const ratio = round(httpStats.p50Ms / engineStats.p50Ms, 2);
      results.push({
        name: q.name, description: q.description, request: { method: q.method, path: q.path, ...(q.body && { body: q.body }) },
        answer: 'search' in q.engine ? { total, hits: (httpKey as { hits: unknown[] }).hits.length } : { tagLabels: total },
        http: httpStats, engine: engineStats,
        engineTook: samples.took.length ? { p50Ms: percentile(Float64Array.from(samples.took).sort(), 50), p99Ms: percentile(Float64Array.from(samples.took).sort(), 99) } : null,
        httpP50OverEngineP50: ratio, goal: GOAL_HTTP_OVER_ENGINE, met: httpStats.p50Ms <= GOAL_HTTP_OVER_ENGINE * engineStats.p50Ms,
      });
      console.log(`    ${q.name.padEnd(15)} http ${httpStats.p50Ms.toFixed(2)} / ${httpStats.p99Ms.toFixed(2)} ms, engine ${engineStats.p50Ms.toFixed(2)} / ${engineStats.p99Ms.toFixed(2)} ms (p50 / p99): ${ratio} (goal ≤ ${GOAL_HTTP_OVER_ENGINE}) ${ratio <= GOAL_HTTP_OVER_ENGINE ? 'ok' : 'MISSED'}`);
    }
    return results;
  } finally {
    client.close();
    await new Promise((r) => server.close(r));
    server.closeAllConnections();
  }
}

// ---------------------------------------------------------------------------------------------

interface Expected { repository_cases: number; projects: number; total: number }

interface Ctx {
  o: SearchBenchOptions;
  app: TestApp;
  dbUrl: string;
  store: PostgresEventStore;
  pool: pg.Pool;
  head: string;
  token: string;
  logger: pino.Logger;
  pages: SearchDocument[][];
}

interface EngineTarget {
  name: 'postgres' | 'opensearch' | 'elasticsearch';
  /** Why it is not measured; null: measured. */
  skipped: string | null;
  url: string | null;
}

async function targets(): Promise<EngineTarget[]> {
  const openSearchUrl = process.env.SEARCH_URL ?? 'http://127.0.0.1:9200';
  const esUrl = process.env.ELASTICSEARCH_URL ?? null;
  return [
    { name: 'postgres', skipped: null, url: null },
    { name: 'opensearch', url: openSearchUrl, skipped: (await searchAnswers(openSearchUrl)) ? null : `no OpenSearch answers at ${openSearchUrl} (npm run search:up)` },
    { name: 'elasticsearch', url: esUrl, skipped: esUrl === null ? 'ELASTICSEARCH_URL is not set' : (await searchAnswers(esUrl)) ? null : `nothing answers at ELASTICSEARCH_URL ${esUrl}` },
  ];
}

async function benchEngine(ctx: Ctx, target: EngineTarget, expected: Expected) {
  const prefix = target.name === 'postgres' ? 'bench_' : uniqueIndexPrefix();
  const settings: SearchSettings = { ...DEFAULT_SEARCH_SETTINGS, url: target.url, indexPrefix: prefix, bulkSize: ctx.o.bulkSize, engine: target.name === 'postgres' ? 'postgres' : 'auto' };
  const engineKnex = createKnex(ctx.dbUrl);
  let engine: SearchEngine | null = null;
  try {
    engine = target.name === 'postgres' ? new PostgresSearchEngine(engineKnex, settings)
      : target.name === 'elasticsearch' ? openElasticsearch({ ...settings, engine: 'elasticsearch' })
        : await openSearchEngine(settings, { knex: engineKnex, logger: ctx.logger });
    if (engine.engine !== target.name) throw new BenchSanityError(`${target.url} answers as ${engine.engine}, not ${target.name}`);
    const info = await engine.info();
    console.log(`  ${target.name} ${info.version}`);
    const straight = () => (target.name === 'postgres'
      ? straightToPostgres(ctx.pool, `"${prefix}search_v1"`, ctx.pages, expected)
      : straightToDocumentEngine(target.url!, settings, ctx.pages, expected));
    await engine.ensureVersion(1);
    const straightBefore = await straight();
    console.log(`    straight ${straightBefore.toFixed(2)} s = ${round(expected.total / straightBefore)} docs/s`);
    const log = await indexFromLog(ctx, engine, expected);
    console.log(`    from the log ${log.seconds.toFixed(2)} s = ${log.docsPerSecond} docs/s (engine writes ${log.profile.engineWrites.ms} ms, document SQL ${log.profile.documentSql.ms} ms, between batches ${log.profile.betweenBatchesMs} ms, refresh and count ${log.profile.finishMs} ms, rest ${log.profile.restMs} ms; ${log.profile.batches} batches of ${log.profile.eventsPerBatch} events)`);
    const straightAfter = await straight();
    console.log(`    straight again ${straightAfter.toFixed(2)} s = ${round(expected.total / straightAfter)} docs/s`);
    const scan = await indexByScan(ctx, engine, expected);
    console.log(`    scan (rebuildSearch) ${scan.seconds.toFixed(2)} s = ${scan.docsPerSecond} docs/s`);
    const straightDocsPerSecond = expected.total / ((straightBefore + straightAfter) / 2);
    const ratio = log.docsPerSecond / straightDocsPerSecond;
    const indexing = {
      documents: expected.total,
      fromLog: log,
      scan,
      straight: { secondsBefore: round(straightBefore, 2), secondsAfter: round(straightAfter, 2), docsPerSecond: round(straightDocsPerSecond) },
      ratio: round(ratio, 3), scanRatio: round(scan.docsPerSecond / straightDocsPerSecond, 3), goal: GOAL_RATIO, met: ratio >= GOAL_RATIO,
    };
    console.log(`    ratio from the log / straight ${ratio.toFixed(3)} (goal ≥ ${GOAL_RATIO}) ${ratio >= GOAL_RATIO ? 'ok' : 'MISSED'}`);
    const queryResults = await measureQueries(ctx, engine);
    return {
      engine: target.name, version: info.version, url: target.url, indexPrefix: prefix, skipped: null,
      indexing, queries: queryResults, passed: indexing.met && queryResults.every((q) => q.met),
    };
  } finally {
    if (target.name !== 'postgres' && target.url) await dropIndices(target.url, prefix).catch((err) => console.error(`  could not drop ${prefix}*: ${err}`));
    await engine?.close();
    await engineKnex.destroy();
  }
}

export async function runSearch(o: SearchBenchOptions): Promise<boolean> {
  console.log(`search: ${o.cases.toLocaleString('en')} cases (${o.stepsPerCase} steps, ${o.tagsPerCase} of ${o.tags} tags each) in ${o.folders} folders across ${o.projects} projects`);
  const logger = pino({ level: process.env.BENCH_LOG_LEVEL ?? 'warn' });
  let app: TestApp | undefined;
  let pool: pg.Pool | undefined;
  let store: PostgresEventStore | undefined;
  try {
    const engineTargets = await targets();
    app = await startTestApp();
    const dbUrl = app.databaseUrl;
    pool = new pg.Pool({ connectionString: dbUrl, max: 4 });
    store = new PostgresEventStore(pool, dbUrl);
    const machine = await describeMachine(pool);
    const adminId = await registerUser(app.deps, { email: 'bench@example.com', name: 'Bench', password: 'bench-password-1', access: 'ADMIN' }, systemMetadata('bench'));
    const session = new HttpClient(app.url);
    if ((await session.post('/api/auth/login', { email: 'bench@example.com', password: 'bench-password-1' })).status !== 200) throw new BenchSanityError('login failed');
    const token = (await session.post('/api/tokens', { name: 'bench' })).body.token as string;

    const seeded = await seedLog(store, o, { actor: { userId: adminId, via: 'api' }, correlationId: randomUUID(), causationId: null });
    const head = await store.headPosition();
    console.log(`  appended ${seeded.events.toLocaleString('en')} events in ${seeded.seconds.toFixed(1)} s; head ${head}`);
    const projectStarted = process.hrtime.bigint();
    await projectedToHead(app.deps.knex, head);
    const projectSeconds = seconds(projectStarted);
    console.log(`  read model at the head after ${projectSeconds.toFixed(1)} s more`);
    const counts = Object.fromEntries(await Promise.all(['repository_cases', 'steps', 'repository_case_tags', 'repository_folders', 'projects', 'tags'].map(async (t) =>
      [t, Number((await app!.deps.knex(t).count({ n: '*' }))[0].n)] as const)));
    const want = { repository_cases: o.cases, steps: o.cases * o.stepsPerCase, repository_case_tags: o.cases * o.tagsPerCase, repository_folders: o.folders, projects: o.projects, tags: o.tags };
    for (const [table, n] of Object.entries(want)) if (counts[table] !== n) throw new BenchSanityError(`the read model has ${counts[table]} ${table}, expected ${n}`);

    const pages = await scanAll(app.deps.knex, o.bulkSize);
    const documents = pages.reduce((n, p) => n + p.length, 0);
    const expected: Expected = { repository_cases: o.cases, projects: o.projects, total: o.cases + o.projects };
    if (documents !== expected.total) throw new BenchSanityError(`the scan built ${documents} documents, expected ${expected.total}`);
    await app.deps.knex.raw('ANALYZE');

    const ctx: Ctx = { o, app, dbUrl, store, pool, head, token, logger, pages };
    const engines: Record<string, unknown> = {};
    let passed = true;
    const code = describeCode(['services', 'contracts', 'projections', 'infra/search', 'bench']);
    // Written after each engine (`complete` false until the last): a long run leaves what it measured.
    const write = (complete: boolean) => writeResult('search', {
      benchmark: 'search',
      date: new Date().toISOString(),
      machine,
      code,
      parameters: { ...o, goalRatio: GOAL_RATIO, goalHttpOverEngineP50: GOAL_HTTP_OVER_ENGINE, indexerBatchEvents: 1000, writesAtOnce: SEARCH_WRITES_AT_ONCE, transport: 'direct (PostgreSQL event store)' },
      seeded: { events: seeded.events, head, appendSeconds: round(seeded.seconds, 1), projectSecondsAfterAppend: round(projectSeconds, 1), readModel: counts, documents, validatedTypes: seeded.validatedTypes },
      engines,
      complete,
      passed: complete && passed,
      loadAverageAfter: os.loadavg().map((l) => round(l, 2)),
    });
    for (const target of engineTargets) {
      if (target.skipped) {
        console.log(`  ${target.name}: SKIPPED, ${target.skipped}`);
        engines[target.name] = { engine: target.name, skipped: target.skipped };
        continue;
      }
      const result = await benchEngine(ctx, target, expected);
      engines[target.name] = result;
      passed &&= result.passed;
      write(false);
    }
    const file = write(true);
    console.log(`  ${passed ? 'goals met' : 'goal missed'}; ${file}`);
    return passed;
  } finally {
    await store?.close();
    await pool?.end();
    await app?.stop();
  }
}
