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
export function guard(name: string, measures: readonly GuardedMeasure[], sameParameters: Record<string, unknown>): Guard {
  const found = recordedResult(name);
  const recordedParameters = (found?.result.parameters ?? {}) as Record<string, unknown>;
  const differing = Object.keys(sameParameters).filter((k) => JSON.stringify(recordedParameters[k]) !== JSON.stringify(sameParameters[k]));
  if (found && differing.length > 0) {
    console.log(`  guard: not compared: the result recorded at ${found.commit?.slice(0, 7) ?? 'an unknown commit'} ran with other ${differing.join(', ')}`);
  }
  const recorded = differing.length === 0 ? found : null;
  const verdicts = compareMeasures(measures, recorded?.result ?? null);
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
