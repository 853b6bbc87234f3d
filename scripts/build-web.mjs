// Bundles the browser pages (services/web/client) into dist/web for the built server.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), '..');
const { WEB_BUILD_OPTIONS } = await import(path.join(root, 'dist/services/web/bundle.js'));
const client = path.join(root, 'services/web/client');
const out = path.join(root, 'dist/web');
fs.mkdirSync(out, { recursive: true });
await build({ ...WEB_BUILD_OPTIONS, entryPoints: [path.join(client, 'main.ts')], outfile: path.join(out, 'app.js') });
fs.copyFileSync(path.join(client, 'style.css'), path.join(out, 'style.css'));
