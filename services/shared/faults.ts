// Which errors a background loop (projector, relay, saga) may retry, and for how long.
//
// Transient: something the job depends on is away for a while (the database restarting or
// refusing connections, a socket cut, a broker or EventStoreDB unavailable, a serialization
// conflict). Trying the same work again later can succeed, so it is retried with capped backoff
// within a budget. Everything else (a contract violation, a domain rule, a programming error,
// bad SQL or data) fails the same way every time: it is reported once, never retried.
//
// Errors are recognised by their shape (`code`, `name`, `retriable`, `type`), not by importing
// pg, knex, kafkajs or the EventStoreDB client: this module sits in the shared kernel, which the
// projections import too, and only infra/ imports technology clients.

/** Node socket and DNS errors: the peer is away or unreachable. */
const SOCKET_CODES = new Set([
  'ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ETIMEDOUT', 'EPIPE', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH',
  'EHOSTDOWN', 'ENETUNREACH', 'ENETDOWN', 'ENETRESET', 'ESOCKETTIMEDOUT', 'ECONNCLOSED',
]);

/**
 * PostgreSQL SQLSTATEs that say nothing about the statement: 57P01 admin_shutdown, 57P02
 * crash_shutdown, 57P03 cannot_connect_now, 40001 serialization_failure, 40P01 deadlock_detected,
 * 55P03 lock_not_available (a NOWAIT lock another transaction holds). Classes 08 (connection
 * exception) and 53 (insufficient resources: too many connections, disk full, out of memory) are
 * matched by prefix below.
 */
const PG_TRANSIENT_CODES = new Set(['57P01', '57P02', '57P03', '40001', '40P01', '55P03']);

/** Messages pg and knex give without a code when a connection is lost or cannot be had. */
const CONNECTION_MESSAGES = [
  /^Connection terminated/i, // pg: "Connection terminated unexpectedly", "Connection terminated due to connection timeout"
  /is not queryable/i, // pg: a client that lost its connection
  /^timeout exceeded when trying to connect/i, // pg.Pool connectionTimeoutMillis
  /^Knex: Timeout acquiring a connection/i, // knex pool acquire timeout (KnexTimeoutError)
  /not currently accepting connections/i, // PostgreSQL 55000 at connect: ALTER DATABASE … ALLOW_CONNECTIONS false
  /the database system is (starting up|shutting down|in recovery mode)/i,
];

/** KafkaJS errors marked non-retriable that still only say the cluster is not there yet. */
const KAFKA_UNAVAILABLE = new Set(['KafkaJSGroupCoordinatorNotFound', 'KafkaJSConnectionError', 'KafkaJSConnectionClosedError', 'KafkaJSRequestTimeoutError', 'KafkaJSBrokerNotFound', 'KafkaJSNoBrokerAvailableError']);

/** EventStoreDB client error types (`err.type`) of a server that is away or not the leader. */
const ESDB_UNAVAILABLE = new Set(['unavailable', 'deadline-exceeded', 'not-leader', 'timeout']);

interface ErrorShape { name?: unknown; code?: unknown; message?: unknown; retriable?: unknown; type?: unknown; cause?: unknown; originalError?: unknown; errors?: unknown }

function isTransientItself(e: ErrorShape): boolean {
  const name = typeof e.name === 'string' ? e.name : '';
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : '';
  if (name === 'KnexTimeoutError') return true;
  if (SOCKET_CODES.has(code)) return true;
  if (/^[0-9A-Z]{5}$/.test(code) && (code.startsWith('08') || code.startsWith('53') || PG_TRANSIENT_CODES.has(code))) return true;
  if (CONNECTION_MESSAGES.some((m) => m.test(message))) return true;
  if (name.startsWith('KafkaJS') && (e.retriable === true || KAFKA_UNAVAILABLE.has(name))) return true;
  if (typeof e.type === 'string' && ESDB_UNAVAILABLE.has(e.type)) return true;
  return false;
}

/**
 * True when `err` (or an error it wraps: `cause`, kafkajs's `originalError`, the members of an
 * AggregateError such as Node's for a host with several addresses) says a dependency is away, so
 * the same work may succeed later. False for everything else, unknown errors included.
 */
export function isTransient(err: unknown): boolean {
  const seen = new Set<unknown>();
  const visit = (e: unknown): boolean => {
    if (e === null || typeof e !== 'object' || seen.has(e) || seen.size > 20) return false;
    // A loop that gave up stays given up, whatever its last error was.
    if (e instanceof RetryBudgetSpent) return false;
    seen.add(e);
    const shape = e as ErrorShape;
    if (isTransientItself(shape)) return true;
    if (visit(shape.cause) || visit(shape.originalError)) return true;
    return Array.isArray(shape.errors) && shape.errors.some(visit);
  };
  return visit(err);
}

