'use strict';
/**
 * Mocha's settings. `npx mocha` (and `npm test`) runs every spec file under test/; naming files or
 * folders runs only those: `npx mocha test/model/query.int.spec.ts`. (Mocha adds the files it is
 * given to a configured `spec` instead of replacing it, so the whole suite is configured only when
 * none is named.)
 */
const fs = require('node:fs');
const path = require('node:path');
const { headerLine } = require('./test/support/specFiles.cjs');

const named = process.argv.slice(2).some((arg) => !arg.startsWith('-') && /(^|\/)test\/|\.[cm]?[jt]s$/.test(arg));

/**
 * The whole suite runs its files side by side in TEST_JOBS worker processes (default 3 on the 2-core
 * machine it is measured on: while one file waits, for a lease to end or a process to start, the
 * other two keep both cores busy; bench/README.md); a file whose header says `Exclusive:` runs alone
 * (test/support/exclusiveFiles.cjs). Files named run one after the other, in this process.
 */
const jobs = Number(process.env.TEST_JOBS ?? 3);

/**
 * The whole suite's files, those whose header says `Slow:` first: side by side, a long file started
 * last would keep one worker busy after the others ran out of files (the longest first, the
 * shortest fill the gaps at the end). Mocha hands files to its workers in this order.
 */
function wholeSuite() {
  const found = [];
  const walk = (dir) => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const at = path.join(dir, entry.name);
      if (entry.isDirectory()) walk(at);
      else if (entry.name.endsWith('.spec.ts')) found.push(at);
    }
  };
  walk('test');
  found.sort();
  const slow = found.filter((file) => headerLine(file, 'Slow') !== null);
  return [...slow, ...found.filter((file) => !slow.includes(file))];
}

module.exports = {
  require: ['tsx/cjs', './test/support/exclusiveFiles.cjs'],
  ...(named ? {} : { spec: wholeSuite() }),
  ...(!named && jobs > 1 && { parallel: true, jobs }),
  // A folder named runs its spec files, its subfolders' included.
  extension: ['spec.ts'],
  recursive: true,
  // The spec reporter, then the 20 slowest files with their times (test/support/reporter.cjs).
  reporter: './test/support/reporter.cjs',
  timeout: 30000,
  exit: true,
};
