import { expect } from 'chai';
import type { UserRegistered } from '../../../contracts/events';
import {
  type UserCommand, emailReservationStream, evolve, initialState, normaliseEmail, userDecider, userStream,
} from '../../../services/identity/user.decider';
import { given } from '../../support/given';

const T0 = '2024-03-01T10:00:00.000Z';
const NOW = '2024-03-03T10:00:00.000Z';
const HASH = '$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNo';

const registered: UserRegistered = {
  type: 'UserRegistered',
  data: { userId: 3, email: 'ada@example.com', name: 'Ada', passwordHash: HASH, access: 'USER', createdAt: T0 },
};
const register = (email = 'ada@example.com'): UserCommand => ({
  type: 'RegisterUser', userId: 3, email, name: 'Ada', passwordHash: HASH, access: 'USER', now: NOW,
});

describe('User decider', () => {
  it('names its streams user-<id> and uniqueEmail-<normalised e-mail>', () => {
    expect(userStream(3)).to.equal('user-3');
    expect(emailReservationStream('  Ada@Example.COM ')).to.equal('uniqueEmail-ada@example.com');
  });

  it('normalises an e-mail by trimming and lower-casing it', () => expect(normaliseEmail(' Ada@Example.COM\t')).to.equal('ada@example.com'));

  describe('RegisterUser', () => {
    it('registers a user with the time of the command', () =>
      given(userDecider, []).when(register()).then([{
        type: 'UserRegistered',
        data: { userId: 3, email: 'ada@example.com', name: 'Ada', passwordHash: HASH, access: 'USER', createdAt: NOW },
      }]));
    it('records the e-mail normalised', () =>
      given(userDecider, []).when(register('  Ada@Example.COM ')).then([{
        type: 'UserRegistered',
        data: { userId: 3, email: 'ada@example.com', name: 'Ada', passwordHash: HASH, access: 'USER', createdAt: NOW },
      }]));
    it('refuses to register the same user twice', () => given(userDecider, [registered]).when(register()).thenFailsWith('user-exists'));
  });

  describe('evolve', () => {
    it('a registration makes the user exist with its e-mail', () => {
      expect(initialState).to.deep.equal({ exists: false, email: null });
      expect(evolve(initialState, registered)).to.deep.equal({ exists: true, email: 'ada@example.com' });
    });
  });
});
