import { Writable } from 'node:stream';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import pino from 'pino';
import { accessLog, correlationId, errorHandler } from '../../../services/shared/http';

/** An express app with the access log in front of three routes, logging into an array. */
async function withApp(level: string, use: (url: string, lines: Record<string, unknown>[]) => Promise<void>): Promise<void> {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({ write(chunk, _enc, done) { lines.push(JSON.parse(String(chunk))); done(); } });
  const logger = pino({ level }, sink);
  const app = express();
  app.use((req, _res, next) => { req.correlationId = correlationId(req.header('x-correlation-id')); next(); });
  app.use(accessLog(logger));
  app.get('/ok', (_req, res) => { res.json({ ok: true }); });
  app.get('/missing', (_req, res) => { res.status(404).json({ error: 'no', code: 'route-not-found', details: {} }); });
  app.get('/boom', () => { throw new Error('boom'); });
  app.use(errorHandler(logger));
  const server = await new Promise<Server>((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
  try {
    await use(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, lines);
  } finally {
    await new Promise((r) => server.close(r));
  }
}

const settle = () => new Promise((r) => setTimeout(r, 20));

describe('accessLog', () => {
  it('logs one line per request with the correlation id, method, URL, status and time; 4xx as warn, 5xx as error', async () => {
    await withApp('info', async (url, lines) => {
      await fetch(`${url}/ok?x=1`, { headers: { 'x-correlation-id': 'cid-ok' } });
      await fetch(`${url}/missing`, { headers: { 'x-correlation-id': 'cid-404' } });
      await fetch(`${url}/boom`, { headers: { 'x-correlation-id': 'cid-500' } });
      await settle();
      const access = lines.filter((l) => l.msg === 'request completed');
      expect(access.map((l) => [l.correlationId, l.method, l.url, l.status, l.level])).to.deep.equal([
        ['cid-ok', 'GET', '/ok?x=1', 200, 30],
        ['cid-404', 'GET', '/missing', 404, 40],
        ['cid-500', 'GET', '/boom', 500, 50],
      ]);
      for (const l of access) expect(l.ms).to.be.a('number').and.at.least(0);
      // The cause of the 500 is logged by the error handler, with the same correlation id.
      expect(lines.some((l) => l.msg === 'request failed' && l.correlationId === 'cid-500')).to.equal(true);
    });
  });

  it('writes nothing below the logger level', async () => {
    await withApp('warn', async (url, lines) => {
      await fetch(`${url}/ok`);
      await fetch(`${url}/missing`);
      await settle();
      expect(lines.map((l) => l.status)).to.deep.equal([404]);
    });
  });
});
