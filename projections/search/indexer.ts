import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { Logger } from 'pino';
import type { EventEnvelope } from '../../contracts/envelope';
import { decodeValue, type Kafka, type KafkaMessage } from '../../infra/kafka';
import type { EventStore, Subscription } from '../../services/shared/eventStore';
import { ReadModelWaitFailed } from '../../services/shared/errors';
import { LIVE_RETRY_MAX_MS, RetryBudgetSpent, budgetOf, describeError, isTransient, type RetryBudget, type RetryPolicy } from '../../services/shared/faults';
import { Pauses } from '../../services/shared/pauses';
import { SearchUnavailable, searchPositionKey, type SearchEngine } from '../../services/shared/search';
import { inBatches } from '../runtime/batches';
import { CheckpointWatcher } from '../runtime/checkpointWatcher';
import { consumerOptions, kafkaCheckpointKey, projectionsOfGroup } from '../runtime/kafkaProjector';
import { SHALLOW_EVENTS } from './affected';
import { QuietLog } from './quietLog';
import { DIRECT_KEY, SOURCE_PROJECTIONS, directReadModelCheckpoints, rebuildSearch } from './rebuild';
import { IndexingStopped, indexEvents } from './writer';

export interface SearchIndexerStatus {
  state: 'starting' | 'running' | 'retrying' | 'failed' | 'stopped';
  engine: string;
  version: number | null;
  /** The last log position applied (on Kafka: the highest over the partitions). */
  position: string;
  lastError: string | null;
  documentsWritten: number;
  /** When failed: the id its error-level log line carries. */
  correlationId?: string;
}

export interface SearchIndexer {
  status(): SearchIndexerStatus;
  stop(): Promise<void>;
}

export const indexerGroupOf = (topic: string) => `${topic}.indexer`;
export const INDEXER_NAME = DIRECT_KEY;

const BATCH_SIZE = 1000;
const FIRST_BACKOFF_MS = 500;
const MAX_BACKOFF_MS = LIVE_RETRY_MAX_MS;
const VERSION_CHECK_MS = 3000;
/** A wait for the read model longer than this is reported (`retrying`) and started again. */
const READ_MODEL_WAIT_MS = 30_000;
/**
 * Pages of a batch read and written at once while the log is quiet (no new event for
 * QUIET_LOG_MS); one at a time while it grows, so that an import's own projections, which what its
 * caller waits for, keep the cores. Measured (bench/README.md): after a 100,000-case import search
 * caught up 10.7–11.6 s after it completed instead of 16.8–19.0 s.
 */
export const SEARCH_WRITES_AT_ONCE = 2;
const QUIET_LOG_MS = 1000;
const QUIET_SAMPLE_MS = 200;

/**
 * On Kafka, where a new version starts: per partition, the last offset committed for both source
 * projections by the consumer groups holding them (committed offsets trail what they applied, so
 * the rows are at least that new), as `search#<partition>`; a partition not committed for both is
 * left out (read from its start). And `search@<partition>`: the lowest position the source projections applied from it
 * (projection_checkpoints, read first: the rows scanned after are at least that new), which
 * read-your-writes compares positions with.
 */
