/**
 * The CLI benchmark: the size of the standalone `testament` binary (linux-x64, built as
 * `npm run build:cli` builds it), and its start-up (`testament --version`, process spawned to
 * exit) against `node -e 0`, interleaved in the same run, 30 of each after 3 unmeasured.
 * Goal: start-up median under 3 × that of `node -e 0`.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildCli } from '../scripts/build-cli';
import { BenchSanityError, describeCode, median, round, writeResult } from './support';

const RUNS = 30;
const GOAL = 3;

function timeOnce(command: string, args: string[]): number {
  const started = process.hrtime.bigint();
  const result = spawnSync(command, args, { env: {}, stdio: ['ignore', 'pipe', 'pipe'] });
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  if (result.status !== 0) throw new BenchSanityError(`${command} ${args.join(' ')} exited ${result.status}: ${result.stderr}`);
  return ms;
}

export async function runCliBench(): Promise<boolean> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-bench-cli-'));
  try {
    const binary = buildCli('linux-x64', dir);
    const version = spawnSync(binary, ['--version'], { env: {} }).stdout.toString().trim();
    const expected = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'package.json'), 'utf8')).version;
    if (version !== expected) throw new BenchSanityError(`the binary says ${version}, package.json ${expected}`);
    const cli: number[] = [];
    const node: number[] = [];
    for (let i = 0; i < RUNS + 3; i++) {
      const a = timeOnce(binary, ['--version']);
      const b = timeOnce(process.execPath, ['-e', '0']);
      if (i >= 3) {
        cli.push(a);
        node.push(b);
      }
    }
    const ratio = median(cli) / median(node);
    const result = {
      benchmark: 'cli',
      date: new Date().toISOString(),
      machine: { cpus: os.cpus().length, loadAverage: os.loadavg().map((l) => round(l, 2)), node: process.version },
      code: describeCode(['services/cli', 'scripts/build-cli.ts']),
      binary: { target: 'linux-x64', bytes: fs.statSync(binary).size, megabytes: round(fs.statSync(binary).size / 1048576, 1), builtWith: 'bun build --compile (bun 1.4.5 from npm)' },
      startup: { runs: RUNS, cliMedianMs: round(median(cli), 1), nodeMedianMs: round(median(node), 1), ratio: round(ratio, 2), goal: GOAL, met: ratio < GOAL },
      passed: ratio < GOAL,
    };
    const written = writeResult('cli', result);
    console.log(`  binary ${result.binary.megabytes} MB; start-up median: testament --version ${result.startup.cliMedianMs} ms, node -e 0 ${result.startup.nodeMedianMs} ms, ratio ${result.startup.ratio} (goal < ${GOAL}) ${result.passed ? 'ok' : 'MISSED'}; ${written}`);
    return result.passed;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
