import { execFile } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { ANCHOR_STREAM, anchorNow, type AnchorSettings, checkAnchors, startAnchoring } from '../../../services/integrity/anchors';
import { verifyIntegrity } from '../../../services/integrity/integrity';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import type { EventStore, ReadStreamOptions } from '../../../services/shared/eventStore';
import { startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';

const ROOT = path.join(__dirname, '..', '..', '..');

/** `npm run verify` as a process against the app's database; its exit code and output. */
function runVerify(app: TestApp, args: string[]): Promise<{ code: number; out: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['--require', 'tsx/cjs', path.join(ROOT, 'scripts', 'verify.ts'), ...args], {
      cwd: ROOT, env: { ...process.env, DATABASE_URL: app.databaseUrl, LOG_LEVEL: 'error', KAFKA_BROKERS: '', SEARCH_URL: '' }, timeout: 60_000,
    }, (error, stdout, stderr) => resolve({ code: error ? (typeof error.code === 'number' ? error.code : 2) : 0, out: `${stdout}${stderr}` }));
  });
}

/**
 * Integrity anchors: the head hash recorded as an event and copied to a file and a URL (a real
 * HTTP server on loopback); nothing new, no anchor; a copy that fails is left out; and the case
 * anchors exist for: the chain recomputed whole after a change, which the chain alone does not
 * show, found by the log's anchors (GET /api/admin/integrity) and by the file's (npm run verify).
 */