export async function kafkaReadModelCheckpoints(kafka: Kafka, topic: string, knex?: Knex): Promise<Record<string, string>> {
  const positions: Record<string, string> = {};
  if (knex) {
    const rows: { name: string; position: string }[] = await knex('projection_checkpoints')
      .where((q) => SOURCE_PROJECTIONS.forEach((p) => void q.orWhere('name', 'like', `${p}#%`))).select('name', 'position');
    const lowest = new Map<number, { seen: Set<string>; min: bigint }>();
    for (const { name, position } of rows) {
      const [projection, partition] = name.split('#');
      const entry = lowest.get(Number(partition)) ?? { seen: new Set<string>(), min: BigInt(position) };
      entry.seen.add(projection);
      if (BigInt(position) < entry.min) entry.min = BigInt(position);
      lowest.set(Number(partition), entry);
    }
    for (const [partition, { seen, min }] of lowest) if (seen.size === SOURCE_PROJECTIONS.length) positions[searchPositionKey(partition)] = min.toString();
  }
  const admin = kafka.admin();
  await admin.connect();
  try {
    // The groups holding a source projection (one per set of projections, consumerGroupOf); of
    // several holding the same one (a set that changed), the furthest: each trails what it applied.
    const { groups } = await admin.listGroups();
    const furthest = new Map<string, Map<number, bigint>>(SOURCE_PROJECTIONS.map((p) => [p, new Map()]));
    const partitions = new Set<number>();
    for (const { groupId } of groups) {
      const held = projectionsOfGroup(topic, groupId)?.filter((p) => furthest.has(p)) ?? [];
      if (held.length === 0) continue;
      const [entry] = await admin.fetchOffsets({ groupId, topics: [topic] });
      for (const { partition, offset } of entry?.partitions ?? []) {
        partitions.add(partition);
        if (BigInt(offset) < 0n) continue;
        for (const p of held) {
          const known = furthest.get(p)!.get(partition);
          if (known === undefined || BigInt(offset) > known) furthest.get(p)!.set(partition, BigInt(offset));
        }
      }
    }
    const lowest = new Map<number, bigint | null>();
    for (const partition of partitions) {
      const next = SOURCE_PROJECTIONS.map((p) => furthest.get(p)!.get(partition) ?? null);
      lowest.set(partition, next.includes(null) ? null : (next as bigint[]).reduce((a, b) => (b < a ? b : a)));
    }
    const checkpoints: Record<string, string> = {};
    for (const [partition, next] of lowest) if (next !== null && next > 0n) checkpoints[kafkaCheckpointKey(DIRECT_KEY, partition)] = (next - 1n).toString();
    return { ...checkpoints, ...positions };
  } finally {
    await admin.disconnect();
  }
}

const transient = (error: unknown) => error instanceof SearchUnavailable || isTransient(error);

/**
 * The search indexer (issue 16): a projection of the log into the search engine. On the direct
 * transport it follows the event store from its checkpoint; on Kafka it is one consumer group
 * (`<topic>.indexer`). Its checkpoints live in the engine, per index version (`search`, or
 * `search#<partition>` holding the last offset applied), and move only once every document of a
 * batch was acknowledged (writer.ts). Documents are built from the read model: before a batch is
 * read, the indexer waits until the source projections applied it (per partition on Kafka).
 *
 * Versions: with no live version it builds version 1 (rebuild.ts) and follows from the checkpoint
 * recorded there; every few seconds it checks the live version and moves to a newer one a rebuild
 * switched to, replaying from that version's checkpoints.
 *
 * Failures: the engine or the database away → the batch is written again after a pause (0.5 s
 * doubling to 30 s) within the retry budget, reported `retrying`, checkpoint unmoved; documents
 * the engine refuses are retried then recorded in search_failures; anything else (a bug, SQL
 * refused) → `failed`, logged once at error level with a correlation id, until restarted.
 */
