/**
 * `npm run bench [-- append|rebuild|transport|query|import|cli|memory|search|migration|history|integrity] [--events=N]`: runs the benchmarks (all by default), each on
 * its own throw-away database (TEST_DATABASE_URL, default postgres://postgres@127.0.0.1:5432/postgres),
 * writes bench/results/<name>.json and prints a summary. Exits 1 when a goal is missed.
 *
 * BENCH_REBUILD_EVENTS (or --events=N) scales the rebuild log, default 1,000,000.
 * BENCH_APPEND_SECONDS (or --seconds=N) sets the measured window of each append round, default 10.
 * --page-size=N overrides rebuildProjection's page size.
 * transport needs a Kafka broker (KAFKA_BROKERS, default 127.0.0.1:9092; `bash infra/kafka/up.sh`);
 * BENCH_TRANSPORT_EVENTS (or --transport-events=N) sets the events of each throughput round, default
 * 20,000; BENCH_TRANSPORT_LAG_SECONDS (or --lag-seconds=N) the measured window of each lag round,
 * default 15; --transport-rounds=N the rounds per transport, default 3; --partitions=N the Kafka topic's
 * partitions, default the service's KAFKA_PARTITIONS default (1); --writers=N the concurrent
 * writers of a throughput round, default 32.
 * query: BENCH_QUERY_CASES (or --cases=N) scales the repository (default 100,000 cases);
 * --iterations=N sets the measured calls per query and way, default 300; under load, --load-clients=N
 * readers (default 16) and --load-seconds=N per round (default 15, four rounds) while 2 CI uploads run.
 * memory: BENCH_MEMORY_RESULTS (or --memory-results=N) sets the results read, default 100,000;
 * --max-rows=N the server's MODEL_MAX_ROWS, default its default.
 * search: BENCH_SEARCH_CASES (or --search-cases=N) scales the log of repository cases (default
 * 100,000); --search-iterations=N sets the measured calls per query and way, default 200. OpenSearch
 * is measured when one answers at SEARCH_URL (default http://127.0.0.1:9200), Elasticsearch when
 * ELASTICSEARCH_URL is set.
 * migration: BENCH_MIGRATION_CASES / _RUNS / _RESULTS (or --migration-cases=N, --migration-runs=N,
 * --migration-results=N) size the generated export (default 50,000 cases, 2,000 runs, 500,000
 * results); --kill-at=N SIGKILLs the server at N percent of the import (default 30; 0: never);
 * --migration-rollback=0 leaves out the rollback of the import (default 1: it is rolled back and
 * timed against the import, goal ≤ 2 × its time).
 * history: BENCH_HISTORY_EVENTS (or --history-events=N) sets the events of the entity whose
 * timeline is read, default 10,000.
 * integrity: BENCH_INTEGRITY_EVENTS (or --integrity-events=N) sets the log verified, default
 * 1,000,000; --bundle-results=N the results of the run bundled, default 10,000.
 */
import { APPEND_DEFAULTS, runAppend } from './append';
import { regressionsFound } from './guard';
import { runCliBench } from './cli';
import { HISTORY_DEFAULTS, runHistory } from './history';
import { INTEGRITY_DEFAULTS, runIntegrity } from './integrity';
import { IMPORT_DEFAULTS, runImport } from './import';
import { MEMORY_DEFAULTS, runMemory } from './memory';
import { MIGRATION_DEFAULTS, runMigration } from './migration';
import { QUERY_DEFAULTS, runQuery } from './query';
import { REBUILD_DEFAULTS, runRebuild } from './rebuild';
import { runSearch, SEARCH_DEFAULTS } from './search';
import { runTransport, TRANSPORT_DEFAULTS } from './transport';

const BENCHMARKS = ['append', 'rebuild', 'transport', 'query', 'import', 'cli', 'memory', 'search', 'migration', 'history', 'integrity'] as const;
type Benchmark = (typeof BENCHMARKS)[number];

