#!/usr/bin/env node
/**
 * The `bin` of package.json: `npx testament …` in a checkout, or `testament …` after `npm install -g`
 * of one. In a checkout with its dev dependencies (tsx), the CLI runs from source, so it is never older
 * than the code beside it; elsewhere it runs the build `npm run build` wrote to dist/.
 */
const fs = require('node:fs');
const path = require('node:path');

function load() {
  try {
    require.resolve('tsx/cjs');
  } catch {
    const built = path.join(__dirname, '..', 'dist', 'services', 'cli', 'main.js');
    if (!fs.existsSync(built)) {
      process.stderr.write('testament: neither tsx (a dev dependency) nor a build (dist/) is here; run `npm ci` or `npm run build` first\n');
      process.exit(2);
    }
    return require(built);
  }
  require('tsx/cjs');
  return require('../services/cli/main.ts');
}

load()
  .run(process.argv.slice(2))
  .then((code) => process.exit(code));
