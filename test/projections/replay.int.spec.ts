import { expect } from 'chai';
import { ALL_PROJECTIONS, projectionByName } from '../../projections';
import { ReplayError, replayIntoSchema } from '../../projections/runtime/replay';
import { registerUser } from '../../services/identity/identity.handlers';
import { systemMetadata } from '../../services/shared/context';
import { startTestApp, type TestApp } from '../support/app';
import { HttpClient } from '../support/server';
import { waitUntil } from '../support/wait';

/**
 * `npm run replay` (projections/runtime/replay.ts) against a real event store: projections built
 * as of a point into a schema of their own hold exactly what the live read model held at that
 * point, and the live read model is not touched.
 */
describe('replay: projections as of a point, into a schema of their own', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: HttpClient;
  let point: string;
  let snapshot: unknown[];
  const SCHEMA = 'replay_test';

  const create = async (entity: string, data: unknown) => {
    const res = await admin.post(`/api/model/${entity}/create`, { data });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.data.id as number;
  };
  /** Once every projection has applied the log's head. */
  const settled = async () => {
    const head = BigInt(await app.deps.store.headPosition());
    await waitUntil(async () => {
      const rows = (await app.deps.knex('projection_checkpoints').whereIn('name', ALL_PROJECTIONS.map((p) => p.name)).select('name', 'position')) as { position: string }[];
      return rows.length === ALL_PROJECTIONS.length && rows.every((r) => BigInt(r.position) >= head);
    }, 'the projections caught up');
  };
  const projects = (schema: string) => app.deps.knex.withSchema(schema).from('projects').orderBy('id').select('id', 'name', 'is_deleted');

  before(async () => {
    app = await startTestApp();
    await registerUser(app.deps, { email: 'admin@example.com', name: 'Ada', password: 'replay-password-1', access: 'ADMIN' }, systemMetadata('test'));
    admin = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'admin@example.com', password: 'replay-password-1' })).status).to.equal(200);
    const shop = await create('project', { name: 'Shop' });
    await create('repositoryCase', { title: 'Pay', project: { connect: { id: shop } } });
    await settled();
    point = await app.deps.store.headPosition();
    snapshot = await projects('public');
    // Later: a rename, a deletion, another project.
    expect((await admin.post('/api/model/project/update', { where: { id: shop }, data: { name: 'Shop 2' } })).status).to.equal(200);
    await create('project', { name: 'Later' });
    await settled();
  });
  after(async () => {
    await app?.deps.knex.raw(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`);
    await app?.stop();
  });

  it('builds every projection as of a position: the tables as the live read model had them then, the live one untouched', async () => {
    const result = await replayIntoSchema(ALL_PROJECTIONS, { store: app.deps.store, databaseUrl: app.databaseUrl, schema: SCHEMA, until: { position: point } });
    expect(result.until).to.equal(point);
    expect(result.projections.map((p) => p.projection)).to.deep.equal(ALL_PROJECTIONS.map((p) => p.name));
    expect(await projects(SCHEMA)).to.deep.equal(snapshot);
    expect((await projects('public')).map((p: { name: string }) => p.name)).to.deep.equal(['Shop 2', 'Later']);
    const audited = await app.deps.knex.withSchema(SCHEMA).from('audit_events').max('position as max').first();
    expect(String(audited!.max)).to.equal(point);
    const [recorded] = await app.deps.knex.withSchema(SCHEMA).from('replay').select('until_position', 'projections');
    expect(String(recorded.until_position)).to.equal(point);
    expect(recorded.projections).to.include('readModel');
  });

  it('takes a time as the last position recorded at or before it, and replaces a schema only when asked', async () => {
    const [event] = await app.deps.store.readAll({ after: String(BigInt(point) - 1n), maxCount: 1 });
    const readModel = [projectionByName('readModel')!, projectionByName('identity')!];
    await expectRefused(() => replayIntoSchema(readModel, { store: app.deps.store, databaseUrl: app.databaseUrl, schema: SCHEMA, until: null }), /exists/);
    const byTime = await replayIntoSchema(readModel, { store: app.deps.store, databaseUrl: app.databaseUrl, schema: SCHEMA, until: { time: event.recordedAt }, replace: true });
    expect(BigInt(byTime.until) >= BigInt(point), 'every event recorded by then').to.equal(true);
    const whole = await replayIntoSchema(readModel, { store: app.deps.store, databaseUrl: app.databaseUrl, schema: SCHEMA, until: null, replace: true });
    expect(whole.until).to.equal(await app.deps.store.headPosition());
    expect(await projects(SCHEMA)).to.deep.equal(await projects('public'));
  });

  it('refuses the live schema, a bad name and a point past the head, leaving nothing behind', async () => {
    const run = (schema: string, until: { position: string } | null = null) =>
      replayIntoSchema(ALL_PROJECTIONS, { store: app.deps.store, databaseUrl: app.databaseUrl, schema, until, replace: true });
    await expectRefused(() => run('public'), /must be a lower-case PostgreSQL name/);
    await expectRefused(() => run('Bad-Name'), /must be a lower-case PostgreSQL name/);
    await expectRefused(() => run('replay_future', { position: '999999999' }), /past the log's head/);
    const left = await app.deps.knex.raw("SELECT 1 FROM pg_namespace WHERE nspname = 'replay_future'");
    expect(left.rows).to.deep.equal([]);
  });
});

async function expectRefused(run: () => Promise<unknown>, message: RegExp): Promise<void> {
  try {
    await run();
  } catch (err) {
    expect(err).to.be.instanceOf(ReplayError);
    expect((err as Error).message).to.match(message);
    return;
  }
  expect.fail('the replay was not refused');
}
