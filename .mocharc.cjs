'use strict';
/**
 * Mocha's settings. `npx mocha` (and `npm test`) runs every spec file under test/; naming files or
 * folders runs only those: `npx mocha test/model/query.int.spec.ts`. (Mocha adds the files it is
 * given to a configured `spec` instead of replacing it, so the whole suite is configured only when
 * none is named.)
 */
const named = process.argv.slice(2).some((arg) => !arg.startsWith('-') && /(^|\/)test\/|\.[cm]?[jt]s$/.test(arg));

/**
 * The whole suite runs its files side by side in TEST_JOBS worker processes (default 2, the cores of
 * the machine it is measured on); a file whose header says `Exclusive:` runs alone
 * (test/support/exclusiveFiles.cjs). Files named run one after the other, in this process.
 */
const jobs = Number(process.env.TEST_JOBS ?? 2);

module.exports = {
  require: ['tsx/cjs', './test/support/exclusiveFiles.cjs'],
  ...(named ? {} : { spec: ['test/**/*.spec.ts'] }),
  ...(!named && jobs > 1 && { parallel: true, jobs }),
  // A folder named runs its spec files, its subfolders' included.
  extension: ['spec.ts'],
  recursive: true,
  // The spec reporter, then the 20 slowest files with their times (test/support/reporter.cjs).
  reporter: './test/support/reporter.cjs',
  timeout: 30000,
  exit: true,
};
