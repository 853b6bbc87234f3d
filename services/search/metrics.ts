import { processIdentity, type ProcessIdentity } from '../shared/processIdentity';

/**
 * The search API's own counters (the panel's "search metrics"), kept in memory by the process that
 * serves the requests: queries served (searches and facet counts), errors by code, and the latency
 * of served queries over a sliding window of per-minute buckets. Memory is fixed: `windowMinutes`
 * buckets of a latency histogram each, whatever the load.
 *
 * Latencies are counted in logarithmic bins, eight per doubling (each bin 9% wider than the one
 * below), from 1 ms to 2 minutes; a percentile answers its bin's upper bound (at most the window's
 * largest latency), so it is at most 9% above the exact value.
 */

export type QueryKind = 'search' | 'facets';

export const METRICS_WINDOW_MINUTES = 15;

const BINS_PER_DOUBLING = 8;
/** Bin i holds latencies in (2^((i-1)/8), 2^(i/8)] ms; bin 0 everything up to 1 ms; the last everything above. */
const BINS = Math.ceil(Math.log2(120_000) * BINS_PER_DOUBLING) + 1;
const MINUTE_MS = 60_000;

const binOf = (ms: number) => (ms <= 1 ? 0 : Math.min(BINS - 1, Math.ceil(Math.log2(ms) * BINS_PER_DOUBLING)));
const upperBoundOf = (bin: number) => 2 ** (bin / BINS_PER_DOUBLING);

export interface QueryCounts {
  queries: Record<QueryKind, number>;
  /** refused: answered 4xx (the caller's request); failed: 5xx (the engine away, lagging, a bug). byCode: the answers' codes. */
  errors: { refused: number; failed: number; byCode: Record<string, number> };
}

export interface LatencySummary {
  /** Served queries measured. */
  samples: number;
  p50: number | null;
  p95: number | null;
  max: number | null;
}

export interface SearchMetricsSnapshot {
  process: ProcessIdentity;
  /** When this process began counting (its start): `total` counts from then. */
  since: string;
  total: QueryCounts;
  /** The last `minutes` minutes (the current one included, so far). */
  window: QueryCounts & { minutes: number; from: string; latencyMs: LatencySummary };
}

interface MinuteBucket {
  /** Minutes since the epoch; -1: unused. */
  minute: number;
  counts: QueryCounts;
  latency: Uint32Array;
  samples: number;
  max: number;
}

const emptyCounts = (): QueryCounts => ({ queries: { search: 0, facets: 0 }, errors: { refused: 0, failed: 0, byCode: {} } });

function add(into: QueryCounts, from: QueryCounts): void {
  into.queries.search += from.queries.search;
  into.queries.facets += from.queries.facets;
  into.errors.refused += from.errors.refused;
  into.errors.failed += from.errors.failed;
  for (const [code, n] of Object.entries(from.errors.byCode)) into.errors.byCode[code] = (into.errors.byCode[code] ?? 0) + n;
}

export class SearchMetrics {
  private readonly clock: () => number;
  private readonly minutes: number;
  private readonly started: number;
  private readonly identity: ProcessIdentity;
  private readonly total = emptyCounts();
  private readonly buckets: MinuteBucket[];

  constructor(options: { clock?: () => number; windowMinutes?: number; process?: ProcessIdentity } = {}) {
    this.clock = options.clock ?? Date.now;
    this.minutes = options.windowMinutes ?? METRICS_WINDOW_MINUTES;
    this.started = this.clock();
    this.identity = options.process ?? processIdentity();
    this.buckets = Array.from({ length: this.minutes }, () => ({ minute: -1, counts: emptyCounts(), latency: new Uint32Array(BINS), samples: 0, max: 0 }));
  }

  /** A query answered (200) after `ms` milliseconds, read-your-writes wait included. */
  served(kind: QueryKind, ms: number): void {
    this.total.queries[kind]++;
    const bucket = this.bucket();
    bucket.counts.queries[kind]++;
    bucket.latency[binOf(ms)]++;
    bucket.samples++;
    if (ms > bucket.max) bucket.max = ms;
  }

  /** A query answered with an error (`status` 4xx or 5xx, its `code`). */
  failed(status: number, code: string): void {
    for (const counts of [this.total, this.bucket().counts]) {
      if (status >= 500) counts.errors.failed++;
      else counts.errors.refused++;
      counts.errors.byCode[code] = (counts.errors.byCode[code] ?? 0) + 1;
    }
  }

  snapshot(): SearchMetricsSnapshot {
    const now = this.clock();
    const current = Math.floor(now / MINUTE_MS);
    const window = emptyCounts();
    const histogram = new Uint32Array(BINS);
    let samples = 0;
    let max = 0;
    for (const b of this.buckets) {
      if (b.minute <= current - this.minutes || b.minute > current) continue;
      add(window, b.counts);
      for (let i = 0; i < BINS; i++) histogram[i] += b.latency[i];
      samples += b.samples;
      if (b.max > max) max = b.max;
    }
    const percentile = (p: number): number | null => {
      if (samples === 0) return null;
      const rank = Math.ceil(p * samples);
      let seen = 0;
      for (let i = 0; i < BINS; i++) {
        seen += histogram[i];
        if (seen >= rank) return round(Math.min(i === BINS - 1 ? max : upperBoundOf(i), max));
      }
      return round(max);
    };
    const total = emptyCounts();
    add(total, this.total);
    return {
      process: { ...this.identity },
      since: new Date(this.started).toISOString(),
      total,
      window: {
        minutes: this.minutes,
        from: new Date(Math.max(this.started, (current - this.minutes + 1) * MINUTE_MS)).toISOString(),
        ...window,
        latencyMs: { samples, p50: percentile(0.5), p95: percentile(0.95), max: samples === 0 ? null : round(max) },
      },
    };
  }

  /** The current minute's bucket, emptied first if it last held an older minute. */
  private bucket(): MinuteBucket {
    const minute = Math.floor(this.clock() / MINUTE_MS);
    const bucket = this.buckets[minute % this.minutes];
    if (bucket.minute !== minute) {
      bucket.minute = minute;
      bucket.counts = emptyCounts();
      bucket.latency.fill(0);
      bucket.samples = 0;
      bucket.max = 0;
    }
    return bucket;
  }
}

const round = (ms: number) => Math.round(ms * 10) / 10;
