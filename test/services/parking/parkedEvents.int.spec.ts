// Parked events as a writer, a CI upload and an administrator meet them, over HTTP against the real
// app: the read model is made to throw on chosen events (as it did on a key too long for its index).
// A write whose own event is parked answers 500 event-parked at once, naming the read model; an
// import into it ends with event-parked; administrators are told once, list the parked events and
// retry them after the fault is gone; the retry is in the log with its actor.
import { expect } from 'chai';
import pino from 'pino';
import type { EventEnvelope } from '../../../contracts/envelope';
import { ALL_PROJECTIONS } from '../../../projections';
import { readModelProjection } from '../../../projections/readModel';
import type { Projection } from '../../../projections/runtime/projection';
import { startParkingNotices } from '../../../services/parking/notices';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { startTestApp, type TestApp } from '../../support/app';
import { expectError } from '../../support/errors';
import { importingAdmin } from '../../imports/importClient';
import { HttpClient } from '../../support/server';
import { waitUntil } from '../../support/wait';

const POISON = 'a project the read model refuses';
const POISON_CASE = 'shouldBreakTheReadModel';

/** The read model, throwing (while `fault.on`) on a project created with the poison name, and on an import chunk holding the poison case. */
function refusingReadModel(fault: { on: boolean }): Projection {
  const culprit = (e: EventEnvelope) => (e.type === 'ProjectCreated' && (e.data as { name?: string }).name === POISON)
    || (e.type === 'TestResultsImported' && JSON.stringify(e.data).includes(POISON_CASE));
  return {
    ...readModelProjection,
    async apply(trx, events) {
      if (fault.on && events.some(culprit)) throw new Error('index row size 3048 exceeds btree version 4 maximum 2704 for index "repository_cases_identity"');
      return readModelProjection.apply(trx, events);
    },
    rebuilding: undefined,
  };
}

