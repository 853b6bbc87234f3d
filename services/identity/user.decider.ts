import type {
  AccessLevel, UserDeactivated, UserDeleted, UserPasswordChanged, UserReactivated, UserRegistered, UserUpdated,
} from '../../contracts/events';
import { DomainError, assertNever } from '../shared/errors';
import { LIMITS } from '../../contracts/limits';

export type UserEvent = UserRegistered | UserUpdated | UserDeactivated | UserReactivated | UserPasswordChanged | UserDeleted;

/** What the handler read about a role from the role's own stream. */
export interface RoleFact { id: number; exists: boolean; isDeleted: boolean }

export type UserCommand =
  | {
    type: 'RegisterUser'; userId: number; email: string; name: string; passwordHash: string; access: AccessLevel;
    roleId?: number | null; role?: RoleFact; isActive?: boolean; now: string;
  }
  | {
    /** Every change of an existing user at once: one decision, one append. */
    type: 'UpdateUser'; userId: number; changes: { name?: string; access?: AccessLevel; roleId?: number | null };
    isActive?: boolean; passwordHash?: string; role?: RoleFact;
    /** The acting user (null for the system): nobody changes their own access, nor deactivates themselves. */
    requestedBy: number | null; now: string;
  }
  | { type: 'DeleteUser'; userId: number; requestedBy: number | null; now: string };

export interface UserState {
  exists: boolean; email: string | null; name: string | null; access: AccessLevel | null; roleId: number | null;
  isActive: boolean; isDeleted: boolean;
}

export const initialState: UserState = { exists: false, email: null, name: null, access: null, roleId: null, isActive: false, isDeleted: false };
export const userStream = (userId: number) => `user-${userId}`;
/** Reservation stream that makes an e-mail address unique (appended with no-stream expected). */
export const emailReservationStream = (email: string) => `uniqueEmail-${normaliseEmail(email)}`;

export function normaliseEmail(email: string): string {
  return email.trim().toLowerCase();
}

/** Passwords a user may be given: at least 8 characters, at most 1024 (argon2 hashes any length, but not for free). */
export const PASSWORD_LENGTH = { min: 8, max: 1024 } as const;

const EMAIL = /^[^\s@]+@[^\s@]+$/;
const MAX_EMAIL = LIMITS.email;
const MAX_NAME = LIMITS.name;

const invalid = (path: string, message: string) => new DomainError('invalid-argument', `${path}: ${message}`, { path });

function checkEmail(email: string): void {
  if (email.length < 3 || email.length > MAX_EMAIL || !EMAIL.test(email)) throw invalid('data.email', `must be an e-mail address (at most ${MAX_EMAIL} characters)`);
}

function checkName(name: string): void {
  if (name.trim().length === 0 || name.length > MAX_NAME) throw invalid('data.name', `must not be blank, at most ${MAX_NAME} characters`);
}

/** A role a user is given must exist and not be deleted. */
function checkRole(roleId: number, role: RoleFact | undefined): void {
  if (!role || role.id !== roleId || !role.exists || role.isDeleted) {
    throw new DomainError('role-not-found', `Role ${roleId} does not exist`, { path: 'data.role', id: roleId });
  }
}

const ownAccess = (userId: number, what: string, path: string) =>
  new DomainError('cannot-change-own-access', `You cannot ${what} yourself: ask another administrator`, { path, id: userId });

export function decide(cmd: UserCommand, s: UserState): UserEvent[] {
  switch (cmd.type) {
    case 'RegisterUser': {
      if (s.exists) throw new DomainError('user-exists', `User ${cmd.userId} already exists`);
      const email = normaliseEmail(cmd.email);
      checkEmail(email);
      checkName(cmd.name);
      const roleId = cmd.roleId ?? null;
      if (roleId !== null) checkRole(roleId, cmd.role);
      const events: UserEvent[] = [{
        type: 'UserRegistered',
        data: { userId: cmd.userId, email, name: cmd.name, passwordHash: cmd.passwordHash, access: cmd.access, roleId, createdAt: cmd.now },
      }];
      if (cmd.isActive === false) events.push({ type: 'UserDeactivated', data: { userId: cmd.userId, at: cmd.now } });
      return events;
    }
    case 'UpdateUser': {
      if (!s.exists || s.isDeleted) throw new DomainError('user-not-found', `User ${cmd.userId} does not exist`, { id: cmd.userId });
      const self = cmd.requestedBy === cmd.userId;
      const changes: UserUpdated['data']['changes'] = {};
      if (cmd.changes.name !== undefined && cmd.changes.name !== s.name) {
        checkName(cmd.changes.name);
        changes.name = cmd.changes.name;
      }
      if (cmd.changes.access !== undefined && cmd.changes.access !== s.access) {
        if (self) throw ownAccess(cmd.userId, 'change the access level of', 'data.access');
        changes.access = cmd.changes.access;
      }
      if (cmd.changes.roleId !== undefined && cmd.changes.roleId !== s.roleId) {
        if (cmd.changes.roleId !== null) checkRole(cmd.changes.roleId, cmd.role);
        changes.roleId = cmd.changes.roleId;
      }
      if (cmd.isActive === false && s.isActive && self) throw ownAccess(cmd.userId, 'deactivate', 'data.isActive');
      const events: UserEvent[] = [];
      if (Object.keys(changes).length > 0) events.push({ type: 'UserUpdated', data: { userId: cmd.userId, changes, updatedAt: cmd.now } });
      // A password is never compared (its hash is salted): setting one always records the change.
      if (cmd.passwordHash !== undefined) events.push({ type: 'UserPasswordChanged', data: { userId: cmd.userId, passwordHash: cmd.passwordHash, at: cmd.now } });
      if (cmd.isActive === false && s.isActive) events.push({ type: 'UserDeactivated', data: { userId: cmd.userId, at: cmd.now } });
      if (cmd.isActive === true && !s.isActive) events.push({ type: 'UserReactivated', data: { userId: cmd.userId, at: cmd.now } });
      return events;
    }
    case 'DeleteUser':
      if (!s.exists) throw new DomainError('user-not-found', `User ${cmd.userId} does not exist`, { id: cmd.userId });
      if (s.isDeleted) return [];
      if (cmd.requestedBy === cmd.userId) throw ownAccess(cmd.userId, 'delete', 'where.id');
      return [{ type: 'UserDeleted', data: { userId: cmd.userId, at: cmd.now } }];
    default:
      return assertNever(cmd);
  }
}

export function evolve(s: UserState, e: UserEvent): UserState {
  switch (e.type) {
    case 'UserRegistered':
      return {
        exists: true, email: e.data.email, name: e.data.name, access: e.data.access, roleId: e.data.roleId ?? null, isActive: true, isDeleted: false,
      };
    case 'UserUpdated':
      return { ...s, ...e.data.changes };
    case 'UserDeactivated':
      return { ...s, isActive: false };
    case 'UserReactivated':
      return { ...s, isActive: true };
    case 'UserPasswordChanged':
      return s;
    case 'UserDeleted':
      return { ...s, isActive: false, isDeleted: true };
    default:
      return assertNever(e);
  }
}

export const userDecider = { initialState, decide, evolve };
