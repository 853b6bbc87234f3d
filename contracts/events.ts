/**
 * TypeScript shapes of the hand-written events' `data`, one per schema in contracts/events/;
 * the catalogue entities' events are `EntityEvent`.
 * test/contracts/contracts.unit.spec.ts checks that this list and the schema files agree.
 */
import type { DomainEvent } from './envelope';
import { ENTITIES } from './entities';
import { GENERIC_ENTITIES, eventTypesOf } from './entityEvents';

type Iso = string;

/**
 * Events of the generic entity aggregate (contracts/entityEvents.ts): `<Entity>Created`, `Updated`,
 * `Deleted`, their data shaped by the catalogue and checked by their generated JSON Schemas.
 */
export type EntityEvent = DomainEvent<string, Record<string, unknown>>;
export type AccessLevel = 'ADMIN' | 'PROJECTADMIN' | 'USER' | 'NONE';

export type IdBlockReserved = DomainEvent<'IdBlockReserved', { category: string; from: number; to: number }>;
export type UniqueValueClaimed = DomainEvent<'UniqueValueClaimed', { scope: string; value: string; ownerId: number }>;
export type DefaultsPlanned = DomainEvent<'DefaultsPlanned', { items: { key: string; entity: string; id: number }[] }>;

/** v2 added roleId (the user's global role, null for none); v1 events have none. */
export type UserRegistered = DomainEvent<'UserRegistered', {
  userId: number; email: string; name: string; passwordHash: string; access: AccessLevel; roleId?: number | null; createdAt: Iso;
}>;
/** Only the changed fields are present. The e-mail never changes. */
export type UserUpdated = DomainEvent<'UserUpdated', {
  userId: number; changes: { name?: string; access?: AccessLevel; roleId?: number | null }; updatedAt: Iso;
}>;
export type UserDeactivated = DomainEvent<'UserDeactivated', { userId: number; at: Iso }>;
export type UserReactivated = DomainEvent<'UserReactivated', { userId: number; at: Iso }>;
/** The new argon2id hash; the password itself is never recorded. */
export type UserPasswordChanged = DomainEvent<'UserPasswordChanged', { userId: number; passwordHash: string; at: Iso }>;
/** Soft delete: the row stays, marked deleted and inactive, and the user can no longer be changed. */
export type UserDeleted = DomainEvent<'UserDeleted', { userId: number; at: Iso }>;
export type ApiTokenCreated = DomainEvent<'ApiTokenCreated', {
  tokenId: number; userId: number; name: string; prefix: string; tokenHash: string; expiresAt: Iso | null; createdAt: Iso;
}>;
export type ApiTokenRevoked = DomainEvent<'ApiTokenRevoked', { tokenId: number; userId: number; revokedAt: Iso }>;
/** A refused login, on `loginAttempts-<digest of the e-mail>` (services/identity/loginAttempts.ts); never the password. */
export type LoginFailed = DomainEvent<'LoginFailed', {
  email: string; userId: number | null; reason: 'unknown-user' | 'wrong-password' | 'inactive-user' | 'rate-limited'; ip: string | null; attemptedAt: Iso;
}>;

export type RepositoryFolderCreated = DomainEvent<'RepositoryFolderCreated', {
  folderId: number; projectId: number; parentId: number | null; name: string; createdAt: Iso;
}>;
export type RepositoryFolderUpdated = DomainEvent<'RepositoryFolderUpdated', {
  folderId: number; changes: { name?: string; parentId?: number | null }; updatedAt: Iso;
}>;
export type RepositoryFolderDeleted = DomainEvent<'RepositoryFolderDeleted', { folderId: number; deletedAt: Iso }>;

export type TestamentEvent =
  | IdBlockReserved | UniqueValueClaimed | DefaultsPlanned
  | UserRegistered | UserUpdated | UserDeactivated | UserReactivated | UserPasswordChanged | UserDeleted
  | ApiTokenCreated | ApiTokenRevoked | LoginFailed
  | RepositoryFolderCreated | RepositoryFolderUpdated | RepositoryFolderDeleted
  | EntityEvent;

export type EventType = TestamentEvent['type'];

/** Events with hand-written shapes (identity, ids, claims, folders). */
export const HAND_WRITTEN_EVENT_TYPES: readonly EventType[] = [
  'IdBlockReserved', 'UniqueValueClaimed', 'DefaultsPlanned',
  'UserRegistered', 'UserUpdated', 'UserDeactivated', 'UserReactivated', 'UserPasswordChanged', 'UserDeleted',
  'ApiTokenCreated', 'ApiTokenRevoked', 'LoginFailed',
  'RepositoryFolderCreated', 'RepositoryFolderUpdated', 'RepositoryFolderDeleted',
];

/** Every event type: the hand-written ones and those of each catalogue entity. */
export const EVENT_TYPES: readonly string[] = [
  ...HAND_WRITTEN_EVENT_TYPES,
  ...GENERIC_ENTITIES.flatMap((name) => Object.values(eventTypesOf(ENTITIES[name]))),
];

/** Narrow a stored envelope's data by its type. */
export type DataOf<T extends EventType> = Extract<TestamentEvent, { type: T }>['data'];
