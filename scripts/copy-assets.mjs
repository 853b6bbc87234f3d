// Copies the non-TypeScript files the compiled code reads at run time (event schemas, SQL) into dist/.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ASSETS = [
  ['contracts/events', /\.schema\.json$/],
  ['contracts', /^envelope\.schema\.json$/],
  ['infra/eventstore', /\.sql$/],
];
const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
for (const [dir, pattern] of ASSETS) {
  const target = path.join(root, 'dist', dir);
  fs.mkdirSync(target, { recursive: true });
  for (const file of fs.readdirSync(path.join(root, dir))) {
    if (pattern.test(file)) fs.copyFileSync(path.join(root, dir, file), path.join(target, file));
  }
}
