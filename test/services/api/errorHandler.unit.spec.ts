import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { expect } from 'chai';
import express from 'express';
import pino from 'pino';
import { errorHandler } from '../../../services/shared/http';
import { ReadModelWaitFailed } from '../../../services/shared/errors';

/** Serves `app` with the error handler behind it while `use` runs. */
async function withHandler(app: express.Express, use: (url: string) => Promise<void>): Promise<void> {
  app.use(errorHandler(pino({ level: 'silent' })));
  const server = await new Promise<Server>((resolve) => { const s = app.listen(0, '127.0.0.1', () => resolve(s)); });
  try {
    await use(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
  } finally {
    await new Promise((r) => server.close(r));
  }
}

/** The error handler turns the HTTP layer's own client errors into their 4xx, never a 500. */
describe('errorHandler', () => {
  it('answers a client error of the HTTP layer (e.g. a body cut short) with its status and code bad-request', async () => {
    const app = express();
    app.get('/aborted', (_req, _res, next) => next(Object.assign(new Error('request aborted'), { status: 400, expose: true, type: 'request.aborted' })));
    app.get('/internal', (_req, _res, next) => next(Object.assign(new Error('stream not readable'), { status: 500, expose: false, type: 'stream.not.readable' })));
    await withHandler(app, async (url) => {
      const aborted = await fetch(`${url}/aborted`);
      expect(aborted.status).to.equal(400);
      expect(await aborted.json()).to.deep.equal({ error: 'request aborted', code: 'bad-request', details: { type: 'request.aborted' } });
      const internal = await fetch(`${url}/internal`);
      expect(internal.status).to.equal(500);
      expect(((await internal.json()) as { code: string }).code).to.equal('internal-error');
    });
  });

  it('answers a wait for the read models that failed below the HTTP layer (lagging, shutting down) with 503 and its code', async () => {
    const app = express();
    app.get('/lagging', (_req, _res, next) => next(new ReadModelWaitFailed('read-model-lagging', 'not applied yet', { position: '42' })));
    app.get('/stopping', (_req, _res, next) => next(new ReadModelWaitFailed('shutting-down', 'The server is shutting down')));
    await withHandler(app, async (url) => {
      const lagging = await fetch(`${url}/lagging`);
      expect(lagging.status).to.equal(503);
      expect(await lagging.json()).to.deep.equal({ error: 'not applied yet', code: 'read-model-lagging', details: { position: '42' } });
      const stopping = await fetch(`${url}/stopping`);
      expect(stopping.status).to.equal(503);
      expect(((await stopping.json()) as { code: string }).code).to.equal('shutting-down');
    });
  });
});
