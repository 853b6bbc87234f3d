import fs from 'node:fs';
import path from 'node:path';

/** The browser code and its stylesheet, as served under /web/. */
export interface WebAssets {
  script: string;
  style: string;
}

/** Run from dist/services/web (built) or services/web (the sources, through tsx). */
const BUILT = path.basename(path.join(__dirname, '..', '..')) === 'dist';
/** The client's sources (in the repository, beside dist when built). */
const CLIENT_DIR = BUILT ? path.join(__dirname, '..', '..', '..', 'services', 'web', 'client') : path.join(__dirname, 'client');
/** Where `npm run build` writes the bundle (dist/web), seen from dist/services/web. */
const BUILT_DIR = path.join(__dirname, '..', '..', 'web');

/**
 * The built bundle when the server runs from dist (`npm run build` made it: scripts/build-web.mjs);
 * run from the sources (tests, tsx), the client is bundled here in memory with esbuild, the same
 * options as the build. Read once per process.
 */
let loading: Promise<WebAssets> | null = null;
export function webAssets(): Promise<WebAssets> {
  loading ??= load();
  return loading;
}

async function load(): Promise<WebAssets> {
  const built = path.join(BUILT_DIR, 'app.js');
  if (BUILT && fs.existsSync(built)) {
    return { script: fs.readFileSync(built, 'utf8'), style: fs.readFileSync(path.join(BUILT_DIR, 'style.css'), 'utf8') };
  }
  // A development dependency: only the sources need it.
  const esbuild = await import('esbuild');
  const result = await esbuild.build({ ...WEB_BUILD_OPTIONS, entryPoints: [path.join(CLIENT_DIR, 'main.ts')], write: false });
  return { script: result.outputFiles[0].text, style: fs.readFileSync(path.join(CLIENT_DIR, 'style.css'), 'utf8') };
}

/** esbuild's options for the client (scripts/build-web.mjs reads the same from the built file). */
export const WEB_BUILD_OPTIONS = { bundle: true, format: 'iife', target: 'es2020', minify: true, legalComments: 'none', charset: 'utf8' } as const;