export function startSearchIndexer(deps: {
  engine: SearchEngine; knex: Knex; store: EventStore; kafka?: { kafka: Kafka; topic: string; partitions: number } | null;
  databaseUrl: string; logger: Logger; retry?: RetryPolicy; bulkSize: number;
  /** Told once when the indexer fails for good. */
  onFailed?: () => void;
  /** Told after each batch the engine acknowledged, with its documents (the indexing rate, indexingRate.ts): must not throw. */
  onIndexed?: (documents: number) => void;
}): SearchIndexer {
  const { engine, knex } = deps;
  const logger = deps.logger.child({ role: 'indexer', engine: engine.engine });
  const kafka = deps.kafka ?? null;
  const current: SearchIndexerStatus = { state: 'starting', engine: engine.engine, version: null, position: '0', lastError: null, documentsWritten: 0 };
  let stopping = false;
  const failed = () => current.state === 'failed';
  let subscription: Subscription | null = null;
  let versionTimer: NodeJS.Timeout | null = null;
  const pauses = new Pauses();
  const watcher = new CheckpointWatcher(knex, deps.databaseUrl, SOURCE_PROJECTIONS,
    kafka ? (projection, partition) => kafkaCheckpointKey(projection, Number(partition)) : undefined, { retry: deps.retry, logger });
  const budget = budgetOf(deps.retry, { firstMs: FIRST_BACKOFF_MS, maxMs: MAX_BACKOFF_MS });
  const quiet = new QuietLog(deps.store, QUIET_LOG_MS, QUIET_SAMPLE_MS);
  const writer = {
    engine, knex, logger, bulkSize: deps.bulkSize, stopping: () => stopping,
    writesAtOnce: () => (quiet.isQuiet() ? SEARCH_WRITES_AT_ONCE : 1),
  };

  function fail(error: unknown): void {
    if (failed() || stopping) return;
    current.state = 'failed';
    current.lastError = describeError(error);
    current.correlationId = randomUUID();
    logger.error({ err: error, version: current.version, position: current.position, correlationId: current.correlationId }, 'search indexer failed; stopped until restarted');
    if (versionTimer) clearInterval(versionTimer);
    void subscription?.close();
    deps.onFailed?.();
  }

  const written = (documents: number) => {
    current.documentsWritten += documents;
    deps.onIndexed?.(documents);
  };

  const advancePosition = (position: bigint) => {
    if (position > BigInt(current.position)) current.position = position.toString();
  };

  /** Waits (bounded, then again) until the source projections applied `position` (`partition`: on Kafka). */
  async function waitForReadModel(position: string, partition: number | null): Promise<void> {
    for (;;) {
      if (stopping) throw new IndexingStopped();
      try {
        await watcher.waitFor({ position, streamId: partition === null ? '' : String(partition) }, READ_MODEL_WAIT_MS, { ignoreParked: true });
        return;
      } catch (error) {
        if (!(error instanceof ReadModelWaitFailed) || error.code === 'shutting-down') throw stopping ? new IndexingStopped() : error;
        current.state = 'retrying';
        current.lastError = `the read model has not applied position ${position} yet`;
        logger.warn({ position, partition }, 'waiting for the read model to apply the batch');
      }
    }
  }

  /**
   * Runs `work` until it succeeds: transient failures are retried after a pause within the budget.
   * 'done', 'switched' (a newer version went live meanwhile: the batch belongs to the old one) or
   * 'stopped' (stopping, or failed for good).
   */
  async function withinBudget(version: number, work: () => Promise<void>, retryBudget: RetryBudget = budget): Promise<'done' | 'switched' | 'stopped'> {
    for (;;) {
      if (stopping || failed()) return 'stopped';
      try {
        await work();
        retryBudget.reset();
        if (!failed() && !stopping) {
          current.state = 'running';
          current.lastError = null;
        }
        return 'done';
      } catch (error) {
        if (stopping || error instanceof IndexingStopped) return 'stopped';
        // A rebuild may have switched and dropped this version under the batch.
        if (version >= 0) {
          const live = await engine.liveVersion().catch(() => null);
          if (live !== null && live !== version) return 'switched';
        }
        if (!transient(error)) {
          fail(error);
          return 'stopped';
        }
        current.state = 'retrying';
        current.lastError = describeError(error);
        const pause = retryBudget.next();
        if (pause === null) {
          fail(new RetryBudgetSpent(error, retryBudget));
          return 'stopped';
        }
        logger.warn({ err: error, backoffMs: pause, failures: retryBudget.failures, version }, 'search engine or database away; writing the batch again after a pause');
        await pauses.sleep(pause);
      }
    }
  }

  /** The live version, building version 1 first when there is none. */
  async function liveVersion(): Promise<number | null> {
    let version: number | null = null;
    const outcome = await withinBudget(-1, async () => {
      await engine.info();
      version = await engine.liveVersion();
      if (version === null) {
        const built = await rebuildSearch({
          engine, knex, logger, bulkSize: deps.bulkSize,
          checkpointKeys: kafka ? () => kafkaReadModelCheckpoints(kafka.kafka, kafka.topic, knex) : () => directReadModelCheckpoints(knex),
        });
        version = built.version;
      }
    });
    return outcome === 'done' ? version : null;
  }

  /** Resolves when a newer live version is found (checked every few seconds), or never. */
  let onNewVersion: ((version: number) => void) | null = null;
  function watchVersions(): void {
    versionTimer = setInterval(() => {
      void engine.liveVersion().then((live) => {
        if (live !== null && current.version !== null && live !== current.version) onNewVersion?.(live);
      }, (err) => logger.debug({ err }, 'cannot read the live search version; checked again shortly'));
    }, VERSION_CHECK_MS);
    versionTimer.unref?.();
  }

  // ------------------------------------------------------------------------- direct transport
  async function runDirect(): Promise<void> {
    let switchTo: number | null = null;
    onNewVersion = (live) => {
      switchTo = live;
      void subscription?.close();
    };
    while (!stopping && !failed()) {
      const version: number = switchTo ?? current.version!;
      switchTo = null;
      let after: string | null = null;
      if ((await withinBudget(version, async () => {
        after = (await engine.readCheckpoints(version))[DIRECT_KEY] ?? '0';
      })) !== 'done') {
        if (stopping || failed()) return;
        continue;
      }
      // Stopped while the checkpoints were read: a subscription opened now would wait for an event
      // that may never come, and stop() (which closes only the subscription it finds) with it.
      if (stopping || failed()) return;
      if (current.version !== version) logger.info({ version, from: after }, 'following the live search version');
      current.version = version;
      current.position = after!;
      const sub = deps.store.subscribeToAll({ after: after!, shallow: SHALLOW_EVENTS });
      subscription = sub;
      try {
        for await (const batch of inBatches(sub, BATCH_SIZE)) {
          if (stopping || switchTo !== null) break;
          const last = batch[batch.length - 1].position;
          quiet.saw(last);
          const outcome = await withinBudget(version, async () => {
            await waitForReadModel(last, null);
            written(await indexEvents(writer, version, batch, last, { [DIRECT_KEY]: last }));
          });
          if (outcome === 'switched') {
            switchTo ??= (await engine.liveVersion().catch(() => null)) ?? version;
            break;
          }
          if (outcome !== 'done') return;
          advancePosition(BigInt(last));
        }
      } catch (error) {
        if (stopping || switchTo !== null) continue;
        if (!transient(error)) return fail(error);
        current.state = 'retrying';
        current.lastError = describeError(error);
        const pause = budget.next();
        if (pause === null) return fail(new RetryBudgetSpent(error, budget));
        logger.warn({ err: error, backoffMs: pause }, 'cannot read the event store; following it again after a pause');
        await pauses.sleep(pause);
      } finally {
        subscription = null;
        await sub.close();
      }
    }
  }

  // ------------------------------------------------------------------------- Kafka transport
  let consumer: ReturnType<Kafka['consumer']> | null = null;
  /** A start of the consumer after a crash or a failed start: its timer, then the start itself (stop() ends both before it disconnects). */
  let restartTimer: NodeJS.Timeout | null = null;
  let restarting: Promise<void> = Promise.resolve();
  async function runKafka(k: { kafka: Kafka; topic: string }): Promise<void> {
    /** The version followed and its checkpoints (last offset applied, per partition). */
    let followed = { version: current.version!, offsets: new Map<number, bigint>() };
    const assigned = new Set<number>();
    /** Per partition, the offset last sought to (a batch starting after it is accepted: nothing between). */
    const sought = new Map<number, bigint>();
    const budgets = new Map<number, RetryBudget>();
    const loadOffsets = async (version: number) => {
      const offsets = new Map<number, bigint>();
      for (const [key, value] of Object.entries(await engine.readCheckpoints(version))) {
        const m = /^search#(\d+)$/.exec(key);
        if (m) offsets.set(Number(m[1]), BigInt(value));
      }
      return { version, offsets };
    };
    if ((await withinBudget(followed.version, async () => {
      followed = await loadOffsets(followed.version);
    })) !== 'done') return;
    const c = k.kafka.consumer(consumerOptions(indexerGroupOf(k.topic)));
    consumer = c;
    const seekTo = (partition: number) => {
      const next = (followed.offsets.get(partition) ?? -1n) + 1n;
      sought.set(partition, next);
      c.seek({ topic: k.topic, partition, offset: next.toString() });
    };
    onNewVersion = (live) => {
      void (async () => {
        try {
          followed = await loadOffsets(live);
          current.version = live;
          logger.info({ version: live, offsets: Object.fromEntries(followed.offsets) }, 'following the live search version');
          for (const partition of assigned) seekTo(partition);
        } catch (err) {
          logger.warn({ err }, 'cannot read the new version\'s checkpoints; tried again shortly');
        }
      })();
    };
    c.on(c.events.GROUP_JOIN, (e) => {
      assigned.clear();
      for (const p of e.payload.memberAssignment[k.topic] ?? []) assigned.add(p);
    });
    c.on(c.events.CRASH, (e) => {
      if (stopping) return;
      if (!e.payload.restart && !transient(e.payload.error)) fail(e.payload.error);
      else if (!e.payload.restart) {
        current.state = 'retrying';
        current.lastError = describeError(e.payload.error);
        const pause = budget.next();
        if (pause === null) return fail(new RetryBudgetSpent(e.payload.error, budget));
        startLater(pause);
      }
    });
    const startLater = (pause: number) => {
      if (stopping || restartTimer) return;
      restartTimer = setTimeout(() => {
        restartTimer = null;
        if (!stopping) restarting = start();
      }, pause);
    };
    const start = async () => {
      if (stopping) return;
      try {
        await c.connect();
        if (stopping) return;
        await c.subscribe({ topics: [k.topic], fromBeginning: true });
        if (stopping) return;
        await c.run({
          autoCommit: true,
          eachBatchAutoResolve: false,
          partitionsConsumedConcurrently: 3,
          eachBatch: async ({ batch, heartbeat, isRunning, isStale, resolveOffset }) => {
            if (!isRunning() || isStale() || stopping || failed() || batch.messages.length === 0) return;
            const partition = batch.partition;
            const { version, offsets } = followed;
            const applied = offsets.get(partition);
            const first = BigInt(batch.messages[0].offset);
            if (applied !== undefined && first > applied + 1n && sought.get(partition) !== applied + 1n) {
              seekTo(partition); // fetched past this version's checkpoint (a rebuild, a reset group): from the checkpoint
              return;
            }
            const fresh = batch.messages.filter((m) => applied === undefined || BigInt(m.offset) > applied);
            if (fresh.length === 0) {
              resolveOffset(batch.messages[batch.messages.length - 1].offset);
              return;
            }
            const events = fresh.flatMap((m) => decode(m));
            const lastOffset = fresh[fresh.length - 1].offset;
            const lastPosition = events.reduce((max, e) => (BigInt(e.position) > max ? BigInt(e.position) : max), 0n);
            if (lastPosition > 0n) quiet.saw(lastPosition.toString());
            if (!budgets.has(partition)) budgets.set(partition, budgetOf(deps.retry, { firstMs: FIRST_BACKOFF_MS, maxMs: MAX_BACKOFF_MS }));
            const beat = setInterval(() => void heartbeat().catch(() => undefined), 3000);
            let outcome: 'done' | 'switched' | 'stopped';
            try {
              outcome = await withinBudget(version, async () => {
                if (lastPosition > 0n) await waitForReadModel(lastPosition.toString(), partition);
                written(await indexEvents(writer, version, events, `${partition}:${lastOffset}`, {
                  [kafkaCheckpointKey(DIRECT_KEY, partition)]: lastOffset,
                  ...(lastPosition > 0n && { [searchPositionKey(partition)]: lastPosition.toString() }),
                }));
              }, budgets.get(partition)!);
            } finally {
              clearInterval(beat);
            }
            if (outcome !== 'done' || followed.version !== version) return;
            offsets.set(partition, BigInt(lastOffset));
            advancePosition(lastPosition);
            resolveOffset(lastOffset);
            await heartbeat().catch(() => undefined);
          },
        });
      } catch (error) {
        if (stopping) return;
        if (!transient(error)) return fail(error);
        current.state = 'retrying';
        current.lastError = describeError(error);
        const pause = budget.next();
        if (pause === null) return fail(new RetryBudgetSpent(error, budget));
        startLater(pause);
      }
    };
    await start();
  }

  function decode(message: KafkaMessage): EventEnvelope[] {
    try {
      const event = decodeValue(message) as EventEnvelope;
      return event && typeof event.type === 'string' && typeof event.position === 'string' ? [event] : [];
    } catch {
      return []; // not an event: the projections park it (parked_events); nothing to index
    }
  }

  const running = (async () => {
    const startedWatcher = await withinBudget(-1, () => watcher.start());
    if (startedWatcher !== 'done') return;
    const version = await liveVersion();
    // Stopped while the live version was read or built: no timer, no following.
    if (version === null || stopping || failed()) return;
    current.version = version;
    current.state = 'running';
    current.lastError = null;
    watchVersions();
    if (kafka) await runKafka(kafka);
    else await runDirect();
  })().catch((error) => fail(error));

  return {
    status: () => ({ ...current }),
    async stop() {
      stopping = true;
      if (versionTimer) clearInterval(versionTimer);
      pauses.close();
      if (restartTimer) clearTimeout(restartTimer);
      await subscription?.close();
      // Ends a wait for the read model at once (the batch stops, its checkpoint unmoved).
      await watcher.stop();
      await running;
      await restarting;
      await consumer?.disconnect().catch(() => undefined);
      if (!failed()) current.state = 'stopped';
    },
  };
}
