'use strict';
const Mocha = require('mocha');

const { EVENT_SUITE_END, EVENT_RUN_END } = Mocha.Runner.constants;
const fs = require('node:fs');
const path = require('node:path');
const { headerLine, timeTopLevelSuites } = require('./specFiles.cjs');

const SLOWEST = 20;
/** A file slower than this says why in its header: a comment line starting `Slow:`. */
const SLOW_FILE_SECONDS = 30;

/**
 * Mocha's spec reporter, and at the end of the run the slowest spec files with their time (the
 * top-level suites of each file added up, their hooks included) and why each is slow: where a
 * run's time goes. A file slower than SLOW_FILE_SECONDS without a `Slow:` line in its header is
 * named as such.
 */
class SpecWithSlowestFiles extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const byFile = new Map();
    const add = (file, ms) => byFile.set(file, (byFile.get(file) ?? 0) + ms);
    // Files run in parallel: each worker times its files (workerReporter.cjs) and the time arrives
    // on the end of each top-level suite; run one after the other, the times are taken here.
    const parallel = typeof runner.isParallelMode === 'function' && runner.isParallelMode();
    if (parallel) {
      runner.workerReporter(require.resolve('./workerReporter.cjs'));
      runner.on(EVENT_SUITE_END, (suite) => {
        if (suite.file && typeof suite.elapsedMs === 'number') add(suite.file, suite.elapsedMs);
      });
    } else {
      timeTopLevelSuites(runner, (suite, ms) => add(suite.file, ms));
    }
    runner.once(EVENT_RUN_END, () => {
      if (byFile.size < 2) return;
      // TEST_TIMES=<file>: every file's time as JSON too (seconds), to see where a whole run goes.
      if (process.env.TEST_TIMES) {
        const all = Object.fromEntries([...byFile].sort((a, b) => b[1] - a[1]).map(([f, ms]) => [path.relative(process.cwd(), f), ms / 1000]));
        fs.writeFileSync(process.env.TEST_TIMES, JSON.stringify(all, null, 1));
      }
      const total = [...byFile.values()].reduce((a, b) => a + b, 0);
      const slowest = [...byFile].sort((a, b) => b[1] - a[1]).slice(0, SLOWEST);
      Mocha.reporters.Base.consoleLog(`\n  The ${slowest.length} slowest of ${byFile.size} files (${(total / 1000).toFixed(0)} s in all):`);
      for (const [file, ms] of slowest) {
        const reason = headerLine(file, 'Slow');
        const why = reason ?? (ms / 1000 > SLOW_FILE_SECONDS ? `(over ${SLOW_FILE_SECONDS} s and says not why: add a "Slow:" line to its header)` : '');
        Mocha.reporters.Base.consoleLog(`  ${(ms / 1000).toFixed(1).padStart(8)} s  ${path.relative(process.cwd(), file)}${why ? `: ${why}` : ''}`);
      }
    });
  }
}

module.exports = SpecWithSlowestFiles;
