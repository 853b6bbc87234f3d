import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.join(__dirname, '..', '..');
const run = (script: string, ...args: string[]) => spawnSync('bash', [path.join(ROOT, script), ...args], { encoding: 'utf8', timeout: 30_000 });

/** The service scripts' arguments: -h prints the usage (the leading comments, nothing else) and starts or stops nothing; an unknown argument fails. */
describe('infra/*/up.sh and down.sh: their arguments', () => {
  for (const script of ['infra/kafka/up.sh', 'infra/kafka/down.sh', 'infra/opensearch/up.sh', 'infra/opensearch/down.sh']) {
    it(`${script} -h prints its usage only; an unknown argument is refused`, () => {
      const help = run(script, '--help');
      expect(help.status, help.stderr).to.equal(0);
      const lines = help.stdout.trimEnd().split('\n');
      expect(lines.length).to.be.greaterThan(2);
      expect(lines.every((l) => l.startsWith('#')), help.stdout).to.equal(true);
      expect(help.stdout).to.include(script.split('/').pop()!.replace('.sh', ''));
      const bogus = run(script, '--bogus');
      expect(bogus.status).to.equal(1);
      expect(bogus.stderr + bogus.stdout).to.match(/unknown argument: --bogus/);
    });
  }
});