function positiveInt(name: string, value: string | undefined, fallback: number): number {
  if (value === undefined || value === '') return fallback;
  const n = Number(value.replace(/_/g, ''));
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive integer, got "${value}"`);
  return n;
}

function parseArgs(argv: string[], env: NodeJS.ProcessEnv) {
  const flags = new Map<string, string>();
  const names: Benchmark[] = [];
  for (const arg of argv) {
    const flag = /^--([a-z-]+)=(.*)$/.exec(arg);
    if (flag) flags.set(flag[1], flag[2]);
    else if ((BENCHMARKS as readonly string[]).includes(arg)) names.push(arg as Benchmark);
    else throw new Error(`unknown argument "${arg}"; expected ${BENCHMARKS.join(' | ')}, --events=N, --seconds=N, --page-size=N, --transport-events=N, --lag-seconds=N, --transport-rounds=N, --writers=N, --partitions=N, --cases=N, --iterations=N, --import-cases=N, --memory-results=N, --max-rows=N, --search-cases=N, --search-iterations=N, --migration-cases=N, --migration-runs=N, --migration-results=N, --kill-at=N, --migration-rollback=0|1, --history-events=N, --integrity-events=N, --bundle-results=N`);
  }
  return {
    benchmarks: names.length > 0 ? names : [...BENCHMARKS],
    append: { ...APPEND_DEFAULTS, measureSeconds: positiveInt('--seconds', flags.get('seconds') ?? env.BENCH_APPEND_SECONDS, APPEND_DEFAULTS.measureSeconds) },
    rebuild: {
      ...REBUILD_DEFAULTS,
      events: positiveInt('--events', flags.get('events') ?? env.BENCH_REBUILD_EVENTS, REBUILD_DEFAULTS.events),
      pageSize: flags.has('page-size') ? positiveInt('--page-size', flags.get('page-size'), 0) : undefined,
    },
    transport: {
      ...TRANSPORT_DEFAULTS,
      events: positiveInt('--transport-events', flags.get('transport-events') ?? env.BENCH_TRANSPORT_EVENTS, TRANSPORT_DEFAULTS.events),
      lagSeconds: positiveInt('--lag-seconds', flags.get('lag-seconds') ?? env.BENCH_TRANSPORT_LAG_SECONDS, TRANSPORT_DEFAULTS.lagSeconds),
      rounds: positiveInt('--transport-rounds', flags.get('transport-rounds'), TRANSPORT_DEFAULTS.rounds),
      writers: positiveInt('--writers', flags.get('writers'), TRANSPORT_DEFAULTS.writers),
      partitions: positiveInt('--partitions', flags.get('partitions'), TRANSPORT_DEFAULTS.partitions),
      brokers: env.KAFKA_BROKERS ? env.KAFKA_BROKERS.split(',').map((b) => b.trim()).filter(Boolean) : TRANSPORT_DEFAULTS.brokers,
    },
    query: {
      ...QUERY_DEFAULTS,
      cases: positiveInt('--cases', flags.get('cases') ?? env.BENCH_QUERY_CASES, QUERY_DEFAULTS.cases),
      iterations: positiveInt('--iterations', flags.get('iterations'), QUERY_DEFAULTS.iterations),
      loadClients: positiveInt('--load-clients', flags.get('load-clients'), QUERY_DEFAULTS.loadClients),
      loadSeconds: positiveInt('--load-seconds', flags.get('load-seconds'), QUERY_DEFAULTS.loadSeconds),
    },
    import: {
      ...IMPORT_DEFAULTS,
      cases: positiveInt('--import-cases', flags.get('import-cases') ?? env.BENCH_IMPORT_CASES, IMPORT_DEFAULTS.cases),
    },
    memory: {
      ...MEMORY_DEFAULTS,
      results: positiveInt('--memory-results', flags.get('memory-results') ?? env.BENCH_MEMORY_RESULTS, MEMORY_DEFAULTS.results),
      maxRows: positiveInt('--max-rows', flags.get('max-rows'), MEMORY_DEFAULTS.maxRows),
    },
    migration: {
      cases: positiveInt('--migration-cases', flags.get('migration-cases') ?? env.BENCH_MIGRATION_CASES, MIGRATION_DEFAULTS.cases),
      runs: positiveInt('--migration-runs', flags.get('migration-runs') ?? env.BENCH_MIGRATION_RUNS, MIGRATION_DEFAULTS.runs),
      results: positiveInt('--migration-results', flags.get('migration-results') ?? env.BENCH_MIGRATION_RESULTS, MIGRATION_DEFAULTS.results),
      killAt: flags.get('kill-at') === '0' ? 0 : positiveInt('--kill-at', flags.get('kill-at'), MIGRATION_DEFAULTS.killAt),
      rollback: (flags.get('migration-rollback') ?? env.BENCH_MIGRATION_ROLLBACK ?? '1') === '1',
    },
    history: {
      ...HISTORY_DEFAULTS,
      events: positiveInt('--history-events', flags.get('history-events') ?? env.BENCH_HISTORY_EVENTS, HISTORY_DEFAULTS.events),
    },
    integrity: {
      ...INTEGRITY_DEFAULTS,
      events: positiveInt('--integrity-events', flags.get('integrity-events') ?? env.BENCH_INTEGRITY_EVENTS, INTEGRITY_DEFAULTS.events),
      results: positiveInt('--bundle-results', flags.get('bundle-results'), INTEGRITY_DEFAULTS.results),
    },
    search: {
      ...SEARCH_DEFAULTS,
      cases: positiveInt('--search-cases', flags.get('search-cases') ?? env.BENCH_SEARCH_CASES, SEARCH_DEFAULTS.cases),
      iterations: positiveInt('--search-iterations', flags.get('search-iterations'), SEARCH_DEFAULTS.iterations),
    },
  };
}

async function main(): Promise<void> {
  const args = parseArgs(process.argv.slice(2), process.env);
  const passed: Record<string, boolean> = {};
  for (const name of args.benchmarks) {
    if (name === 'append') passed[name] = await runAppend(args.append);
    else if (name === 'rebuild') passed[name] = await runRebuild(args.rebuild);
    else if (name === 'query') passed[name] = await runQuery(args.query);
    else if (name === 'import') passed[name] = await runImport(args.import);
    else if (name === 'cli') passed[name] = await runCliBench();
    else if (name === 'memory') passed[name] = await runMemory(args.memory);
    else if (name === 'search') passed[name] = await runSearch(args.search);
    else if (name === 'migration') passed[name] = await runMigration(args.migration);
    else if (name === 'history') passed[name] = await runHistory(args.history);
    else if (name === 'integrity') passed[name] = await runIntegrity(args.integrity);
    else passed[name] = await runTransport(args.transport);
  }
  const missed = Object.keys(passed).filter((n) => !passed[n]);
  console.log(missed.length === 0 ? 'bench: every goal met' : `bench: goal missed by ${missed.join(', ')}`);
  if (missed.length > 0) process.exitCode = 1;
  const regressions = regressionsFound();
  if (regressions.length > 0) {
    console.log(`bench: REGRESSION against the recorded results (bench/guard.ts):\n${regressions.map((r) => `  ${r}`).join('\n')}`);
    process.exitCode = 3;
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(2);
});
