import { expect } from 'chai';
import { caseDailyStatistics, caseStatistics, crossRunFlips, type Execution, RECENT_EXECUTIONS } from '../../projections/statistics';

/** The definitions of docs/analytics.md on hand-made executions: what is a flip, what is not, windows and percentiles. */
describe('statistics: flips, windows and percentiles (docs/analytics.md)', () => {
  let next = 0;
  const run = (outcome: Execution['outcome'], minutes: number, more: Partial<Execution> = {}): Execution => ({
    runCaseId: ++next, caseId: 1, projectId: 7, configId: null, branch: 'main', statusId: outcome === 'pass' ? 1 : outcome === 'fail' ? 2 : 3, outcome,
    executedAt: new Date(Date.UTC(2026, 10, 1) + minutes * 60_000), durationMs: 100, retryFlip: false, caseVersion: 1, ...more,
  });

  it('a flip is a pass after a fail or a fail after a pass, skipping other outcomes, in time order whatever the given order', () => {
    const [a, b, c, d, e] = [run('pass', 0), run('other', 1), run('fail', 2), run('fail', 3), run('pass', 4)];
    expect([...crossRunFlips([e, d, c, b, a])].sort()).to.deep.equal([c.runCaseId, e.runCaseId].sort());
  });

  it('is no flip when the case changed in between, or on another branch or configuration', () => {
    const changed = [run('pass', 0), run('fail', 1, { caseVersion: 2 })];
    expect(crossRunFlips(changed).size).to.equal(0);
    const apart = [run('pass', 0), run('fail', 1, { branch: 'feature' }), run('fail', 2, { configId: 5 })];
    expect(crossRunFlips(apart).size).to.equal(0);
  });

  it('scores flakiness over the last executions only, retry flips counted, the p95 by nearest rank', () => {
    const old = [run('pass', 0), run('fail', 1), run('pass', 2)];
    const recent = Array.from({ length: RECENT_EXECUTIONS }, (_, i) => run('pass', 10 + i, { durationMs: i + 1, retryFlip: i === 0 }));
    const all = [...old, ...recent];
    const [row] = caseStatistics(all, crossRunFlips(all));
    expect(row).to.include({ executions: 23, passed: 22, failed: 1, recent_executions: RECENT_EXECUTIONS, flips: 1, flakiness: 0.05, p95_duration_ms: 100 });
    const [onlyRecent] = caseStatistics(recent, crossRunFlips(recent));
    expect(onlyRecent.p95_duration_ms).to.equal(19);
    expect(onlyRecent.mean_duration_ms).to.equal(10.5);
  });

  it('counts a day per case, UTC day, configuration and branch', () => {
    const rows = caseDailyStatistics([run('pass', 0), run('fail', 60 * 23 + 59), run('pass', 60 * 24), run('fail', 1, { branch: 'feature' })], new Set());
    expect(rows.map((r) => [r.day, r.branch, r.executions, r.passed, r.failed])).to.deep.equal([
      ['2026-11-01T00:00:00.000Z', 'main', 2, 1, 1],
      ['2026-11-02T00:00:00.000Z', 'main', 1, 1, 0],
      ['2026-11-01T00:00:00.000Z', 'feature', 1, 0, 1],
    ]);
  });
});
