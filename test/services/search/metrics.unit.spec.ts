import { expect } from 'chai';
import { SearchMetrics } from '../../../services/search/metrics';

describe('SearchMetrics (the search API\'s counters for the administration panel)', () => {
  const T0 = Date.UTC(2026, 5, 1, 12, 0, 0);
  const recorder = (windowMinutes?: number) => {
    const clock = { now: T0 };
    const metrics = new SearchMetrics({ clock: () => clock.now, windowMinutes, process: { id: 'host/1', host: 'host', pid: 1 } });
    return { metrics, clock };
  };

  it('counts searches and facet counts served, and errors by class and code', () => {
    const { metrics } = recorder();
    metrics.served('search', 10);
    metrics.served('search', 20);
    metrics.served('facets', 5);
    metrics.failed(400, 'invalid-search-query');
    metrics.failed(400, 'invalid-search-query');
    metrics.failed(503, 'search-unavailable');
    metrics.failed(500, 'internal-error');
    const s = metrics.snapshot();
    for (const counts of [s.total, s.window]) {
      expect(counts.queries).to.deep.equal({ search: 2, facets: 1 });
      expect(counts.errors).to.deep.equal({ refused: 2, failed: 2, byCode: { 'invalid-search-query': 2, 'search-unavailable': 1, 'internal-error': 1 } });
    }
    expect(s.process).to.deep.equal({ id: 'host/1', host: 'host', pid: 1 });
    expect(s.since).to.equal(new Date(T0).toISOString());
    expect(s.window.minutes).to.equal(15);
  });

  it('p50 and p95 of served queries: within 9% above the exact value, never above the largest', () => {
    const { metrics } = recorder();
    // 1..1000 ms, shuffled: exact p50 = 500, p95 = 950.
    const values = Array.from({ length: 1000 }, (_, i) => i + 1).sort((a, b) => ((a * 7919) % 1000) - ((b * 7919) % 1000));
    for (const ms of values) metrics.served('search', ms);
    const { latencyMs } = metrics.snapshot().window;
    expect(latencyMs.samples).to.equal(1000);
    expect(latencyMs.max).to.equal(1000);
    expect(latencyMs.p50!).to.be.within(500, 500 * 1.0906);
    expect(latencyMs.p95!).to.be.within(950, 1000);
  });

  it('percentiles follow the distribution: a slow tail moves p95, not p50', () => {
    const { metrics } = recorder();
    for (let i = 0; i < 90; i++) metrics.served('search', 4);
    for (let i = 0; i < 10; i++) metrics.served('facets', 2000);
    const { latencyMs } = metrics.snapshot().window;
    expect(latencyMs.p50!).to.be.within(4, 4 * 1.0906);
    expect(latencyMs.p95!).to.be.within(2000, 2000 * 1.0906);
    expect(latencyMs.max).to.equal(2000);
  });

  it('sub-millisecond and very slow answers land in the end bins (bounded by the largest seen)', () => {
    const { metrics } = recorder();
    metrics.served('search', 0.2);
    expect(metrics.snapshot().window.latencyMs).to.deep.equal({ samples: 1, p50: 0.2, p95: 0.2, max: 0.2 });
    metrics.served('search', 500_000);
    metrics.served('search', 600_000);
    expect(metrics.snapshot().window.latencyMs.p95).to.equal(600_000);
  });

  it('no sample: null percentiles', () => {
    const { metrics } = recorder();
    metrics.failed(503, 'search-unavailable');
    expect(metrics.snapshot().window.latencyMs).to.deep.equal({ samples: 0, p50: null, p95: null, max: null });
  });

  it('the window forgets minutes older than its length; the totals keep them', () => {
    const { metrics, clock } = recorder(15);
    metrics.served('search', 1000);
    metrics.failed(400, 'invalid-argument');
    clock.now += 14 * 60_000; // the 15th minute: still in
    metrics.served('search', 10);
    let s = metrics.snapshot();
    expect(s.window.queries.search).to.equal(2);
    expect(s.window.latencyMs.max).to.equal(1000);
    clock.now += 60_000; // the first minute left the window
    s = metrics.snapshot();
    expect(s.window.queries.search).to.equal(1);
    expect(s.window.errors).to.deep.equal({ refused: 0, failed: 0, byCode: {} });
    expect(s.window.latencyMs).to.deep.equal({ samples: 1, p50: 10, p95: 10, max: 10 });
    expect(s.window.from).to.equal(new Date(T0 + 60_000).toISOString());
    expect(s.total.queries.search).to.equal(2);
    expect(s.total.errors.byCode).to.deep.equal({ 'invalid-argument': 1 });
    clock.now += 60 * 60_000; // an hour of silence: an empty window
    s = metrics.snapshot();
    expect(s.window.queries).to.deep.equal({ search: 0, facets: 0 });
    expect(s.window.latencyMs.samples).to.equal(0);
  });

  it('a bucket reused for a later minute starts empty (the ring wraps around)', () => {
    const { metrics, clock } = recorder(3);
    metrics.served('search', 100);
    clock.now += 3 * 60_000; // same slot of the ring, three minutes later
    metrics.served('search', 1);
    const s = metrics.snapshot();
    expect(s.window.queries.search).to.equal(1);
    expect(s.window.latencyMs.max).to.equal(1);
  });

  it('memory stays bounded: a day of load keeps one bucket per minute of the window, each of a fixed size', () => {
    const { metrics, clock } = recorder(15);
    const internals = metrics as unknown as { buckets: { latency: Uint32Array }[] };
    const sizes = () => internals.buckets.map((b) => b.latency.length);
    const before = sizes();
    for (let minute = 0; minute < 24 * 60; minute++) {
      for (let i = 0; i < 50; i++) metrics.served(i % 2 ? 'search' : 'facets', (i * 37) % 3000);
      metrics.failed(503, 'search-unavailable');
      clock.now += 60_000;
    }
    expect(sizes()).to.deep.equal(before);
    expect(before).to.have.length(15);
    const s = metrics.snapshot();
    expect(s.total.queries.search + s.total.queries.facets).to.equal(24 * 60 * 50);
    expect(s.window.latencyMs.samples).to.equal(14 * 50); // the current minute has none yet
  });
});
