'use strict';
const Mocha = require('mocha');

const { EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_RUN_END } = Mocha.Runner.constants;
const SLOWEST = 20;

/**
 * Mocha's spec reporter, and at the end of the run the slowest spec files with their time (the
 * top-level suites of each file added up, their hooks included): where a run's time goes.
 */
class SpecWithSlowestFiles extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    const started = new Map();
    const byFile = new Map();
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      if (suite.file && suite.parent && suite.parent.root) started.set(suite, Date.now());
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      const at = started.get(suite);
      if (at === undefined) return;
      started.delete(suite);
      byFile.set(suite.file, (byFile.get(suite.file) ?? 0) + Date.now() - at);
    });
    runner.once(EVENT_RUN_END, () => {
      if (byFile.size < 2) return;
      const total = [...byFile.values()].reduce((a, b) => a + b, 0);
      const slowest = [...byFile].sort((a, b) => b[1] - a[1]).slice(0, SLOWEST);
      Mocha.reporters.Base.consoleLog(`\n  The ${slowest.length} slowest of ${byFile.size} files (${(total / 1000).toFixed(0)} s in all):`);
      for (const [file, ms] of slowest) {
        Mocha.reporters.Base.consoleLog(`  ${(ms / 1000).toFixed(1).padStart(8)} s  ${require('node:path').relative(process.cwd(), file)}`);
      }
    });
  }
}

module.exports = SpecWithSlowestFiles;
