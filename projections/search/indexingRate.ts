import type { Knex } from 'knex';
import type { Logger } from 'pino';
import { describeError } from '../../services/shared/faults';
import { processIdentity, type ProcessIdentity } from '../../services/shared/processIdentity';

/** What the indexer shows of itself (SearchIndexerStatus, or the indexer role's status). */
export interface PublishedIndexerState {
  state: string;
  engine: string | null;
  version: number | null;
  position: string;
  lastError: string | null;
  documentsWritten: number;
}

/** Minutes of the rate kept (the panel asks for at most 60). */
export const RATE_RETENTION_MINUTES = 120;
/** An indexer's state row not refreshed for this long is deleted (a process gone for good). */
const STATE_RETENTION = '1 day';
/** How often the state is published without a batch (a retrying indexer writes none). */
export const STATE_HEARTBEAT_MS = 10_000;
const PRUNE_EVERY_MS = 60_000;
const WARN_EVERY_MS = 60_000;

export interface IndexingRatePublisher {
  /** After each acknowledged batch: the documents it wrote. Never waits, never throws. */
  indexed(documents: number): void;
  /** Publishes the last state (awaited: after the indexer stopped). */
  stop(): Promise<void>;
}

/**
 * Publishes the indexer's numbers where the API reads them, whichever process runs it: per
 * minute and process, the documents written (`search_indexing_rate`, one upsert per batch,
 * minutes older than RATE_RETENTION_MINUTES deleted), and the indexer's state
 * (`search_indexer_state`, with every write and every STATE_HEARTBEAT_MS). The indexing never
 * waits for it: one write at a time, batches meanwhile added up for the next; a failed write is
 * logged (at most once a minute) and its numbers dropped.
 */
export function publishIndexingRate(deps: {
  knex: Knex; logger: Logger; status: () => PublishedIndexerState; process?: ProcessIdentity; heartbeatMs?: number;
}): IndexingRatePublisher {
  const { knex, logger } = deps;
  const me = deps.process ?? processIdentity();
  const startedAt = new Date();
  let documents = 0;
  let batches = 0;
  let writing: Promise<void> | null = null;
  let lastPrune = 0;
  let lastWarning = 0;
  let dropped = 0;

  async function write(docs: number, count: number): Promise<void> {
    const s = deps.status();
    const state = [me.id, me.host, me.pid, s.state, s.engine, s.version, s.position, s.lastError, s.documentsWritten, startedAt];
    const upsertState = `INSERT INTO search_indexer_state AS s
        (indexer, host, pid, state, engine, version, position, last_error, documents_written, started_at, updated_at)
      VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, now())
      ON CONFLICT (indexer) DO UPDATE SET host = excluded.host, pid = excluded.pid, state = excluded.state, engine = excluded.engine,
        version = excluded.version, position = excluded.position, last_error = excluded.last_error,
        documents_written = excluded.documents_written, started_at = excluded.started_at, updated_at = excluded.updated_at`;
    if (count === 0) await knex.raw(upsertState, state);
    else {
      await knex.raw(`WITH rate AS (
          INSERT INTO search_indexing_rate AS r (minute, indexer, documents, batches) VALUES (date_trunc('minute', now()), ?, ?, ?)
          ON CONFLICT (minute, indexer) DO UPDATE SET documents = r.documents + excluded.documents, batches = r.batches + excluded.batches
        ) ${upsertState}`, [me.id, docs, count, ...state]);
    }
    if (Date.now() - lastPrune >= PRUNE_EVERY_MS) {
      lastPrune = Date.now();
      await knex.raw(`DELETE FROM search_indexing_rate WHERE minute < now() - make_interval(mins => ?)`, [RATE_RETENTION_MINUTES]);
      await knex.raw(`DELETE FROM search_indexer_state WHERE updated_at < now() - interval '${STATE_RETENTION}'`);
    }
  }

  /** Starts a write of what is pending unless one is under way (its end starts the next). */
  function flush(): Promise<void> {
    if (writing) return writing;
    const docs = documents;
    const count = batches;
    documents = 0;
    batches = 0;
    writing = write(docs, count).catch((err) => {
      dropped += docs;
      if (Date.now() - lastWarning >= WARN_EVERY_MS) {
        lastWarning = Date.now();
        logger.warn({ err: describeError(err), droppedDocuments: dropped }, 'cannot publish the search indexing rate; those numbers are dropped (indexing goes on)');
        dropped = 0;
      }
    }).finally(() => {
      writing = null;
      if (batches > 0) void flush();
    });
    return writing;
  }

  const heartbeat = setInterval(() => void flush(), deps.heartbeatMs ?? STATE_HEARTBEAT_MS);
  heartbeat.unref();
  void flush();

  return {
    indexed(written) {
      documents += written;
      batches++;
      void flush();
    },
    async stop() {
      clearInterval(heartbeat);
      while (writing) await writing;
      await flush();
    },
  };
}
