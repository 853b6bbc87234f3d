import { spawn } from 'node:child_process';
import { expect } from 'chai';

const MOCHA = require.resolve('mocha/bin/mocha.js');

/**
 * A test that measures the process's resident memory runs in a process of its own: in the main
 * run, whatever earlier suites left on the heap moves the baseline. Here the test spawns mocha on
 * its own file with `--grep` its title (and FRESH_PROCESS=1, under which the body runs) and passes
 * when that run passes.
 */
export function itInFreshProcess(title: string, file: string, body: (this: Mocha.Context) => Promise<void>): void {
  it(title, async function () {
    this.timeout(300_000);
    if (process.env.FRESH_PROCESS) return body.call(this);
    const grep = `^.*${title.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`;
    const child = spawn(process.execPath, [MOCHA, '--no-config', '--require', 'tsx/cjs', '--timeout', '300000', '--exit', file, '--grep', grep], {
      env: { ...process.env, FRESH_PROCESS: '1' },
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(code, output).to.equal(0);
    expect(output, 'the test ran in the child').to.match(/\b1 passing\b/);
  });
}
