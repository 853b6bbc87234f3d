import { execFile } from 'node:child_process';
import fs from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import express from 'express';
import { docsRoutes } from '../../../services/api/docs.routes';
import { CATEGORIES, type Category } from '../../../services/api/openapi';

const ROOT = path.resolve(__dirname, '../../..');
const REDOCLY = path.join(ROOT, 'node_modules/@redocly/cli/bin/cli.js');

interface Problem {
  ruleId: string;
  severity: 'error' | 'warn';
  message: string;
  location: { pointer: string }[];
}

/**
 * Warnings kept on purpose, as `category rule pointer`: the rule asks for something the service
 * does not have. The health endpoints answer before authentication and rate limits, so they have
 * no 4xx response to document.
 */
const ACCEPTED_WARNINGS = [
  'custom operation-4xx-response #/paths/~1healthz/get/responses',
  'custom operation-4xx-response #/paths/~1readyz/get/responses',
];

/** `redocly lint` with the repository's redocly.yaml (the recommended rules), offline: no telemetry, no update check. */
async function lint(file: string): Promise<Problem[]> {
  const args = [REDOCLY, 'lint', '--config', path.join(ROOT, 'redocly.yaml'), '--format=json', '--max-problems=100000', file];
  const env = { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_NOTIFICATIONS: 'true', NO_COLOR: '1' };
  // It exits 1 when it finds errors; its report is on stdout either way.
  const stdout = await promisify(execFile)(process.execPath, args, { env, maxBuffer: 256 * 1024 * 1024 })
    .then((r) => r.stdout, (error: { stdout?: string; stderr?: string }) => {
      if (!error.stdout) throw new Error(`redocly lint did not report: ${error.stderr}`);
      return error.stdout;
    });
  return (JSON.parse(stdout) as { problems: Problem[] }).problems;
}

describe('OpenAPI documents under redocly lint (recommended rules)', function () {
  this.timeout(120_000);
  let dir: string;
  let server: ReturnType<express.Express['listen']>;
  let url: string;
  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'openapi-lint-'));
    // The documents exactly as GET /api/docs serves them.
    const app = express().use(docsRoutes());
    server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  after(() => {
    server?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  for (const category of Object.keys(CATEGORIES) as Category[]) {
    it(`${category}: no errors, and no warnings but the accepted ones`, async () => {
      const res = await fetch(`${url}/api/docs?category=${category}`);
      expect(res.status).to.equal(200);
      const file = path.join(dir, `${category}.json`);
      fs.writeFileSync(file, await res.text());
      const problems = await lint(file);
      const named = (p: Problem) => `${category} ${p.ruleId} ${p.location[0]?.pointer}`;
      const errors = problems.filter((p) => p.severity === 'error').map((p) => `${named(p)}: ${p.message}`);
      expect(errors, `${errors.length} errors, the first:\n${errors.slice(0, 20).join('\n')}\n`).to.have.length(0);
      expect(problems.map(named), 'warnings').to.have.members(ACCEPTED_WARNINGS.filter((w) => w.startsWith(`${category} `)));
    });
  }
});
