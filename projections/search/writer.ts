import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { describeError, isTransient } from '../../services/shared/faults';
import { BulkWriteFailed, SearchUnavailable, type DocumentKey, type DocumentWrites, type SearchDocument, type SearchEngine, type WriteFailure } from '../../services/shared/search';
import { affectedBy, failureStatusesOf, fanOutPages, writesResultsInBulk } from './affected';
import { isIndexedType, loadDocuments, type IndexedType } from './documents';

/** How often the documents of a refused bulk write are written again before they are recorded. */
export const DOCUMENT_ATTEMPTS = 3;
const ATTEMPT_PAUSE_MS = 200;

/** Stopping: the batch ends where it is, its checkpoint unmoved. */
export class IndexingStopped extends Error {
  constructor() {
    super('the search indexer is stopping');
    this.name = 'IndexingStopped';
  }
}

export interface WriterDeps {
  engine: SearchEngine;
  knex: Knex;
  logger: Logger;
  bulkSize: number;
  /** Checked between writes: true once stop() was called. */
  stopping?: () => boolean;
  /** How many of a batch's pages may be read and written at once, asked before each page (default 1). */
  writesAtOnce?: () => number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const keyOf = (k: DocumentKey) => `${k.type}/${k.id}`;

/**
 * Writes documents to a version; a bulk write the engine refused in part (BulkWriteFailed) is
 * written again for the refused documents only, DOCUMENT_ATTEMPTS times, then each document still
 * refused is recorded in `search_failures` (engine, version, type, id, where in the log, why) and
 * the writer goes on: recorded, never skipped silently. A write refused as a whole for a reason
 * that is not transient (a statement the PostgreSQL engine cannot run for one document) is
 * halved until the documents at fault are found, and those are refused the same way: one document
 * never stops the indexer (docs/architecture.md, "A projection never stops the service").
 * SearchUnavailable and transient errors are the caller's: the batch is written again, its
 * checkpoint unmoved. Answers the documents acknowledged.
 */
export async function writeDocuments(
  deps: WriterDeps, version: number, ops: DocumentWrites & { upsert: SearchDocument[]; remove: DocumentKey[] }, position: string,
  checkpoints?: Record<string, string>,
  /** Refused documents are recorded once this resolves (the pages before, written at the same time, recorded theirs). */
  recordAfter: Promise<void> = Promise.resolve(),
): Promise<number> {
  let pending = ops;
  let written = 0;
  for (let attempt = 1; ; attempt++) {
    try {
      await deps.engine.write(version, pending, checkpoints);
      written += pending.upsert.length + pending.remove.length;
      await resolveFailures(deps, version, pending);
      return written;
    } catch (caught) {
      const error = checkpoints === undefined ? await refusalsOf(deps, version, pending, caught) : caught;
      if (error === null) {
        // Every half was written after all.
        written += pending.upsert.length + pending.remove.length;
        await resolveFailures(deps, version, pending);
        return written;
      }
      if (!(error instanceof BulkWriteFailed)) throw error;
      const refused = new Map(error.failures.map((f) => [keyOf(f), f]));
      written += pending.upsert.length + pending.remove.length - refused.size;
      const retry = {
        upsert: pending.upsert.filter((d) => refused.has(keyOf(d))),
        remove: pending.remove.filter((k) => refused.has(keyOf(k))),
        readAt: ops.readAt,
      };
      if (attempt >= DOCUMENT_ATTEMPTS || retry.upsert.length + retry.remove.length === 0) {
        await recordAfter;
        await recordFailures(deps, version, [...refused.values()], position);
        // What was refused is recorded: the checkpoint may move past it now.
        if (checkpoints) await deps.engine.write(version, { upsert: [], remove: [] }, checkpoints);
        return written;
      }
      deps.logger.warn({ failures: refused.size, attempt, version }, 'the search engine refused documents; writing them again');
      pending = retry;
      await sleep(ATTEMPT_PAUSE_MS * attempt);
    }
  }
}

/**
 * A write that failed as a whole for a reason that is not transient: its halves are written on
 * their own, down to single documents, whose error becomes their refusal. Answers the
 * BulkWriteFailed of the documents refused (null: every half was written after all), or the error
 * itself when it is the caller's (transient, or a write of checkpoints only).
 */
async function refusalsOf(deps: WriterDeps, version: number, ops: DocumentWrites & { upsert: SearchDocument[]; remove: DocumentKey[] }, error: unknown): Promise<unknown> {
  if (error instanceof BulkWriteFailed || error instanceof SearchUnavailable || isTransient(error) || error instanceof IndexingStopped) return error;
  const items: ({ upsert: SearchDocument } | { remove: DocumentKey })[] = [...ops.upsert.map((upsert) => ({ upsert })), ...ops.remove.map((remove) => ({ remove }))];
  const refused: WriteFailure[] = [];
  const writeSome = async (some: typeof items, failure: unknown): Promise<void> => {
    if (some.length <= 1) {
      if (some.length === 0) return;
      const key = 'upsert' in some[0] ? some[0].upsert : some[0].remove;
      refused.push({ type: key.type, id: key.id, reason: describeError(failure) });
      return;
    }
    const half = Math.ceil(some.length / 2);
    for (const part of [some.slice(0, half), some.slice(half)]) {
      if (deps.stopping?.()) throw new IndexingStopped();
      try {
        await deps.engine.write(version, {
          upsert: part.flatMap((i) => ('upsert' in i ? [i.upsert] : [])), remove: part.flatMap((i) => ('remove' in i ? [i.remove] : [])),
          readAt: ops.readAt,
        });
      } catch (partError) {
        if (partError instanceof BulkWriteFailed) refused.push(...partError.failures);
        else if (partError instanceof SearchUnavailable || isTransient(partError)) throw partError;
        else await writeSome(part, partError);
      }
    }
  };
  if (items.length === 0) return error;
  deps.logger.warn({ err: error, documents: items.length, version }, 'the search engine refused a write as a whole; writing it in halves to find the documents at fault');
  await writeSome(items, error);
  if (refused.length === items.length) {
    // Every document refused: the fault may be no document's (a bug, a broken table). A write of nothing tells.
    try {
      await deps.engine.write(version, { upsert: [], remove: [] });
    } catch {
      return error;
    }
  }
  return refused.length === 0 ? null : new BulkWriteFailed(refused);
}

/** Documents written at last: their earlier failures (if any) are resolved. */
async function resolveFailures(deps: WriterDeps, version: number, ops: { upsert: readonly DocumentKey[]; remove: readonly DocumentKey[] }): Promise<void> {
  const keys = [...ops.upsert, ...ops.remove];
  if (keys.length === 0) return;
  await deps.knex.raw(`UPDATE search_failures f SET resolved_at = now() FROM unnest(?::text[], ?::text[]) AS k(type, doc_id)
    WHERE f.resolved_at IS NULL AND f.engine = ? AND f.version = ? AND f.type = k.type AND f.doc_id = k.doc_id`,
  [keys.map((k) => k.type), keys.map((k) => k.id), deps.engine.engine, version]);
}

async function recordFailures(deps: WriterDeps, version: number, failures: WriteFailure[], position: string): Promise<void> {
  deps.logger.error({ version, failures: failures.length, first: failures.slice(0, 3) }, 'the search engine refused documents after retries; recorded in search_failures');
  for (let i = 0; i < failures.length; i += 1000) {
    await deps.knex('search_failures').insert(failures.slice(i, i + 1000).map((f) => ({
      engine: deps.engine.engine, version, type: f.type, doc_id: f.id, position, reason: f.reason.slice(0, 2000),
    })));
  }
}

/**
 * Work started as slots free up, at most `limit()` at once: a failure of any is thrown by the next
 * `start` or by `end`, each only once every work started has ended (none goes on behind a batch
 * that failed, to overlap the batch written again).
 */
class Slots {
  private readonly running = new Set<Promise<void>>();
  private failure: { error: unknown } | null = null;

