'use strict';
/** What the test run's reporters and hooks know of a spec file: its header lines, and its time. */
const fs = require('node:fs');
const { EVENT_SUITE_BEGIN, EVENT_SUITE_END } = require('mocha').Runner.constants;

/** The text of a spec file's first comment line starting `<label>:` (`Slow`, `Exclusive`), or null. */
function headerLine(file, label) {
  try {
    const m = new RegExp(`^\\s*(?://|\\*)\\s*${label}:\\s*(.+)$`, 'm').exec(fs.readFileSync(file, 'utf8'));
    return m ? m[1].trim() : null;
  } catch {
    return null;
  }
}

/**
 * Times each file's top-level suites (their hooks included): `onEnd(suite, ms)` at the end of each.
 * `prepend`: ahead of the listeners already there (a buffering reporter's, which serialises the suite).
 */
function timeTopLevelSuites(runner, onEnd, { prepend = false } = {}) {
  const started = new Map();
  const on = (event, listener) => (prepend ? runner.prependListener(event, listener) : runner.on(event, listener));
  on(EVENT_SUITE_BEGIN, (suite) => {
    if (suite.file && suite.parent && suite.parent.root) started.set(suite, Date.now());
  });
  on(EVENT_SUITE_END, (suite) => {
    const at = started.get(suite);
    if (at === undefined) return;
    started.delete(suite);
    onEnd(suite, Date.now() - at);
  });
}

module.exports = { headerLine, timeTopLevelSuites };