describe('parked events over HTTP: the writer learns it, administrators are told and retry', function () {
  this.timeout(120_000);
  const fault = { on: true };
  let app: TestApp;
  let admin: HttpClient;
  let tester: HttpClient;
  let upload: Awaited<ReturnType<typeof importingAdmin>>['upload'];
  let projectId: number;

  before(async () => {
    app = await startTestApp({ projections: ALL_PROJECTIONS.map((p) => (p.name === readModelProjection.name ? refusingReadModel(fault) : p)) });
    ({ admin, upload, projectId } = await importingAdmin(app, 'Parking'));
    await registerUser(app.deps, { email: 'tess@example.com', name: 'Tess', password: 'tester-password-1', access: 'USER' }, systemMetadata('test'));
    tester = new HttpClient(app.url);
    expect((await tester.post('/api/auth/login', { email: 'tess@example.com', password: 'tester-password-1' })).status).to.equal(200);
  });
  after(() => app?.stop());

  it('a write whose event the read model parks answers 500 event-parked naming it, without waiting for the write timeout', async () => {
    const res = await admin.post('/api/model/project/create', { data: { name: POISON } });
    // Had it waited for the read model, it would be a 503 read-model-lagging after WRITE_TIMEOUT_MS.
    expectError(res, 500, 'event-parked');
    expect(res.body.details).to.include.keys('position', 'projections', 'correlationId');
    expect(res.body.details.projections).to.deep.equal(['readModel']);
    expect(res.body.error).to.match(/recorded .* Do not repeat the write/);
    expect(res.headers.get('x-event-position')).to.equal(res.body.details.position);
    // Recorded, not shown; everything else goes on.
    expect((await app.deps.store.readAll({ after: String(BigInt(res.body.details.position) - 1n), maxCount: 1 }))[0]).to.deep.include({ type: 'ProjectCreated' });
    expect((await admin.post('/api/model/project/findMany', { where: { name: POISON } })).body.data).to.deep.equal([]);
    expect((await admin.post('/api/model/project/create', { data: { name: 'an ordinary project' } })).status).to.equal(201);
  });

  it('an import whose chunk the read model parks completes as a job and ends with event-parked; the job says which read model', async () => {
    const junit = `<testsuite name="s"><testcase classname="com.example.Parked" name="${POISON_CASE}"/><testcase classname="com.example.Parked" name="fine"/></testsuite>`;
    const answer = await upload({ format: 'junit', name: 'CI run' }, [{ name: 'TEST-parked.xml', content: junit }]);
    expect(answer.status, JSON.stringify(answer.body)).to.equal(200);
    const last = answer.events.at(-1);
    expect(last, JSON.stringify(answer.events)).to.include({ code: 'event-parked' });
    expect(last.details.projections).to.deep.equal(['readModel']);
    const job = await admin.get(`/api/imports/${last.details.jobId}`);
    expect(job.status).to.equal(200);
    expect(job.body.data).to.deep.include({ state: 'completed' });
    expect(job.body.data.parked).to.deep.equal({ projections: ['readModel'], position: last.details.position });
  });

  it('administrators list the parked events (others may not), are told once, and retry them after the fault is gone', async () => {
    expectError(await tester.get('/api/admin/parked-events'), 403, 'forbidden');
    expectError(await admin.get('/api/admin/parked-events?projection=nope'), 400, 'invalid-argument');
    expectError(await admin.get('/api/admin/parked-events?take=0'), 400, 'invalid-argument');
    expectError(await admin.get('/api/admin/parked-events?sort=id'), 400, 'invalid-argument');
    const listed = await admin.get('/api/admin/parked-events?kind=failed');
    expect(listed.status, JSON.stringify(listed.body)).to.equal(200);
    expect(listed.body.data.map((p: { eventType: string }) => p.eventType).sort()).to.deep.equal(['ProjectCreated', 'TestResultsImported']);
    expect(listed.body.data[0]).to.include({ projection: 'readModel', kind: 'failed', attempts: 3, resolvedAt: null });
    expect(listed.body.parked).to.deep.equal([{ projection: 'readModel', failed: 2, held: listed.body.parked[0].held, invalid: 0 }]);
    expect(listed.body.parked[0].held, 'the import job\'s later events, held behind its chunk').to.be.greaterThan(0);

    // Told once: two rounds (a restart between them) send one notification per parked batch.
    const notices = startParkingNotices(app.deps, pino({ level: 'silent' }));
    await waitUntil(async () => (await admin.get('/api/notifications')).body.data.some((n: { kind: string }) => n.kind === 'events-parked'), 'the administrator to be told');
    await notices.stop();
    const again = startParkingNotices(app.deps, pino({ level: 'silent' }));
    await again.stop();
    const told = (await admin.get('/api/notifications')).body.data.filter((n: { kind: string }) => n.kind === 'events-parked');
    expect(told).to.have.length(1);
    expect(told[0]).to.include({ link: '/api/admin/parked-events' });
    expect(told[0].title).to.equal('2 events could not be applied and were parked');
    expect((await tester.get('/api/notifications')).body.data).to.deep.equal([]);

    expectError(await admin.post('/api/admin/parked-events/retry', { ids: [] }), 400, 'invalid-argument');
    expectError(await admin.post('/api/admin/parked-events/retry', { projection: 'readModel', all: true }), 400, 'invalid-argument');
    expectError(await tester.post('/api/admin/parked-events/retry', {}), 403, 'forbidden');

    fault.on = false;
    const retried = await admin.post('/api/admin/parked-events/retry', { projection: 'readModel' });
    expect(retried.status, JSON.stringify(retried.body)).to.equal(200);
    expect(retried.body.stillParked).to.deep.equal([]);
    expect(retried.body.resolved).to.equal(2 + listed.body.parked[0].held);
    expect(retried.body.parked).to.deep.equal([]);
    const [recorded] = await app.deps.store.readAll({ after: String(BigInt(retried.headers.get('x-event-position')!) - 1n), maxCount: 1 });
    expect(recorded).to.deep.include({ type: 'ParkedEventsRetried', streamId: 'projectionAdministration' });
    expect(recorded.data).to.deep.include({ projection: 'readModel', ids: null, stillParked: 0 });
    expect(recorded.metadata.actor).to.include({ via: 'session' });

    // What the parked events changed is shown now.
    expect((await admin.post('/api/model/project/findMany', { where: { name: POISON } })).body.data).to.have.length(1);
    const cases = await admin.post('/api/model/repositoryCase/findMany', { where: { projectId, title: POISON_CASE } });
    expect(cases.body.data).to.have.length(1);
    expect((await admin.get('/api/admin/parked-events?state=resolved')).body.data.every((p: { resolution: string }) => p.resolution === 'retried')).to.equal(true);
  });
});
