import { expect } from 'chai';
import pino from 'pino';
import type { UniqueValueClaimed } from '../../../contracts/events';
import { loadContracts, type ContractValidator } from '../../../contracts/validator';
import { reconcileClaims, startClaimReconciler } from '../../../services/claims/claimReconciler';
import { createEntity, updateEntity } from '../../../services/entities/entity.handlers';
import { ContractViolation } from '../../../services/shared/errors';
import { withContracts } from '../../../services/shared/validatingEventStore';
import { registerUser } from '../../../services/identity/identity.handlers';
import { emailReservationStream } from '../../../services/identity/user.decider';
import { systemMetadata } from '../../../services/shared/context';
import { createKnex } from '../../../infra/postgres/database';
import { startTestApp, type TestApp } from '../../support/app';
import { createTestDatabase } from '../../support/database';
import { HttpClient } from '../../support/server';

const ROOT_PASSWORD = 'root-Password-7431';
const GRACE_MS = 60_000;
/** A pass of the reconciler as the loop runs it, but at a chosen time (no waiting out the grace period). */
const pass = (app: TestApp, logger: pino.Logger, now: Date) =>
  reconcileClaims({ store: app.deps.store, knex: app.deps.knex, logger }, { now, graceMs: GRACE_MS, batchSize: 100 });
const inAMinute = () => new Date(Date.now() + GRACE_MS + 1_000);

/**
 * Issue 15, section 2: a user's e-mail (any unique value) is claimed on a stream of its own before
 * the user is appended; when that second append failed, the claim stayed and the e-mail was taken
 * for good. A PostgreSQL trigger on es_events makes the second append fail for real here.
 */
