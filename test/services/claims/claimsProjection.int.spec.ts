import { expect } from 'chai';
import type { Knex } from 'knex';
import type { EventEnvelope } from '../../../contracts/envelope';
import { createKnex } from '../../../infra/postgres/database';
import { claimsProjection } from '../../../projections/claims';
import { migrateReadModel } from '../../../projections/migrations';
import { createMigratedDatabase, type TestDatabase } from '../../support/database';
import { at, envelopes, twice } from '../../projections/envelopes';

const PASSWORD_HASH = '$argon2id$v=19$m=19456,t=2,p=1$YWRh$YWRhYWRh';

// Ada's e-mail is claimed and Ada registered; a tag name is claimed for a tag that never comes and
// released; the name is claimed again by another tag that is created; a role is renamed (its new
// name claimed after the role began); an import's upload claim has no owner row; other events
// are interleaved.
const EVENTS = envelopes([
  ['uniqueEmail-ada@example.com', { type: 'UniqueValueClaimed', data: { scope: 'user.email', value: 'ada@example.com', ownerId: 1 } }],
  ['user-1', { type: 'UserRegistered', data: { userId: 1, email: 'ada@example.com', name: 'Ada', passwordHash: PASSWORD_HASH, access: 'ADMIN', roleId: null, createdAt: at(1) } }],
  ['unique-tag.name-nightly', { type: 'UniqueValueClaimed', data: { scope: 'tag.name', value: 'nightly', ownerId: 5 } }],
  ['project-1', { type: 'ProjectCreated', data: { projectId: 1, name: 'Checkout', createdAt: at(2) } }],
  ['unique-tag.name-nightly', { type: 'UniqueValueReleased', data: { scope: 'tag.name', value: 'nightly', ownerId: 5, reason: 'owner-write-failed' } }],
  ['unique-tag.name-nightly', { type: 'UniqueValueClaimed', data: { scope: 'tag.name', value: 'nightly', ownerId: 6 } }],
  ['tag-6', { type: 'TagCreated', data: { tagId: 6, name: 'Nightly', createdAt: at(3) } }],
  ['role-3', { type: 'RoleCreated', data: { roleId: 3, name: 'Auditor', isDefault: false, createdAt: at(4) } }],
  ['unique-role.name-inspector', { type: 'UniqueValueClaimed', data: { scope: 'role.name', value: 'inspector', ownerId: 3 } }],
  ['uploadClaim-1', { type: 'UniqueValueClaimed', data: { scope: 'import.upload', value: 'abc', ownerId: 9 } }],
  ['uniqueEmail-ghost@example.com', { type: 'UniqueValueClaimed', data: { scope: 'user.email', value: 'ghost@example.com', ownerId: 2 } }],
]);

const EXPECTED = [
  { stream_id: 'unique-role.name-inspector', scope: 'role.name', value: 'inspector', owner_id: 3, owner_stream: 'role-3', state: 'pending', revision: '0' },
  { stream_id: 'unique-tag.name-nightly', scope: 'tag.name', value: 'nightly', owner_id: 6, owner_stream: 'tag-6', state: 'settled', revision: '2' },
  { stream_id: 'uniqueEmail-ada@example.com', scope: 'user.email', value: 'ada@example.com', owner_id: 1, owner_stream: 'user-1', state: 'settled', revision: '0' },
  { stream_id: 'uniqueEmail-ghost@example.com', scope: 'user.email', value: 'ghost@example.com', owner_id: 2, owner_stream: 'user-2', state: 'pending', revision: '0' },
];

describe('the claims projection (projections/claims.ts)', function () {
  this.timeout(60_000);
  let db: TestDatabase;
  let knex: Knex;

  before(async () => {
    db = await createMigratedDatabase('claims');
    knex = createKnex(db.url);
    await migrateReadModel(knex);
  });
  beforeEach(() => knex('unique_claims').del());
  after(async () => {
    await knex?.destroy();
    await db?.drop();
  });

  const apply = (events: EventEnvelope[]) => knex.transaction((trx) => claimsProjection.apply(trx, events));
  const rows = () => knex('unique_claims').orderBy('stream_id').select('stream_id', 'scope', 'value', 'owner_id', 'owner_stream', 'state', 'revision');

  it('one row per claim stream: its last claim, settled once its owner began, released when given up; each event twice changes nothing', async () => {
    await apply(twice(EVENTS));
    // The role's first event is in the claim's batch: settled with the batch.
    expect(await rows()).to.deep.equal([{ ...EXPECTED[0], state: 'settled' }, ...EXPECTED.slice(1)]);
    const claimedAt = await knex('unique_claims').where({ stream_id: 'uniqueEmail-ada@example.com' }).first('claimed_at');
    expect(claimedAt.claimed_at.toISOString()).to.equal(at(59));
  });

  it('in batches of one: a claim whose owner began in an earlier batch (a rename) stays pending; redelivered, no claim goes back', async () => {
    for (const e of EVENTS) await apply([e]);
    expect(await rows()).to.deep.equal(EXPECTED);
    for (const e of EVENTS) await apply([e]);
    // The role's first event seen again, after its claim: settled (the role exists), the rest as they were.
    expect(await rows()).to.deep.equal([{ ...EXPECTED[0], state: 'settled' }, ...EXPECTED.slice(1)]);
  });

  it('a release, then the stream\'s earlier claim delivered again: still released', async () => {
    const tag = EVENTS.filter((e) => e.streamId === 'unique-tag.name-nightly');
    await apply([tag[0], tag[1]]);
    await apply([tag[0]]);
    expect(await rows()).to.deep.equal([{ ...EXPECTED[1], owner_id: 5, owner_stream: 'tag-5', state: 'released', revision: '1' }]);
  });

  it('an owner that began before its claim arrived (another Kafka partition) leaves the claim pending, for the reconciler', async () => {
    const [claim, registered] = EVENTS;
    await apply([registered]);
    await apply([claim]);
    expect(await rows()).to.deep.equal([{ ...EXPECTED[2], state: 'pending' }]);
  });
});
