'use strict';
/**
 * The reporter of a worker when mocha runs files in parallel (set by test/support/reporter.cjs): mocha's
 * own buffering reporter, with each file's time added to the end of its top-level suites, since the
 * events of a worker reach the main process only when its file is done (their times there mean nothing).
 */
const ParallelBuffered = require('mocha/lib/nodejs/reporters/parallel-buffered.cjs');
const { Suite } = require('mocha');
const { timeTopLevelSuites } = require('./specFiles.cjs');

class TimedParallelBuffered extends ParallelBuffered {
  constructor(runner, options) {
    super(runner, options);
    // Ahead of the buffering listeners: a file's time is on its suite before the suite is serialised.
    timeTopLevelSuites(runner, (suite, elapsedMs) => {
      const file = suite.file;
      suite.serialize = function serialize() {
        return { ...Suite.prototype.serialize.call(this), file, elapsedMs };
      };
    }, { prepend: true });
  }
}

module.exports = TimedParallelBuffered;