describe('a unique value and the row that holds it are one unit', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: HttpClient;
  const logLines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => logLines.push(JSON.parse(line)) });

  const streamTypes = async (streamId: string) => (await app.deps.store.readStream(streamId)).map((e) => [e.type, (e.data as { reason?: string }).reason ?? null]);
  /** Makes every append of `eventType` fail in the database, as a real fault would (P0001, not transient). */
  const refuse = (eventType: string) => app.deps.knex.raw(`
    CREATE OR REPLACE FUNCTION refuse_event() RETURNS trigger LANGUAGE plpgsql AS $$
    BEGIN RAISE EXCEPTION 'test: % refused', NEW.type; END $$;
    CREATE TRIGGER refuse_event BEFORE INSERT ON es_events FOR EACH ROW WHEN (NEW.type = '${eventType}') EXECUTE FUNCTION refuse_event();`);
  const allow = () => app.deps.knex.raw('DROP TRIGGER IF EXISTS refuse_event ON es_events');
  const claimsRow = (streamId: string) => app.deps.knex('unique_claims').where({ stream_id: streamId }).first('state', 'owner_id', 'owner_stream');
  /** Appends a claim and nothing else, as a process killed between the two appends leaves it; waits until the projection has it. */
  const claimAlone = async (streamId: string, claim: UniqueValueClaimed['data']) => {
    const { position } = await app.deps.store.append(streamId, [{ type: 'UniqueValueClaimed', data: claim }], { expectedRevision: 'no-stream', metadata: systemMetadata('killed') });
    await app.deps.watcher.waitFor({ position, streamId }, 10_000);
  };

  before(async () => {
    app = await startTestApp();
    await registerUser(app.deps, { email: 'root@example.com', name: 'Root', password: ROOT_PASSWORD, access: 'ADMIN' }, systemMetadata('test'));
    admin = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'root@example.com', password: ROOT_PASSWORD })).status).to.equal(200);
  });
  afterEach(() => allow());
  after(() => app?.stop());

  describe('the owner\'s append fails: the claim is released at once', () => {
    it('user.create: the e-mail can be used right after', async () => {
      await refuse('UserRegistered');
      const failed = await admin.post('/api/model/user/create', { data: { email: 'eve@example.com', name: 'Eve', password: 'eve-Password-5520' } });
      expect(failed.status, JSON.stringify(failed.body)).to.equal(500);
      expect(await streamTypes(emailReservationStream('eve@example.com'))).to.deep.equal([['UniqueValueClaimed', null], ['UniqueValueReleased', 'owner-write-failed']]);
      await allow();
      const created = await admin.post('/api/model/user/create', { data: { email: 'Eve@Example.com', name: 'Eve', password: 'eve-Password-5520' } });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      expect(await streamTypes(emailReservationStream('eve@example.com'))).to.deep.equal([
        ['UniqueValueClaimed', null], ['UniqueValueReleased', 'owner-write-failed'], ['UniqueValueClaimed', null],
      ]);
      // Held again: a third registration is refused.
      const again = await admin.post('/api/model/user/create', { data: { email: 'eve@example.com', name: 'Eve 2', password: 'eve-Password-5520' } });
      expect(again.status).to.equal(409);
      expect(again.body.code).to.equal('email-taken');
      const login = await new HttpClient(app.url).post('/api/auth/login', { email: 'eve@example.com', password: 'eve-Password-5520' });
      expect(login.status).to.equal(200);
    });

    it('tag.create: the name can be used right after (the row appended, the claim settled)', async () => {
      await refuse('TagCreated');
      const failed = await admin.post('/api/model/tag/create', { data: { name: 'Nightly' } });
      expect(failed.status, JSON.stringify(failed.body)).to.equal(500);
      await allow();
      const created = await admin.post('/api/model/tag/create', { data: { name: 'nightly' } });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const claims = (await app.deps.store.readAll({ maxCount: 10_000 })).filter((e) => e.type.startsWith('UniqueValue') && (e.data as { scope: string }).scope === 'tag.name');
      const firstOwner = (claims[0].data as { ownerId: number }).ownerId;
      expect(claims.map((e) => [e.type, (e.data as { ownerId: number }).ownerId])).to.deep.equal([
        ['UniqueValueClaimed', firstOwner], ['UniqueValueReleased', firstOwner], ['UniqueValueClaimed', created.body.data.id],
      ]);
      expect(await claimsRow(claims[0].streamId)).to.deep.equal({ state: 'settled', owner_id: created.body.data.id, owner_stream: `tag-${created.body.data.id}` });
      const duplicate = await admin.post('/api/model/tag/create', { data: { name: 'NIGHTLY' } });
      expect(duplicate.status).to.equal(409);
    });
  });

  describe('a write its event contracts refuse claims nothing', () => {
    // The real contracts with one rule more, which the catalogue's own checks do not know: no role named "Forbidden".
    const real = loadContracts();
    const stricter: ContractValidator = {
      ...real,
      check: (event) => {
        const data = event.data as { name?: string; changes?: { name?: string } };
        if (/^Role(Created|Updated)$/.test(event.type) && (data.name ?? data.changes?.name) === 'Forbidden') throw new ContractViolation(event.type, [{ message: 'refused by the test' }]);
        real.check(event);
      },
    };
    const strictDeps = () => ({ ...app.deps, store: withContracts(app.deps.store, stricter) });
    const attempt = async (write: () => Promise<unknown>) => {
      const head = (await app.deps.store.headPosition()).toString();
      let error: unknown = null;
      await write().catch((e: unknown) => (error = e));
      expect(error).to.be.instanceOf(ContractViolation);
      expect((await app.deps.store.headPosition()).toString(), 'nothing appended: no id block, no claim').to.equal(head);
    };

    it('create', () => attempt(() => createEntity(strictDeps(), 'role', { data: { name: 'Forbidden' }, connect: {} }, systemMetadata('test'))));

    it('update', async () => {
      const id = await createEntity(strictDeps(), 'role', { data: { name: 'Allowed' }, connect: {} }, systemMetadata('test'));
      await attempt(() => updateEntity(strictDeps(), 'role', id, { data: { name: 'Forbidden' }, connect: {} }, systemMetadata('test')));
    });
  });

  describe('the writer stopped between the claim and the row: the reconciler releases the claim', () => {
    it('an e-mail claimed by a user who never appeared is free once the grace period is over', async () => {
      const stream = emailReservationStream('ghost@example.com');
      await claimAlone(stream, { scope: 'user.email', value: 'ghost@example.com', ownerId: 999_001 });
      expect(await claimsRow(stream)).to.deep.equal({ state: 'pending', owner_id: 999_001, owner_stream: 'user-999001' });
      const taken = await admin.post('/api/model/user/create', { data: { email: 'ghost@example.com', name: 'Ghost', password: 'ghost-Password-1' } });
      expect(taken.status).to.equal(409);

      // Within the grace period: left alone.
      expect(await pass(app, logger, new Date())).to.deep.equal({ released: 0, settled: 0, unchanged: 0 });
      const released = await pass(app, logger, inAMinute());
      expect(released.released).to.equal(1);
      expect(await streamTypes(stream)).to.deep.equal([['UniqueValueClaimed', null], ['UniqueValueReleased', 'owner-never-appeared']]);
      expect(logLines.find((l) => l.msg === 'released a unique value whose owner never appeared' && l.claimStream === stream), 'logged').to.include({ scope: 'user.email', ownerId: 999_001 });

      const created = await admin.post('/api/model/user/create', { data: { email: 'ghost@example.com', name: 'Ghost', password: 'ghost-Password-1' } });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      expect(await claimsRow(stream)).to.deep.equal({ state: 'settled', owner_id: created.body.data.id, owner_stream: `user-${created.body.data.id}` });
      // Nothing left to do; a later pass changes nothing.
      expect(await pass(app, logger, inAMinute())).to.deep.equal({ released: 0, settled: 0, unchanged: 0 });
    });

    it('a role name claimed for a role that never appeared, likewise; claims whose owner exists are settled, never released', async () => {
      const roles = (await admin.post('/api/model/role/create', { data: { name: 'Auditor' } })).body.data;
      // A rename claims the new name for a row that began long before: the projection cannot tell, the reconciler asks the store.
      expect((await admin.post('/api/model/role/update', { where: { id: roles.id }, data: { name: 'Inspector' } })).status).to.equal(200);
      const renamed = (await app.deps.store.readAll({ maxCount: 10_000 })).filter((e) => e.type === 'UniqueValueClaimed' && (e.data as { value: string }).value === 'inspector');
      expect(await claimsRow(renamed[0].streamId)).to.include({ state: 'pending' });

      const orphan = (await app.deps.store.readAll({ maxCount: 10_000 })).find((e) => e.type === 'UniqueValueClaimed' && (e.data as { value: string }).value === 'auditor')!;
      const ghostStream = orphan.streamId.replace('auditor', 'reviewer');
      await claimAlone(ghostStream, { scope: 'role.name', value: 'reviewer', ownerId: 999_002 });
      expect((await admin.post('/api/model/role/create', { data: { name: 'Reviewer' } })).status).to.equal(409);

      const result = await pass(app, logger, inAMinute());
      expect(result).to.include({ released: 1 });
      expect(result.settled).to.be.at.least(1);
      expect(await claimsRow(renamed[0].streamId)).to.include({ state: 'settled' });
      expect(await streamTypes(renamed[0].streamId)).to.deep.equal([['UniqueValueClaimed', null]]);
      expect((await admin.post('/api/model/role/create', { data: { name: 'Inspector' } })).status, 'the renamed role holds its name').to.equal(409);
      expect((await admin.post('/api/model/role/create', { data: { name: 'Reviewer' } })).status).to.equal(201);
    });

    it('runs in the background where the API runs: bounded passes, logged, stopped cleanly', async () => {
      const stream = emailReservationStream('background@example.com');
      await claimAlone(stream, { scope: 'user.email', value: 'background@example.com', ownerId: 999_003 });
      const reconciler = startClaimReconciler({ store: app.deps.store, knex: app.deps.knex, logger }, { intervalMs: 50, graceMs: 0, batchSize: 1 });
      try {
        for (let i = 0; i < 200 && (await streamTypes(stream)).length < 2; i++) await new Promise((r) => setTimeout(r, 50));
        expect(await streamTypes(stream)).to.deep.equal([['UniqueValueClaimed', null], ['UniqueValueReleased', 'owner-never-appeared']]);
        expect(reconciler.status()).to.include({ state: 'running', lastError: null });
        expect(reconciler.status().released).to.be.at.least(1);
        expect(logLines.some((l) => l.msg === 'unique-value claims reconciled')).to.equal(true);
      } finally {
        await reconciler.stop();
      }
      expect(reconciler.status().state).to.equal('stopped');
    });
  });

  describe('the reconciler never retries forever', () => {
    it('a database that is away: retried with backoff within the retry budget, then stopped and logged once', async () => {
      const lines: Record<string, unknown>[] = [];
      const away = createKnex('postgres://postgres@127.0.0.1:1/none', 1, { warn: () => undefined, error: () => undefined });
      const reconciler = startClaimReconciler(
        { store: app.deps.store, knex: away, logger: pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) }) },
        { intervalMs: 10, retry: { budgetMs: 300, firstMs: 20, maxMs: 50 } },
      );
      try {
        for (let i = 0; i < 200 && reconciler.status().state !== 'failed'; i++) await new Promise((r) => setTimeout(r, 25));
        expect(reconciler.status().state).to.equal('failed');
        expect(lines.filter((l) => l.msg === 'claim reconciler pass failed; retrying').length).to.be.at.least(2);
        const failures = lines.filter((l) => l.msg === 'claim reconciler failed; stopped until restarted');
        expect(failures).to.have.length(1);
        expect((failures[0].err as { message: string }).message).to.match(/^gave up after \d+ failed attempts/);
      } finally {
        await reconciler.stop();
        await away.destroy();
      }
    });

    it('anything else (no claims table): stopped at the first failure, logged once', async () => {
      const db = await createTestDatabase('noclaims');
      const bare = createKnex(db.url);
      const lines: Record<string, unknown>[] = [];
      const reconciler = startClaimReconciler(
        { store: app.deps.store, knex: bare, logger: pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) }) }, { intervalMs: 10 },
      );
      try {
        for (let i = 0; i < 200 && reconciler.status().state !== 'failed'; i++) await new Promise((r) => setTimeout(r, 25));
        expect(reconciler.status().state).to.equal('failed');
        expect(lines.filter((l) => l.level === 50)).to.have.length(1);
        expect(lines.filter((l) => l.msg === 'claim reconciler pass failed; retrying')).to.deep.equal([]);
      } finally {
        await reconciler.stop();
        await bare.destroy();
        await db.drop();
      }
    });
  });
});
