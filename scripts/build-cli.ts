/**
 * `npm run build:cli [-- <target>…]`: the `testament` CLI (services/cli/main.ts) as standalone
 * executables in dist/bin, built with `bun build --compile` (bun from the npm registry; it fetches
 * each target's runtime from the registry too, as `@oven/bun-<os>-<arch>`), and a SHA256SUMS file
 * beside them. No runtime is needed where they run. Targets: linux-x64, linux-arm64, macos-x64,
 * macos-arm64, windows-x64 (all by default).
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const ROOT = path.join(__dirname, '..');
export const CLI_TARGETS: Record<string, { bun: string; file: string }> = {
  'linux-x64': { bun: 'bun-linux-x64', file: 'testament-linux-x64' },
  'linux-arm64': { bun: 'bun-linux-arm64', file: 'testament-linux-arm64' },
  'macos-x64': { bun: 'bun-darwin-x64', file: 'testament-macos-x64' },
  'macos-arm64': { bun: 'bun-darwin-arm64', file: 'testament-macos-arm64' },
  'windows-x64': { bun: 'bun-windows-x64', file: 'testament-windows-x64.exe' },
};

/** Builds one target into `outDir`; answers the file's path. */
export function buildCli(target: string, outDir = path.join(ROOT, 'dist', 'bin')): string {
  const spec = CLI_TARGETS[target];
  if (!spec) throw new Error(`unknown target ${target}; one of ${Object.keys(CLI_TARGETS).join(', ')}`);
  fs.mkdirSync(outDir, { recursive: true });
  const outfile = path.join(outDir, spec.file);
  const bun = path.join(ROOT, 'node_modules', 'bun', 'bin', 'bun.exe');
  execFileSync(bun, ['build', path.join(ROOT, 'services', 'cli', 'main.ts'), '--compile', `--target=${spec.bun}`, '--outfile', outfile], { cwd: ROOT, stdio: 'inherit' });
  return outfile;
}

function main(): void {
  const targets = process.argv.slice(2).length > 0 ? process.argv.slice(2) : Object.keys(CLI_TARGETS);
  const outDir = path.join(ROOT, 'dist', 'bin');
  const sums: string[] = [];
  for (const target of targets) {
    const file = buildCli(target, outDir);
    const sha = createHash('sha256').update(fs.readFileSync(file)).digest('hex');
    sums.push(`${sha}  ${path.basename(file)}`);
    console.log(`${path.relative(ROOT, file)}  ${(fs.statSync(file).size / 1048576).toFixed(1)} MB  sha256 ${sha}`);
  }
  fs.writeFileSync(path.join(outDir, 'SHA256SUMS'), `${sums.join('\n')}\n`);
  console.log(`${path.relative(ROOT, path.join(outDir, 'SHA256SUMS'))} written (sha256sum -c SHA256SUMS)`);
}

if (require.main === module) main();
