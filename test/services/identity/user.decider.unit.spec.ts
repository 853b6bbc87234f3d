import { expect } from 'chai';
import type { UserRegistered } from '../../../contracts/events';
import {
  type RoleFact, type UserCommand, type UserEvent, emailReservationStream, evolve, initialState, normaliseEmail, userDecider, userStream,
} from '../../../services/identity/user.decider';
import { given } from '../../support/given';

const T0 = '2024-03-01T10:00:00.000Z';
const NOW = '2024-03-03T10:00:00.000Z';
const HASH = '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo';
const NEW_HASH = '$argon2id$v=19$m=19456,t=2,p=1$b3RoZXJzYWx0$bmV3aGFzaG5ld2hhc2g';
const ADMIN = 1;
const ROLE: RoleFact = { id: 4, exists: true, isDeleted: false };

const registered: UserRegistered = {
  type: 'UserRegistered',
  data: { userId: 3, email: 'ada@example.com', name: 'Ada', passwordHash: HASH, access: 'USER', roleId: null, createdAt: T0 },
};
/** A v1 event, as stored before roles: no roleId. */
const registeredV1: UserRegistered = {
  type: 'UserRegistered',
  data: { userId: 3, email: 'ada@example.com', name: 'Ada', passwordHash: HASH, access: 'USER', createdAt: T0 },
};
const deactivated: UserEvent = { type: 'UserDeactivated', data: { userId: 3, at: T0 } };
const deleted: UserEvent = { type: 'UserDeleted', data: { userId: 3, at: T0 } };

const register = (over: Partial<Extract<UserCommand, { type: 'RegisterUser' }>> = {}): UserCommand => ({
  type: 'RegisterUser', userId: 3, email: 'ada@example.com', name: 'Ada', passwordHash: HASH, access: 'USER', now: NOW, ...over,
});
const update = (over: Partial<Extract<UserCommand, { type: 'UpdateUser' }>> = {}): UserCommand => ({
  type: 'UpdateUser', userId: 3, changes: {}, requestedBy: ADMIN, now: NOW, ...over,
});
const remove = (requestedBy: number | null = ADMIN): UserCommand => ({ type: 'DeleteUser', userId: 3, requestedBy, now: NOW });