  constructor(private readonly limit: () => number) {}

  async start(work: () => Promise<void>): Promise<void> {
    while (!this.failure && this.running.size >= Math.max(1, this.limit())) await Promise.race(this.running);
    if (this.failure) await this.end();
    const done: Promise<void> = work().catch((error: unknown) => {
      this.failure ??= { error };
    }).finally(() => this.running.delete(done));
    this.running.add(done);
  }

  async end(): Promise<void> {
    while (this.running.size > 0) await Promise.all([...this.running]);
    if (this.failure) throw this.failure.error;
  }
}

/**
 * Indexes a batch of events into `version`: the documents it touches (affected.ts) are read from
 * the read model (which the caller made sure has applied the batch), in bulk, a statement per type
 * and page of `bulkSize`, and written, `writesAtOnce()` pages at a time (each read, then written,
 * on a connection of its own; pages written at once never share a document, and refused documents
 * are recorded in the pages' order); then, only once every write was
 * acknowledged (or its refused documents recorded), the checkpoints. Stopping between writes
 * leaves the checkpoints unmoved. Answers the documents written.
 */
export async function indexEvents(
  deps: WriterDeps, version: number, events: Parameters<typeof affectedBy>[0], position: string, checkpoints: Record<string, string>,
): Promise<number> {
  const { direct, fanOuts } = affectedBy(events, writesResultsInBulk(events) ? await failureStatusesOf(deps.knex) : undefined);
  const checkStop = () => {
    if (deps.stopping?.()) throw new IndexingStopped();
  };
  let written = 0;
  const slots = new Slots(deps.writesAtOnce ?? (() => 1));
  /** Resolves once the pages started so far recorded what was refused of them. */
  let recorded = Promise.resolve();
  const write = async (type: IndexedType, ids: string[]) => {
    if (ids.length === 0) return;
    checkStop();
    const before = recorded;
    let done!: () => void;
    recorded = new Promise((resolve) => {
      done = resolve;
    });
    await slots.start(async () => {
      try {
        checkStop();
        const ops = await loadDocuments(deps.knex, type, ids);
        checkStop();
        const acknowledged = await writeDocuments(deps, version, ops, position, undefined, before);
        written += acknowledged; // after the await: pages beside it add theirs meanwhile
      } finally {
        // A page that failed records nothing; the batch fails (and is written again) anyway.
        done();
      }
    });
  };
  for (const [type, ids] of direct) {
    if (!isIndexedType(type)) continue;
    const all = [...ids];
    for (let i = 0; i < all.length; i += deps.bulkSize) await write(type, all.slice(i, i + deps.bulkSize));
  }
  // The direct documents are not left out of the fan-outs' pages: remembering them all would cost
  // memory on a big batch (an import), writing one twice costs little. Each fan-out's pages are
  // written once the pages before them ended, so a document is never in two writes at once (the
  // PostgreSQL engine applies writes in the order they end).
  for (const fanOut of fanOuts) {
    await slots.end();
    for await (const page of fanOutPages(deps.knex, fanOut, deps.bulkSize)) await write(fanOut.type, page);
  }
  await slots.end();
  checkStop();
  await deps.engine.write(version, { upsert: [], remove: [] }, checkpoints);
  return written;
}