describe('integrity anchors: the head hash recorded in the log and copied where the organisation keeps it', function () {
  this.timeout(120_000);
  let app: TestApp;
  let dir: string;
  let server: http.Server;
  let received: { body: string; authorization: string | undefined }[] = [];
  let answer = 204;
  let settings: AnchorSettings;
  const logger = pino({ level: 'silent' });

  before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'anchors-'));
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => {
        received.push({ body, authorization: req.headers.authorization });
        res.writeHead(answer).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    settings = { intervalMs: 1000, file: path.join(dir, 'anchors.ndjson'), url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/anchors`, token: 'anchor-token' };
    app = await startTestApp();
    await registerUser(app.deps, { email: 'root@example.com', password: 'root-password-1', name: 'Root', access: 'ADMIN' }, systemMetadata('test'));
    const admin = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'root@example.com', password: 'root-password-1' })).status).to.equal(200);
    for (const name of ['Pump', 'Monitor']) expect((await admin.post('/api/model/project/create', { data: { name } })).status).to.equal(201);
  });
  after(async () => {
    await app?.stop();
    await new Promise((resolve) => server.close(resolve));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('records the head hash as an event after copying it to the file and the URL; nothing new, no anchor', async () => {
    const head = await app.deps.store.chainHead!();
    const outcome = await anchorNow({ store: app.deps.store, logger, clock: app.clock.read, settings });
    expect(outcome).to.deep.include({ anchored: true, position: head.position, hash: head.hash, copies: ['file', 'url'] });
    const line = JSON.parse(fs.readFileSync(settings.file!, 'utf8').trim());
    expect(line).to.deep.equal({ position: head.position, hash: head.hash, anchoredAt: app.clock.now.toISOString() });
    expect(received).to.have.length(1);
    expect(JSON.parse(received[0].body)).to.deep.equal(line);
    expect(received[0].authorization).to.equal('Bearer anchor-token');
    const [event] = await app.deps.store.readStream(ANCHOR_STREAM);
    expect(event).to.deep.include({ type: 'IntegrityAnchored', data: { ...line, copies: ['file', 'url'] } });
    expect(event.metadata.actor.via).to.equal('system');
    expect(await anchorNow({ store: app.deps.store, logger, clock: app.clock.read, settings })).to.deep.equal({ anchored: false, reason: 'unchanged' });
  });

  it('leaves out a copy that fails (the event says which were written); two workers at once anchor once', async () => {
    const admin = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'root@example.com', password: 'root-password-1' })).status).to.equal(200);
    expect((await admin.post('/api/model/project/create', { data: { name: 'Syringe driver' } })).status).to.equal(201);
    answer = 500;
    received = [];
    const outcome = await anchorNow({ store: app.deps.store, logger, clock: app.clock.read, settings });
    answer = 204;
    expect(outcome).to.deep.include({ anchored: true, copies: ['file'] });
    expect(received).to.have.length(1);
    expect((await admin.post('/api/model/project/create', { data: { name: 'Ventilator' } })).status).to.equal(201);
    const both = await Promise.all([1, 2].map(() => anchorNow({ store: app.deps.store, logger, clock: app.clock.read, settings: { ...settings, file: null, url: null } })));
    expect(both.filter((o) => o.anchored)).to.have.length(1);
    expect(both.find((o) => !o.anchored)).to.satisfy((o: { reason: string }) => ['raced', 'unchanged'].includes(o.reason));
    const report = await verifyIntegrity(app.deps.store, {});
    expect(report.intact).to.equal(true);
    expect(report.anchors).to.deep.equal({ checked: 3, firstMismatch: null });
  });

  it('a worker that read the head before another anchored it does not anchor it again', async () => {
    const admin = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'root@example.com', password: 'root-password-1' })).status).to.equal(200);
    expect((await admin.post('/api/model/project/create', { data: { name: 'Infusion pump' } })).status).to.equal(201);
    const quiet = { ...settings, file: null, url: null };
    const real = app.deps.store;
    let release!: () => void;
    const firstAnchored = new Promise<void>((resolve) => (release = resolve));
    // The second worker's reads: the head at once, the anchor stream only once the first has anchored.
    const late: EventStore = Object.assign(Object.create(real) as EventStore, {
      readStream: async (stream: string, options?: ReadStreamOptions) => (await firstAnchored, real.readStream(stream, options)),
    });
    const second = anchorNow({ store: late, logger, clock: app.clock.read, settings: quiet });
    const first = await anchorNow({ store: real, logger, clock: app.clock.read, settings: quiet });
    release();
    expect([first.anchored, (await second).anchored]).to.deep.equal([true, false]);
    const anchors = await real.readStream(ANCHOR_STREAM);
    expect(new Set(anchors.map((e) => (e.data as { position: string }).position)).size, 'no head anchored twice').to.equal(anchors.length);
  });

  it('anchors on its own every interval once started (the worker role starts it), and stops cleanly', async () => {
    const admin = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'root@example.com', password: 'root-password-1' })).status).to.equal(200);
    expect((await admin.post('/api/model/project/create', { data: { name: 'Oximeter' } })).status).to.equal(201);
    const before = (await app.deps.store.readStream(ANCHOR_STREAM)).length;
    const loop = startAnchoring({ store: app.deps.store, logger, clock: app.clock.read, settings: { ...settings, intervalMs: 50 } });
    try {
      for (let i = 0; i < 100 && (await app.deps.store.readStream(ANCHOR_STREAM)).length === before; i++) await new Promise((r) => setTimeout(r, 50));
    } finally {
      await loop.stop();
    }
    const after = await app.deps.store.readStream(ANCHOR_STREAM);
    expect(after.length, 'one anchor: nothing was appended after it').to.equal(before + 1);
  });

  it('finds a chain recomputed whole after a change: by the log\'s anchors and by the file\'s copies', async () => {
    const { rows: [target] } = await app.deps.knex.raw(`SELECT position FROM es_events WHERE type = 'ProjectCreated' ORDER BY position LIMIT 1`);
    const before = (await runVerify(app, ['--anchors', settings.file!]));
    expect(before.code, before.out).to.equal(0);
    expect(before.out).to.match(/anchors in .*anchors\.ndjson: 3 checked/);
    // The attacker changes one event and recomputes every hash after it, and the head: the chain holds again.
    await app.deps.knex.raw(`UPDATE es_events SET data = jsonb_set(data, '{name}', '"Pumq"') WHERE position = ?`, [target.position]);
    await app.deps.knex.raw(`DO $$ DECLARE r record; prev bytea; BEGIN
      SELECT hash INTO prev FROM es_events WHERE position = ${Number(target.position) - 1};
      IF prev IS NULL THEN prev := decode(repeat('00', 32), 'hex'); END IF;
      FOR r IN SELECT * FROM es_events WHERE position >= ${Number(target.position)} ORDER BY position LOOP
        prev := sha256(prev || es_event_content(r.position, r.id, r.stream_id, r.revision, r.type, r.schema_version, r.recorded_at, r.data, r.metadata));
        UPDATE es_events SET hash = prev WHERE position = r.position;
      END LOOP;
      UPDATE es_head SET hash = prev WHERE id = 1;
    END $$`);
    const chain = await app.deps.store.verifyChain!({});
    expect(chain.intact, 'the recomputed chain holds by itself').to.equal(true);
    const report = await verifyIntegrity(app.deps.store, {});
    expect(report.intact).to.equal(false);
    expect(report.firstBreak).to.include({ problem: 'anchor' });
    expect(BigInt(report.firstBreak!.position) >= BigInt(target.position)).to.equal(true);
    expect(report.anchors.firstMismatch).to.not.equal(null);
    const copies = await checkAnchors(app.deps.store, fs.readFileSync(settings.file!, 'utf8').trim().split('\n').map((l) => JSON.parse(l)));
    expect(copies.firstMismatch).to.not.equal(null);
    const after = await runVerify(app, ['--anchors', settings.file!]);
    expect(after.code, after.out).to.equal(1);
    expect(after.out).to.match(/BROKEN/);
    const bad = path.join(dir, 'bad.ndjson');
    fs.writeFileSync(bad, 'not json\n');
    const refused = await runVerify(app, ['--anchors', bad]);
    expect(refused.code, refused.out).to.equal(2);
    expect(refused.out).to.match(/line 1: not an anchor/);
  });
});
