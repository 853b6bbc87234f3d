import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/**
 * A benchmark guards its path against the result recorded for it: the measures it names are
 * compared with the same measures in `bench/results/<name>.json` as committed (HEAD), and one worse
 * by more than its tolerance is a regression: printed, kept in the result (`guard`), and
 * `npm run bench` exits 3 once the benchmarks ran. Measures are ratios against a baseline timed in
 * the same run (absolute times move by 2 × from one hour to the next here) or memory; each
 * tolerance is wider than the spread of runs of the same code (bench/README.md, "Guarding each
 * path"), so a 1.8 × slowdown is caught, and one within the machine's noise is not.
 */
export interface GuardedMeasure {
  name: string;
  value: number;
  /** Whether a higher value is better (a ratio, a rate) or a lower one (memory, a latency, a time against another). */
  better: 'higher' | 'lower';
  /** The share by which it may be worse than recorded before it counts as a regression (0.25: 25 %). */
  tolerance: number;
}

export interface GuardVerdict {
  name: string;
  value: number;
  recorded: number | null;
  /** value ÷ recorded − 1 (null when nothing was recorded). */
  change: number | null;
  tolerance: number;
  regressed: boolean;
}

export interface Guard {
  /** The commit of the recorded result compared with, or null when there was none. */
  against: string | null;
  verdicts: GuardVerdict[];
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Result = Record<string, any>;

const regressions: string[] = [];

/** Every regression found by the benchmarks run so far in this process. */
export const regressionsFound = (): readonly string[] => regressions;

/**
 * Compares measures with a recorded result: its `guarded` measures, or (results recorded before
 * guards) the `goals` entry of the same name.
 */
export function compareMeasures(measures: readonly GuardedMeasure[], recorded: { guarded?: { name: string; value: number }[]; goals?: Record<string, unknown> } | null): GuardVerdict[] {
  return measures.map((m) => {
    const before = recorded?.guarded?.find((g) => g.name === m.name)?.value ?? recorded?.goals?.[m.name];
    if (typeof before !== 'number' || !Number.isFinite(before) || before <= 0) {
      return { name: m.name, value: m.value, recorded: null, change: null, tolerance: m.tolerance, regressed: false };
    }
    const change = m.value / before - 1;
    const regressed = m.better === 'higher' ? change < -m.tolerance : change > m.tolerance;
    return { name: m.name, value: m.value, recorded: before, change: Math.round(change * 1000) / 1000, tolerance: m.tolerance, regressed };
  });
}

/** The result recorded for a benchmark at HEAD (the working tree's file when git cannot say), or null. */
function recordedResult(name: string): { commit: string | null; result: Record<string, unknown> } | null {
  const root = path.join(__dirname, '..');
  const relative = `bench/results/${name}.json`;
  let text: string;
  try {
    text = execFileSync('git', ['show', `HEAD:${relative}`], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
  } catch {
    try {
      text = fs.readFileSync(path.join(root, relative), 'utf8');
    } catch {
      return null;
    }
  }
  try {
    const result = JSON.parse(text) as Record<string, unknown>;
    const code = result.code as { commit?: string } | undefined;
    return { commit: code?.commit ?? null, result };
  } catch {
    return null;
  }
}

/**
 * Guards a benchmark's measures (see the header), printing each and remembering regressions. Only a
 * result recorded with the same `parameters` (those named in `sameParameters`: sizes, kill points)
 * is compared with.
 */
export function guard(name: string, measures: readonly GuardedMeasure[], sameParameters: Record<string, unknown>, extract?: (result: Result) => GuardedMeasure[]): Guard {
  const found = recordedResult(name);
  const recordedParameters = (found?.result.parameters ?? {}) as Record<string, unknown>;
  const differing = Object.keys(sameParameters).filter((k) => JSON.stringify(recordedParameters[k]) !== JSON.stringify(sameParameters[k]));
  if (found && differing.length > 0) {
    console.log(`  guard: not compared: the result recorded at ${found.commit?.slice(0, 7) ?? 'an unknown commit'} ran with other ${differing.join(', ')}`);
  }
  const recorded = differing.length === 0 ? found : null;
  // A result recorded before guards: its measures read from it the way they are read from this run's.
  const compareWith = recorded && !recorded.result.guarded && extract ? { guarded: extract(recorded.result) } : recorded?.result ?? null;
  const verdicts = compareMeasures(measures, compareWith);
  const against = recorded?.commit ?? null;
  for (const v of verdicts) {
    if (v.recorded === null) {
      console.log(`  guard: ${v.name} ${v.value}: nothing recorded to compare with`);
      continue;
    }
    const pct = `${v.change! >= 0 ? '+' : ''}${(v.change! * 100).toFixed(1)} %`;
    const verdict = v.regressed ? `REGRESSION (worse by more than ${v.tolerance * 100} %)` : 'within the noise';
    console.log(`  guard: ${v.name} ${v.value} against ${v.recorded} recorded at ${against?.slice(0, 7) ?? 'an unknown commit'} (${pct}): ${verdict}`);
    if (v.regressed) regressions.push(`${name}: ${v.name} ${v.value} against ${v.recorded} (${pct})`);
  }
  return { against, verdicts };
}

const measure = (name: string, value: unknown, better: GuardedMeasure['better'], tolerance: number): GuardedMeasure[] =>
  (typeof value === 'number' && Number.isFinite(value) ? [{ name, value, better, tolerance }] : []);

/**
 * What each benchmark guards, read from the result it writes, and the parameters a recorded result
 * must share to be compared with. Ratios against a baseline of the same run wherever the benchmark
 * has one; absolute figures (the integrity's events/s, the history's and the Kafka path's
 * latencies) with a tolerance of the 2 × the machine moves them by.
 */
export const GUARDED: Record<string, { measures(result: Result): GuardedMeasure[]; parameters: readonly string[] }> = {
  append: {
    measures: (r) => [...measure('ratio', r.ratio, 'higher', 0.25), ...measure('chainRatio', r.chainRatio, 'higher', 0.15)],
    parameters: ['writers', 'measureSeconds', 'rounds'],
  },
  rebuild: {
    measures: (r) => [
      ...measure('baselineRatio', r.rebuild?.baseline?.ratio, 'higher', 0.25),
      ...(r.asOf ?? []).flatMap((q: Result, i: number) => measure(`asOfP50Ratio[${i}]`, q.ratio, 'lower', 0.5)),
    ],
    parameters: ['events'],
  },
  transport: {
    measures: (r) => [...measure('throughputRatio', r.ratios?.throughput, 'higher', 0.25), ...measure('kafkaLagP99Ms', r.median?.kafka?.lagMs?.p99, 'lower', 1)],
    parameters: ['events', 'writers', 'rounds', 'lagSeconds', 'partitions'],
  },
  query: {
    measures: (r) => [
      ...(Array.isArray(r.goals) ? r.goals : []).flatMap((q: Result) => [
        ...measure(`${q.query}.httpP50OverSqlP50`, q.httpP50OverSqlP50, 'lower', 0.35),
        ...measure(`${q.query}.prismaP50OverEngineP50`, q.prismaP50OverEngineP50, 'higher', 0.35),
      ]),
      ...measure('underLoad.throughputRatio', r.underLoad?.goals?.throughputRatio, 'higher', 0.25),
      ...measure('underLoad.p99Ratio', r.underLoad?.goals?.p99Ratio, 'lower', 0.5),
    ],
    parameters: ['cases', 'iterations', 'loadClients'],
  },
  import: {
    measures: (r) => [
      ...measure('rateRatio', r.goals?.rateRatio, 'higher', 0.25),
      ...measure('allWrittenRatio', r.goals?.allWrittenRatio, 'higher', 0.3),
      ...measure('peakRssMB', r.goals?.peakRssMB, 'lower', 0.2),
    ],
    parameters: ['cases', 'suites'],
  },
  memory: {
    // Small numbers (6 MB above idle): a fifth of the goal (20 MB) is the least that counts.
    measures: (r) => [
      ...measure('unpagedAboveIdleMB', Math.max(r.goals?.unpagedAboveIdleMB, 20), 'lower', 0.5),
      ...measure('pagedSmallHeapAboveIdleMB', Math.max(r.goals?.pagedSmallHeapAboveIdleMB, 20), 'lower', 0.5),
    ],
    parameters: ['results', 'maxRows'],
  },
  search: {
    measures: (r) => Object.entries((r.engines ?? {}) as Record<string, Result>).flatMap(([engine, e]) => [
      ...measure(`${engine}.fromLogRatio`, e.indexing?.ratio, 'higher', 0.25),
      ...(e.queries ?? []).flatMap((q: Result) => measure(`${engine}.${q.name}.httpP50OverEngineP50`, q.httpP50OverEngineP50, 'lower', 0.5)),
    ]),
    parameters: ['cases', 'bulkSize', 'writesAtOnce'],
  },
  migration: {
    measures: (r) => [
      ...measure('rateRatio', r.goals?.rateRatio, 'higher', 0.25),
      ...measure('peakRssMB', r.goals?.peakRssMB, 'lower', 0.2),
      ...measure('rollbackTimesImport', r.goals?.rollbackTimesImport, 'lower', 0.5),
    ],
    parameters: ['cases', 'runs', 'results', 'killAt', 'rollback'],
  },
  history: {
    measures: (r) => measure('timelineP50Ms', r.timeline?.p50Ms, 'lower', 1),
    parameters: ['events', 'iterations', 'page'],
  },
  integrity: {
    measures: (r) => measure('verifyEventsPerSecond', r.verification?.medianEventsPerSecond, 'higher', 0.5),
    parameters: ['events', 'rounds'],
  },
  cli: {
    measures: (r) => measure('startupRatio', r.startup?.ratio, 'lower', 0.3),
    parameters: [],
  },
};

/**
 * The result as written: with the measures its benchmark guards (GUARDED) compared with the
 * recorded result (`guarded`, `guard`), when its benchmark guards any.
 */
export function withGuard(name: string, result: Result): Result {
  const guarded = GUARDED[name];
  if (!guarded) return result;
  const measures = guarded.measures(result);
  const parameters = Object.fromEntries(guarded.parameters.map((k) => [k, result.parameters?.[k]]));
  return { ...result, guarded: measures, guard: guard(name, measures, parameters, guarded.measures) };
}
