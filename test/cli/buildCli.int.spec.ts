import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { buildCli, CLI_TARGETS } from '../../scripts/build-cli';

/** What the first bytes of an executable say it is for. */
function platformOf(file: string): string {
  const head = Buffer.alloc(4096);
  const fd = fs.openSync(file, 'r');
  fs.readSync(fd, head, 0, head.length, 0);
  fs.closeSync(fd);
  if (head.readUInt32BE(0) === 0x7f454c46) return `elf-${({ 0x3e: 'x64', 0xb7: 'arm64' } as Record<number, string>)[head.readUInt16LE(18)] ?? 'other'}`;
  if (head.readUInt32LE(0) === 0xfeedfacf) return `macho-${({ 0x01000007: 'x64', 0x0100000c: 'arm64' } as Record<number, string>)[head.readUInt32LE(4)] ?? 'other'}`;
  if (head.toString('latin1', 0, 2) === 'MZ') {
    const pe = head.readUInt32LE(0x3c);
    if (head.toString('latin1', pe, pe + 4) === 'PE\0\0') return `pe-${head.readUInt16LE(pe + 4) === 0x8664 ? 'x64' : 'other'}`;
  }
  return 'unknown';
}

/**
 * `npm run build:cli`'s five targets build here (bun fetches each runtime from the npm registry),
 * each an executable of its OS and CPU. Only the linux-x64 one can run on this machine: the CLI
 * suite runs it end to end.
 */
describe('npm run build:cli: the five standalone binaries', function () {
  this.timeout(600_000);
  const expected: Record<string, string> = {
    'linux-x64': 'elf-x64', 'linux-arm64': 'elf-arm64', 'macos-x64': 'macho-x64', 'macos-arm64': 'macho-arm64', 'windows-x64': 'pe-x64',
  };
  let dir: string;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-build-cli-'))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  for (const target of Object.keys(CLI_TARGETS)) {
    it(`${CLI_TARGETS[target].file}: an executable for ${expected[target]}`, () => {
      const file = buildCli(target, dir);
      expect(path.basename(file)).to.equal(CLI_TARGETS[target].file);
      expect(platformOf(file)).to.equal(expected[target]);
      expect(fs.statSync(file).size).to.be.greaterThan(20 * 1024 * 1024);
      fs.rmSync(file);
    });
  }
});