/** One line for a log or a status: the error's message, with its code when it has one. */
export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as ErrorShape).code;
  return typeof code === 'string' && code !== '' && !err.message.includes(code) ? `${err.message} (${code})` : err.message;
}

export interface RetryBudgetOptions {
  /** The first pause, in ms; each next one doubles. */
  firstMs: number;
  /** The longest pause, in ms. */
  maxMs: number;
  /** How long one run of failures may last, from its first failure, before retrying stops. */
  budgetMs: number;
  /** Clock (ms), for tests. */
  now?: () => number;
}

export interface RetryBudget {
  /**
   * Call on each transient failure: the pause before the next try (capped backoff, never past the
   * budget's end), or null when the budget is spent (stop retrying).
   */
  next(): number | null;
  /** Call on success: the next failure starts a new run with the whole budget and the first pause. */
  reset(): void;
  /** Failures in the current run. */
  readonly failures: number;
  /** Ms since the current run's first failure (0 when there is none). */
  elapsedMs(): number;
}

/**
 * A bound on retries: a run of transient failures may last `budgetMs` from its first failure;
 * pauses go `firstMs`, doubling, up to `maxMs`. A success resets it.
 *
 * ```ts
 * const budget = retryBudget({ firstMs: 500, maxMs: 30_000, budgetMs: config.retryBudgetMs });
 * for (;;) {
 *   try { await work(); budget.reset(); break; }
 *   catch (err) {
 *     if (!isTransient(err)) throw err;            // fails once, clearly
 *     const pause = budget.next();
 *     if (pause === null) throw new RetryBudgetSpent(err, budget);
 *     await sleep(pause);
 *   }
 * }
 * ```
 */
export function retryBudget(opts: RetryBudgetOptions): RetryBudget {
  if (!(opts.firstMs > 0 && opts.maxMs >= opts.firstMs && opts.budgetMs >= 0)) throw new RangeError('retryBudget needs 0 < firstMs <= maxMs and budgetMs >= 0');
  const now = opts.now ?? Date.now;
  let startedAt: number | null = null;
  let failures = 0;
  return {
    next() {
      const t = now();
      startedAt ??= t;
      failures++;
      const left = startedAt + opts.budgetMs - t;
      if (left <= 0) return null;
      return Math.min(opts.maxMs, opts.firstMs * 2 ** Math.min(failures - 1, 30), left);
    },
    reset() {
      startedAt = null;
      failures = 0;
    },
    get failures() {
      return failures;
    },
    elapsedMs: () => (startedAt === null ? 0 : now() - startedAt),
  };
}

/** A loop gave up: its transient failures lasted longer than its budget. `cause` is the last one. */
export class RetryBudgetSpent extends Error {
  readonly code = 'retry-budget-spent';
  constructor(readonly lastError: unknown, budget: Pick<RetryBudget, 'failures' | 'elapsedMs'>) {
    super(`gave up after ${budget.failures} failed attempts in ${Math.round(budget.elapsedMs() / 1000)} s: ${describeError(lastError)}`, { cause: lastError });
    this.name = 'RetryBudgetSpent';
  }
}

/** A loop's retry settings: its budget (RETRY_BUDGET_MS) and, when a test wants them shorter, its pauses. */
export interface RetryPolicy {
  budgetMs: number;
  firstMs?: number;
  maxMs?: number;
}

/** The budget of a loop whose own pauses are `defaults`, unless `policy` says otherwise; no policy: the default budget. */
export function budgetOf(policy: RetryPolicy | undefined, defaults: { firstMs: number; maxMs: number }): RetryBudget {
  return retryBudget({ firstMs: policy?.firstMs ?? defaults.firstMs, maxMs: policy?.maxMs ?? defaults.maxMs, budgetMs: policy?.budgetMs ?? DEFAULT_RETRY_BUDGET_MS });
}

/**
 * The longest pause between two tries of a live loop (the projectors, the search indexer, the
 * read-your-writes watcher) while a dependency is away: it goes on within this of the
 * dependency's return, and the retry budget, not the pause, bounds how long it tries. With 30 s,
 * the read model or search could stay behind half a minute after an outage had ended.
 */
export const LIVE_RETRY_MAX_MS = 5_000;

/** 30 minutes: the default RETRY_BUDGET_MS. */
export const DEFAULT_RETRY_BUDGET_MS = 30 * 60 * 1000;
