import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import pkg from '../../package.json';

const ROOT = path.resolve(__dirname, '..', '..');

/** `npx testament` in a checkout runs the CLI (package.json's bin), as the README says. */
describe('npx testament', function () {
  this.timeout(60000);

  it('runs the command-line tool from a checkout', async () => {
    const { stdout } = await promisify(execFile)('npx', ['--no-install', 'testament', '--version'], { cwd: ROOT, env: { ...process.env, npm_config_update_notifier: 'false' } });
    expect(stdout.trim()).to.equal(pkg.version);
  });

  it('answers its usage for an unknown command with a non-zero exit', async () => {
    const err = await promisify(execFile)('npx', ['--no-install', 'testament', 'no-such-command'], { cwd: ROOT }).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(err, 'an unknown command must fail').to.not.equal(null);
    expect(err!.code).to.not.equal(0);
    expect(err!.stderr).to.match(/no-such-command|usage|unknown/i);
  });
});
