import { expect } from 'chai';
import { ENTITIES } from '../../../contracts/entities';
import { identityProjection } from '../../../projections/identity';
import { rebuildProjection } from '../../../projections/runtime/rebuild';
import { registerUser } from '../../../services/identity/identity.handlers';
import { systemMetadata } from '../../../services/shared/context';
import { startTestApp, type TestApp } from '../../support/app';
import { HttpClient } from '../../support/server';

/** Every answer this suite receives, to prove that none carries a password or a hash. */
const answers: string[] = [];

class RecordingClient extends HttpClient {
  override async request(method: string, path: string, body?: unknown, raw?: string) {
    const res = await super.request(method, path, body, raw);
    answers.push(JSON.stringify(res.body));
    return res;
  }
}

const ROOT_PASSWORD = 'root-Password-7431';
const EVE_PASSWORD = 'eve-Password-5520';
const DAN_PASSWORD = 'dan-Password-9907';
const DAN_NEW_PASSWORD = 'dan-Renewed-8842';
const PASSWORDS = [ROOT_PASSWORD, EVE_PASSWORD, DAN_PASSWORD, DAN_NEW_PASSWORD];
const ROW_FIELDS = Object.keys(ENTITIES.user.fields);

/** Users as an event-sourced aggregate, managed through the model API by an administrator. */
describe('users through the model API', function () {
  this.timeout(120_000);
  let app: TestApp;
  let admin: RecordingClient;
  let adminId: number;
  const roles: Record<string, number> = {};

  const head = async () => (await app.deps.store.headPosition()).toString();
  const model = (op: string, body: unknown, client: HttpClient = admin) => client.post(`/api/model/user/${op}`, body);
  const create = async (data: Record<string, unknown>, client: HttpClient = admin) => {
    const res = await model('create', { data }, client);
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    return res.body.data;
  };
  /** A refused write: its status and code, the path it names, and nothing appended. */
  const refused = async (op: string, body: unknown, status: number, code: string, path?: string) => {
    const before = await head();
    const res = await model(op, body);
    expect(res.status, JSON.stringify(res.body)).to.equal(status);
    expect(res.body.code).to.equal(code);
    if (path !== undefined) expect(res.body.details.path).to.equal(path);
    expect(await head(), 'a refused write appends nothing').to.equal(before);
    return res.body;
  };
  const login = async (email: string, password: string) => {
    const c = new RecordingClient(app.url);
    const res = await c.post('/api/auth/login', { email, password });
    return { client: c, status: res.status, code: res.body?.code as string | undefined };
  };
  const eventsOf = async (userId: number) => (await app.deps.store.readStream(`user-${userId}`)).map((e) => ({ type: e.type, data: e.data }));

  before(async () => {
    app = await startTestApp();
    adminId = await registerUser(app.deps, { email: 'root@example.com', name: 'Root', password: ROOT_PASSWORD, access: 'ADMIN' }, systemMetadata('test'));
    admin = new RecordingClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'root@example.com', password: ROOT_PASSWORD })).status).to.equal(200);
    for (const name of ['Tester', 'Lead', 'Retired']) {
      const res = await admin.post('/api/model/role/create', { data: { name } });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      roles[name] = res.body.data.id;
    }
    expect((await admin.post('/api/model/role/delete', { where: { id: roles.Retired } })).status).to.equal(200);
  });
  after(() => app.stop());

  describe('create', () => {
    it('answers 201 with the row (e-mail normalised, defaults applied) and no password field; the user can log in', async () => {
      const eve = await create({ email: '  Eve@Example.COM ', name: 'Eve', password: EVE_PASSWORD, role: { connect: { id: roles.Tester } } });
      expect(Object.keys(eve)).to.have.members(ROW_FIELDS);
      expect(eve).to.deep.include({ email: 'eve@example.com', name: 'Eve', access: 'USER', isActive: true, roleId: roles.Tester, isDeleted: false });
      expect(eve.updatedAt).to.equal(eve.createdAt);
      expect((await login('eve@example.com', EVE_PASSWORD)).status).to.equal(200);
      const [registered] = await eventsOf(eve.id);
      expect(registered.type).to.equal('UserRegistered');
      expect((registered.data as { passwordHash: string }).passwordHash).to.match(/^\$argon2id\$/);
      const withRole = await model('findUnique', { where: { id: eve.id }, include: { role: true } });
      expect(withRole.body.data.role.name).to.equal('Tester');
    });

    it('creates an inactive user that cannot log in, and an administrator', async () => {
      const idle = await create({ email: 'idle@example.com', name: 'Idle', password: 'idle-Password-1', isActive: false, access: 'PROJECTADMIN' });
      expect(idle).to.deep.include({ isActive: false, access: 'PROJECTADMIN', roleId: null });
      expect((await eventsOf(idle.id)).map((e) => e.type)).to.deep.equal(['UserRegistered', 'UserDeactivated']);
      expect((await login('idle@example.com', 'idle-Password-1')).code).to.equal('invalid-credentials');
      const other = await create({ email: 'admin2@example.com', name: 'Second admin', password: 'admin2-Password-1', access: 'ADMIN' });
      expect(other.access).to.equal('ADMIN');
    });

    it('an e-mail already taken, in any case or spacing, is 409 email-taken', async () => {
      await refused('create', { data: { email: ' EVE@example.com', name: 'Other Eve', password: 'other-Password-1' } }, 409, 'email-taken', 'data.email');
    });

    it('refuses bad input with 400 naming the field, and unknown or deleted roles with 404 role-not-found', async () => {
      const data = { email: 'new@example.com', name: 'New', password: 'new-Password-1' };
      const { password: _password, ...withoutPassword } = data;
      await refused('create', { data: withoutPassword }, 400, 'invalid-argument', 'data.password');
      await refused('create', { data: { ...data, password: 'short-7' } }, 400, 'invalid-argument', 'data.password');
      await refused('create', { data: { ...data, password: 'x'.repeat(1025) } }, 400, 'invalid-argument', 'data.password');
      await refused('create', { data: { ...data, password: 12345678 } }, 400, 'invalid-argument', 'data.password');
      await refused('create', { data: { ...data, email: 'not-an-address' } }, 400, 'invalid-argument', 'data.email');
      await refused('create', { data: { ...data, name: '   ' } }, 400, 'invalid-argument', 'data.name');
      await refused('create', { data: { ...data, access: 'ROOT' } }, 400, 'invalid-argument', 'data.access');
      await refused('create', { data: { ...data, passwordHash: '$argon2id$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA' } }, 400, 'invalid-argument', 'data.passwordHash');
      await refused('create', { data: { ...data, isDeleted: true } }, 400, 'invalid-argument', 'data.isDeleted');
      await refused('create', { data: { ...data, role: { connect: { id: 999_999 } } } }, 404, 'role-not-found');
      await refused('create', { data: { ...data, role: { connect: { id: roles.Retired } } } }, 404, 'role-not-found');
      // The refused password is not echoed back.
      const res = await model('create', { data: { ...data, password: 'short-7' } });
      expect(JSON.stringify(res.body)).to.not.include('short-7');
    });
  });

  describe('update', () => {
    let userId: number;
    before(async () => {
      userId = (await create({ email: 'upd@example.com', name: 'Upd', password: 'upd-Password-1' })).id;
    });

    it('changes name, access and role; records only what changed', async () => {
      app.clock.advance(60_000);
      const res = await model('update', { where: { id: userId }, data: { name: 'Updated', access: 'PROJECTADMIN', role: { connect: { id: roles.Lead } } } });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(Object.keys(res.body.data)).to.have.members(ROW_FIELDS);
      expect(res.body.data).to.deep.include({ name: 'Updated', access: 'PROJECTADMIN', roleId: roles.Lead, email: 'upd@example.com' });
      expect(res.body.data.updatedAt).to.equal(app.clock.now.toISOString());
      expect(res.body.data.createdAt).to.not.equal(res.body.data.updatedAt);
      const last = (await eventsOf(userId)).pop()!;
      expect(last.type).to.equal('UserUpdated');
      expect((last.data as { changes: unknown }).changes).to.deep.equal({ name: 'Updated', access: 'PROJECTADMIN', roleId: roles.Lead });
    });

    it('the same values again change nothing and append nothing', async () => {
      const before = await head();
      const res = await model('update', { where: { id: userId }, data: { name: 'Updated', access: 'PROJECTADMIN', isActive: true, role: { connect: { id: roles.Lead } } } });
      expect(res.status).to.equal(200);
      expect(await head()).to.equal(before);
    });

    it('takes the role away with disconnect', async () => {
      const res = await model('update', { where: { id: userId }, data: { role: { disconnect: true } } });
      expect(res.body.data.roleId).to.equal(null);
    });

    it('refuses an e-mail change (even to the same address) with 400 data.email, an unknown user with 404, a deleted role with 404', async () => {
      await refused('update', { where: { id: userId }, data: { email: 'other@example.com' } }, 400, 'invalid-argument', 'data.email');
      await refused('update', { where: { id: userId }, data: { email: 'upd@example.com', name: 'X' } }, 400, 'invalid-argument', 'data.email');
      await refused('update', { where: { id: 999_999 }, data: { name: 'X' } }, 404, 'user-not-found');
      await refused('update', { where: { id: userId }, data: { role: { connect: { id: roles.Retired } } } }, 404, 'role-not-found');
      await refused('update', { where: { id: userId }, data: { password: 'short' } }, 400, 'invalid-argument', 'data.password');
      await refused('update', { where: { id: userId }, data: { isDeleted: true } }, 400, 'invalid-argument', 'data.isDeleted');
    });
  });

  describe('deactivation, reactivation, password', () => {
    let danId: number;
    let danSession: HttpClient;
    let danToken: string;
    let danBearer: HttpClient;

    before(async () => {
      danId = (await create({ email: 'dan@example.com', name: 'Dan', password: DAN_PASSWORD })).id;
      const dan = await login('dan@example.com', DAN_PASSWORD);
      expect(dan.status).to.equal(200);
      danSession = dan.client;
      const token = await danSession.post('/api/tokens', { name: 'ci' });
      expect(token.status, JSON.stringify(token.body)).to.equal(201);
      danToken = token.body.token;
      danBearer = new RecordingClient(app.url, danToken);
    });

    it('deactivating ends the user\'s access at once: the next bearer request is 401, the session cookie is 401, login is refused', async () => {
      // The token's lookup is cached now; the deactivation must still be seen on the very next request.
      for (let i = 0; i < 3; i++) expect((await danBearer.get('/api/auth/me')).status).to.equal(200);
      expect((await danSession.get('/api/auth/me')).status).to.equal(200);
      const res = await model('update', { where: { id: danId }, data: { isActive: false } });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body.data.isActive).to.equal(false);
      const bearer = await danBearer.get('/api/auth/me');
      expect(bearer.status).to.equal(401);
      expect(bearer.body.code).to.equal('invalid-token');
      expect((await danSession.get('/api/auth/me')).status).to.equal(401);
      expect((await login('dan@example.com', DAN_PASSWORD)).code).to.equal('invalid-credentials');
      // Server-side: no session row of Dan's is left, and his token is revoked through its own aggregate, by the administrator.
      expect(Number((await app.deps.knex('http_sessions').whereRaw("sess->>'userId' = ?", [String(danId)]).count({ n: '*' }))[0].n)).to.equal(0);
      const tokens = await app.deps.knex('api_tokens').where({ user_id: danId }).select('id', 'revoked_at');
      expect(tokens).to.have.length(1);
      expect(tokens[0].revoked_at).to.not.equal(null);
      const [, revoked] = await app.deps.store.readStream(`apiToken-${tokens[0].id}`);
      expect(revoked.type).to.equal('ApiTokenRevoked');
      expect(revoked.metadata.actor.userId).to.equal(adminId);
    });

    it('deactivating an inactive user appends nothing', async () => {
      const before = await head();
      expect((await model('update', { where: { id: danId }, data: { isActive: false } })).status).to.equal(200);
      expect(await head()).to.equal(before);
    });

    it('reactivation allows new logins and new tokens; the old token and the old session cookie stay refused', async () => {
      const res = await model('update', { where: { id: danId }, data: { isActive: true } });
      expect(res.body.data.isActive).to.equal(true);
      expect((await danBearer.get('/api/auth/me')).status).to.equal(401);
      expect((await danSession.get('/api/auth/me')).status).to.equal(401);
      const again = await login('dan@example.com', DAN_PASSWORD);
      expect(again.status).to.equal(200);
      const token = await again.client.post('/api/tokens', { name: 'new ci' });
      expect(token.status).to.equal(201);
      expect((await new RecordingClient(app.url, token.body.token).get('/api/auth/me')).status).to.equal(200);
      expect((await eventsOf(danId)).map((e) => e.type)).to.deep.equal(['UserRegistered', 'UserDeactivated', 'UserReactivated']);
    });

    it('a password change: the old password no longer logs in, the new one does; sessions opened before end, tokens stay', async () => {
      const before = await login('dan@example.com', DAN_PASSWORD);
      expect(before.status).to.equal(200);
      const token = await before.client.post('/api/tokens', { name: 'kept' });
      expect(token.status).to.equal(201);
      const res = await model('update', { where: { id: danId }, data: { password: DAN_NEW_PASSWORD } });
      expect((await before.client.get('/api/auth/me')).status, 'the session of the old password').to.equal(401);
      expect((await new RecordingClient(app.url, token.body.token).get('/api/auth/me')).status, 'the token').to.equal(200);
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(Object.keys(res.body.data)).to.have.members(ROW_FIELDS);
      const old = await login('dan@example.com', DAN_PASSWORD);
      expect([old.status, old.code]).to.deep.equal([401, 'invalid-credentials']);
      expect((await login('dan@example.com', DAN_NEW_PASSWORD)).status).to.equal(200);
      const last = (await eventsOf(danId)).pop()!;
      expect(last.type).to.equal('UserPasswordChanged');
      expect((last.data as { passwordHash: string }).passwordHash).to.match(/^\$argon2id\$/);
    });
  });

  describe('delete', () => {
    it('is soft: the row stays, deleted and inactive; its access ends; it can no longer be changed; its e-mail stays taken', async () => {
      const gone = await create({ email: 'gone@example.com', name: 'Gone', password: 'gone-Password-1' });
      const session = await login('gone@example.com', 'gone-Password-1');
      const token = (await session.client.post('/api/tokens', { name: 't' })).body.token;
      const bearer = new RecordingClient(app.url, token);
      expect((await bearer.get('/api/auth/me')).status).to.equal(200);

      const res = await model('delete', { where: { id: gone.id } });
      expect(res.status, JSON.stringify(res.body)).to.equal(200);
      expect(res.body.data).to.deep.include({ isDeleted: true, isActive: false });
      expect((await bearer.get('/api/auth/me')).status).to.equal(401);
      expect((await session.client.get('/api/auth/me')).status).to.equal(401);
      expect((await login('gone@example.com', 'gone-Password-1')).code).to.equal('invalid-credentials');

      // Like every soft-deleted entity: findMany still has it, marked; a filter leaves it out.
      const all = (await model('findMany', { select: { id: true, isDeleted: true } })).body.data as { id: number; isDeleted: boolean }[];
      expect(all).to.deep.include({ id: gone.id, isDeleted: true });
      const live = (await model('findMany', { where: { isDeleted: false }, select: { id: true } })).body.data as { id: number }[];
      expect(live.map((u) => u.id)).to.not.include(gone.id);

      await refused('update', { where: { id: gone.id }, data: { name: 'Back' } }, 404, 'user-not-found');
      await refused('update', { where: { id: gone.id }, data: { isActive: true } }, 404, 'user-not-found');
      await refused('create', { data: { email: 'gone@example.com', name: 'Gone again', password: 'gone-Password-2' } }, 409, 'email-taken');
      const before = await head();
      expect((await model('delete', { where: { id: gone.id } })).status).to.equal(200);
      expect(await head(), 'deleting a deleted user appends nothing').to.equal(before);
      // Nor can a deleted user be assigned to anything.
      const project = await admin.post('/api/model/project/create', { data: { name: 'P' } });
      const assigned = await admin.post('/api/model/projectAssignment/create', { data: { user: { connect: { id: gone.id } }, project: { connect: { id: project.body.data.id } } } });
      expect([assigned.status, assigned.body.code]).to.deep.equal([404, 'user-not-found']);
    });
  });

  describe('an administrator cannot lock themselves out', () => {
    it('deactivating, deleting or demoting themselves is 400 cannot-change-own-access; their name they may change', async () => {
      await refused('update', { where: { id: adminId }, data: { isActive: false } }, 400, 'cannot-change-own-access', 'data.isActive');
      await refused('update', { where: { id: adminId }, data: { access: 'USER' } }, 400, 'cannot-change-own-access', 'data.access');
      await refused('update', { where: { id: adminId }, data: { name: 'Root!', access: 'PROJECTADMIN' } }, 400, 'cannot-change-own-access', 'data.access');
      await refused('delete', { where: { id: adminId } }, 400, 'cannot-change-own-access', 'where.id');
      await refused('deleteMany', { where: { id: adminId } }, 400, 'cannot-change-own-access');
      const renamed = await model('update', { where: { id: adminId }, data: { name: 'Root Admin', access: 'ADMIN' } });
      expect([renamed.status, renamed.body.data.name]).to.deep.equal([200, 'Root Admin']);
      expect((await admin.get('/api/auth/me')).status).to.equal(200);
    });
  });

  describe('bulk writes go through the same commands', () => {
    it('createMany validates every element (password included) before writing any; each user can log in', async () => {
      await refused('createMany', { data: [
        { email: 'b1@example.com', name: 'B1', password: 'b1-Password-1' },
        { email: 'b2@example.com', name: 'B2' },
      ] }, 400, 'invalid-argument', 'data[1].password');
      const res = await model('createMany', { data: [
        { email: 'b1@example.com', name: 'B1', password: 'b1-Password-1' },
        { email: 'b2@example.com', name: 'B2', password: 'b2-Password-1', access: 'NONE' },
      ] });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      expect(res.body.data).to.deep.equal({ count: 2 });
      expect((await login('b2@example.com', 'b2-Password-1')).status).to.equal(200);
    });

    it('updateMany changes scalar fields of many users, but never sets one password for all, nor e-mails', async () => {
      await refused('updateMany', { where: { email: { startsWith: 'b' } }, data: { password: 'shared-Password-1' } }, 400, 'invalid-argument', 'data.password');
      await refused('updateMany', { where: { email: { startsWith: 'b' } }, data: { email: 'same@example.com' } }, 400, 'invalid-argument', 'data.email');
      const res = await model('updateMany', { where: { email: { in: ['b1@example.com', 'b2@example.com'] } }, data: { access: 'USER' } });
      expect(res.body.data).to.deep.equal({ count: 2 });
    });

    it('upsert creates with a password, and refuses an e-mail in its update part', async () => {
      await refused('upsert', { where: { id: 999_998 }, create: { email: 'u@example.com', name: 'U', password: 'u-Password-1' }, update: { email: 'x@example.com' } },
        400, 'invalid-argument', 'update.email');
      const res = await model('upsert', { where: { id: 999_998 }, create: { email: 'u@example.com', name: 'U', password: 'u-Password-1' }, update: { name: 'U2' } });
      expect(res.status, JSON.stringify(res.body)).to.equal(201);
      expect(Object.keys(res.body.data)).to.have.members(ROW_FIELDS);
      const again = await model('upsert', { where: { id: res.body.data.id }, create: { email: 'u@example.com', name: 'U', password: 'u-Password-1' }, update: { name: 'U2' } });
      expect([again.status, again.body.data.name]).to.deep.equal([200, 'U2']);
    });
  });

  describe('only administrators write users', () => {
    it('another user is 403 forbidden, even on their own row, and nothing is appended', async () => {
      const eve = await login('eve@example.com', EVE_PASSWORD);
      const me = (await eve.client.get('/api/auth/me')).body.user.id as number;
      const before = await head();
      for (const [op, body] of [
        ['create', { data: { email: 'sneaky@example.com', name: 'S', password: 'sneaky-Password-1', access: 'ADMIN' } }],
        ['update', { where: { id: me }, data: { access: 'ADMIN' } }],
        ['update', { where: { id: me }, data: { password: 'eve-Changed-0001' } }],
        ['delete', { where: { id: adminId } }],
      ] as const) {
        const res = await model(op, body, eve.client);
        expect(res.status, `${op} ${JSON.stringify(res.body)}`).to.equal(403);
      }
      expect(await head()).to.equal(before);
    });
  });

  describe('secrets stay secret', () => {
    it('select, include, where, orderBy, distinct, groupBy and aggregate naming passwordHash or password are 400', async () => {
      const bodies: [string, string, unknown][] = [];
      for (const name of ['passwordHash', 'password', 'password_hash']) {
        bodies.push(
          ['user', 'findMany', { select: { [name]: true } }],
          ['user', 'findMany', { where: { [name]: { not: null } } }],
          ['user', 'findMany', { where: { [name]: 'x' } }],
          ['user', 'findMany', { orderBy: { [name]: 'asc' } }],
          ['user', 'findMany', { distinct: [name] }],
          ['user', 'findUnique', { where: { id: adminId }, select: { [name]: true } }],
          ['user', 'count', { where: { [name]: { startsWith: '$' } } }],
          ['user', 'groupBy', { by: [name] }],
          ['user', 'aggregate', { _max: { [name]: true } }],
          ['user', 'aggregate', { _count: { [name]: true } }],
          ['projectAssignment', 'findMany', { include: { user: { select: { [name]: true } } } }],
          ['projectAssignment', 'findMany', { where: { user: { is: { [name]: { startsWith: '$argon2id$' } } } } }],
          ['projectAssignment', 'findMany', { orderBy: { user: { [name]: 'asc' } } }],
        );
      }
      for (const [entity, op, body] of bodies) {
        const res = await admin.post(`/api/model/${entity}/${op}`, body);
        expect(res.status, `${entity}.${op} ${JSON.stringify(body)}: ${JSON.stringify(res.body)}`).to.equal(400);
        expect(res.body.code).to.match(/^[a-z]+(-[a-z]+)*$/);
        expect(res.body.details.path, JSON.stringify(res.body)).to.be.a('string');
      }
    });

    it('no answer of this suite carried a password or a hash (field names in refusals aside): every row read whole has none', async () => {
      const everything = await model('findMany', { include: { role: true, projectAssignments: { include: { user: true } } } });
      expect(everything.status).to.equal(200);
      for (const row of everything.body.data) expect(Object.keys(row)).to.have.members([...ROW_FIELDS, 'role', 'projectAssignments']);
      expect(answers.length).to.be.greaterThan(50);
      for (const answer of answers) {
        expect(answer).to.not.include('$argon2');
        for (const password of PASSWORDS) expect(answer).to.not.include(password);
      }
    });

    it('the plain passwords are nowhere in the database; the hashes only in the event store and the users table', async () => {
      const { rows: tables } = await app.deps.knex.raw(
        "SELECT table_name FROM information_schema.tables WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'");
      expect(tables.map((t: { table_name: string }) => t.table_name)).to.include.members(['es_events', 'users', 'http_sessions']);
      for (const { table_name: table } of tables as { table_name: string }[]) {
        for (const password of [...PASSWORDS, 'upd-Password-1', 'gone-Password-1', 'b1-Password-1', 'u-Password-1']) {
          const { rows } = await app.deps.knex.raw(`SELECT count(*)::int AS n FROM "${table}" t WHERE t::text LIKE ?`, [`%${password}%`]);
          expect(rows[0].n, `${password} in ${table}`).to.equal(0);
        }
        if (table === 'es_events' || table === 'users') continue;
        const { rows } = await app.deps.knex.raw(`SELECT count(*)::int AS n FROM "${table}" t WHERE t::text LIKE ?`, ['%$argon2id$%']);
        expect(rows[0].n, `a password hash in ${table}`).to.equal(0);
      }
      const { rows: hashes } = await app.deps.knex.raw(
        "SELECT data->>'passwordHash' AS hash FROM es_events WHERE type IN ('UserRegistered', 'UserPasswordChanged')");
      expect(hashes.length).to.be.greaterThan(5);
      for (const { hash } of hashes as { hash: string }[]) expect(hash).to.match(/^\$argon2id\$v=19\$/);
    });
  });

  // Last (mocha runs a suite's own tests before its nested suites): the read model holds everything above.
  describe('rebuild', () => {
    it('a rebuild of the identity read model gives exactly the rows the live projection wrote', async () => {
      const snapshot = async () => ({
        users: await app.deps.knex('users').orderBy('id').select('*'),
        tokens: await app.deps.knex('api_tokens').orderBy('id').select('*'),
      });
      const live = await snapshot();
      expect(live.users.some((u: { is_deleted: boolean }) => u.is_deleted)).to.equal(true);
      expect(live.users.some((u: { role_id: number | null }) => u.role_id !== null)).to.equal(true);
      const result = await rebuildProjection(identityProjection, { store: app.deps.store, knex: app.deps.knex, pageSize: 7 });
      expect(result.events).to.be.greaterThan(0);
      expect(await snapshot()).to.deep.equal(live);
    });
  });
});
