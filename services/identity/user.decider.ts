import type { AccessLevel, UserRegistered } from '../../contracts/events';
import { DomainError, assertNever } from '../shared/errors';

export type UserEvent = UserRegistered;

export type UserCommand = {
  type: 'RegisterUser'; userId: number; email: string; name: string; passwordHash: string; access: AccessLevel; now: string;
};

export interface UserState { exists: boolean; email: string | null }

export const initialState: UserState = { exists: false, email: null };
export const userStream = (userId: number) => `user-${userId}`;
/** Reservation stream that makes an e-mail address unique (appended with no-stream expected). */
export const emailReservationStream = (email: string) => `uniqueEmail-${normaliseEmail(email)}`;

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

export function decide(cmd: UserCommand, s: UserState): UserEvent[] {
  switch (cmd.type) {
    case 'RegisterUser':
      if (s.exists) throw new DomainError('user-exists', `User ${cmd.userId} already exists`);
      return [{
        type: 'UserRegistered',
        data: { userId: cmd.userId, email: normaliseEmail(cmd.email), name: cmd.name, passwordHash: cmd.passwordHash, access: cmd.access, createdAt: cmd.now },
      }];
    default:
      return assertNever(cmd.type);
  }
}

export function evolve(s: UserState, e: UserEvent): UserState {
  switch (e.type) {
    case 'UserRegistered':
      return { exists: true, email: e.data.email };
    default:
      return assertNever(e.type);
  }
}

export const userDecider = { initialState, decide, evolve };