describe('User decider', () => {
  it('names its streams user-<id> and uniqueEmail-<normalised e-mail>', () => {
    expect(userStream(3)).to.equal('user-3');
    expect(emailReservationStream('  Ada@Example.COM ')).to.equal('uniqueEmail-ada@example.com');
  });

  it('normalises an e-mail by trimming and lower-casing it', () => expect(normaliseEmail(' Ada@Example.COM\t')).to.equal('ada@example.com'));

  describe('RegisterUser', () => {
    it('registers a user with the time of the command and no role', () =>
      given(userDecider, []).when(register()).then([{
        type: 'UserRegistered',
        data: { userId: 3, email: 'ada@example.com', name: 'Ada', passwordHash: HASH, access: 'USER', roleId: null, createdAt: NOW },
      }]));
    it('records the e-mail normalised', () =>
      given(userDecider, []).when(register({ email: '  Ada@Example.COM ' })).then([{
        type: 'UserRegistered',
        data: { userId: 3, email: 'ada@example.com', name: 'Ada', passwordHash: HASH, access: 'USER', roleId: null, createdAt: NOW },
      }]));
    it('records a role that exists', () =>
      given(userDecider, []).when(register({ roleId: 4, role: ROLE })).then([{
        type: 'UserRegistered',
        data: { userId: 3, email: 'ada@example.com', name: 'Ada', passwordHash: HASH, access: 'USER', roleId: 4, createdAt: NOW },
      }]));
    it('registers an inactive user as registered, then deactivated', () =>
      given(userDecider, []).when(register({ isActive: false })).then([
        { type: 'UserRegistered', data: { userId: 3, email: 'ada@example.com', name: 'Ada', passwordHash: HASH, access: 'USER', roleId: null, createdAt: NOW } },
        { type: 'UserDeactivated', data: { userId: 3, at: NOW } },
      ]));
    it('refuses a role that does not exist, is deleted, or was not looked up', () => {
      given(userDecider, []).when(register({ roleId: 4, role: { ...ROLE, exists: false } })).thenFailsWith('role-not-found');
      given(userDecider, []).when(register({ roleId: 4, role: { ...ROLE, isDeleted: true } })).thenFailsWith('role-not-found');
      given(userDecider, []).when(register({ roleId: 4 })).thenFailsWith('role-not-found');
      given(userDecider, []).when(register({ roleId: 5, role: ROLE })).thenFailsWith('role-not-found');
    });
    it('refuses an address that is not an e-mail, and a blank name', () => {
      for (const email of ['ada', 'ada@', '@example.com', 'a da@example.com', `${'a'.repeat(320)}@example.com`]) {
        given(userDecider, []).when(register({ email })).thenFailsWith('invalid-argument');
      }
      given(userDecider, []).when(register({ name: '   ' })).thenFailsWith('invalid-argument');
      given(userDecider, []).when(register({ name: 'x'.repeat(256) })).thenFailsWith('invalid-argument');
    });
    it('refuses to register the same user twice', () => given(userDecider, [registered]).when(register()).thenFailsWith('user-exists'));
  });

  describe('UpdateUser', () => {
    it('records only what changed', () =>
      given(userDecider, [registered]).when(update({ changes: { name: 'Ada L.', access: 'USER', roleId: 4 }, role: ROLE })).then([
        { type: 'UserUpdated', data: { userId: 3, changes: { name: 'Ada L.', roleId: 4 }, updatedAt: NOW } },
      ]));
    it('changes nothing when nothing differs (a v1 registration has no role)', () => {
      given(userDecider, [registeredV1]).when(update({ changes: { name: 'Ada', access: 'USER', roleId: null }, isActive: true })).thenNothing();
      given(userDecider, [registered]).when(update()).thenNothing();
    });
    it('takes a role away', () =>
      given(userDecider, [registered, { type: 'UserUpdated', data: { userId: 3, changes: { roleId: 4 }, updatedAt: T0 } }])
        .when(update({ changes: { roleId: null } }))
        .then([{ type: 'UserUpdated', data: { userId: 3, changes: { roleId: null }, updatedAt: NOW } }]));
    it('refuses a role that does not exist or is deleted', () => {
      given(userDecider, [registered]).when(update({ changes: { roleId: 4 }, role: { ...ROLE, isDeleted: true } })).thenFailsWith('role-not-found');
      given(userDecider, [registered]).when(update({ changes: { roleId: 4 } })).thenFailsWith('role-not-found');
    });
    it('deactivates an active user', () =>
      given(userDecider, [registered]).when(update({ isActive: false })).then([{ type: 'UserDeactivated', data: { userId: 3, at: NOW } }]));
    it('deactivating an inactive user changes nothing', () =>
      given(userDecider, [registered, deactivated]).when(update({ isActive: false })).thenNothing());
    it('reactivates an inactive user; reactivating an active one changes nothing', () => {
      given(userDecider, [registered, deactivated]).when(update({ isActive: true })).then([{ type: 'UserReactivated', data: { userId: 3, at: NOW } }]);
      given(userDecider, [registered]).when(update({ isActive: true })).thenNothing();
    });
    it('records a new password as its hash, every time (a salted hash cannot be compared)', () =>
      given(userDecider, [registered]).when(update({ passwordHash: NEW_HASH })).then([
        { type: 'UserPasswordChanged', data: { userId: 3, passwordHash: NEW_HASH, at: NOW } },
      ]));
    it('several changes at once are one decision', () =>
      given(userDecider, [registered]).when(update({ changes: { access: 'ADMIN' }, passwordHash: NEW_HASH, isActive: false })).then([
        { type: 'UserUpdated', data: { userId: 3, changes: { access: 'ADMIN' }, updatedAt: NOW } },
        { type: 'UserPasswordChanged', data: { userId: 3, passwordHash: NEW_HASH, at: NOW } },
        { type: 'UserDeactivated', data: { userId: 3, at: NOW } },
      ]));
    it('a blank name is refused', () => given(userDecider, [registered]).when(update({ changes: { name: ' ' } })).thenFailsWith('invalid-argument'));
    it('nobody changes their own access level or deactivates themselves', () => {
      given(userDecider, [registered]).when(update({ requestedBy: 3, changes: { access: 'NONE' } })).thenFailsWith('cannot-change-own-access');
      given(userDecider, [registered]).when(update({ requestedBy: 3, isActive: false })).thenFailsWith('cannot-change-own-access');
    });
    it('but may change their own name and password, and name their own unchanged access', () =>
      given(userDecider, [registered]).when(update({ requestedBy: 3, changes: { name: 'Ada L.', access: 'USER' }, passwordHash: NEW_HASH, isActive: true })).then([
        { type: 'UserUpdated', data: { userId: 3, changes: { name: 'Ada L.' }, updatedAt: NOW } },
        { type: 'UserPasswordChanged', data: { userId: 3, passwordHash: NEW_HASH, at: NOW } },
      ]));
    it('an unknown or deleted user is not found', () => {
      given(userDecider, []).when(update({ changes: { name: 'X' } })).thenFailsWith('user-not-found');
      given(userDecider, [registered, deleted]).when(update({ changes: { name: 'X' } })).thenFailsWith('user-not-found');
      given(userDecider, [registered, deleted]).when(update({ isActive: true })).thenFailsWith('user-not-found');
      given(userDecider, [registered, deleted]).when(update({ passwordHash: NEW_HASH })).thenFailsWith('user-not-found');
    });
  });

  describe('DeleteUser', () => {
    it('deletes a user (also an inactive one)', () => {
      given(userDecider, [registered]).when(remove()).then([{ type: 'UserDeleted', data: { userId: 3, at: NOW } }]);
      given(userDecider, [registered, deactivated]).when(remove()).then([{ type: 'UserDeleted', data: { userId: 3, at: NOW } }]);
    });
    it('deleting a deleted user changes nothing', () => given(userDecider, [registered, deleted]).when(remove()).thenNothing());
    it('an unknown user is not found', () => given(userDecider, []).when(remove()).thenFailsWith('user-not-found'));
    it('nobody deletes themselves', () => given(userDecider, [registered]).when(remove(3)).thenFailsWith('cannot-change-own-access'));
  });

  describe('evolve', () => {
    it('a registration makes the user exist, active, with its e-mail, access and role (none for v1)', () => {
      expect(initialState).to.deep.include({ exists: false, email: null });
      const expected = { exists: true, email: 'ada@example.com', name: 'Ada', access: 'USER', roleId: null, isActive: true, isDeleted: false };
      expect(evolve(initialState, registered)).to.deep.equal(expected);
      expect(evolve(initialState, registeredV1)).to.deep.equal(expected);
    });
    it('a deletion leaves the user deleted and inactive', () =>
      expect(evolve(evolve(initialState, registered), deleted)).to.deep.include({ isActive: false, isDeleted: true }));
  });
});
