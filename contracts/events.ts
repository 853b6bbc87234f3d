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

export type UserRegistered = DomainEvent<'UserRegistered', {
  userId: number; email: string; name: string; passwordHash: string; access: AccessLevel; createdAt: Iso;
}>;
export type ApiTokenCreated = DomainEvent<'ApiTokenCreated', {
  tokenId: number; userId: number; name: string; prefix: string; tokenHash: string; expiresAt: Iso | null; createdAt: Iso;
}>;
export type ApiTokenRevoked = DomainEvent<'ApiTokenRevoked', { tokenId: number; userId: number; revokedAt: Iso }>;

export type RepositoryFolderCreated = DomainEvent<'RepositoryFolderCreated', {
  folderId: number; projectId: number; parentId: number | null; name: string; createdAt: Iso;
}>;
export type RepositoryFolderUpdated = DomainEvent<'RepositoryFolderUpdated', {
  folderId: number; changes: { name?: string; parentId?: number | null }; updatedAt: Iso;
}>;
export type RepositoryFolderDeleted = DomainEvent<'RepositoryFolderDeleted', { folderId: number; deletedAt: Iso }>;

export type TestamentEvent =
  | IdBlockReserved | UniqueValueClaimed | DefaultsPlanned
  | UserRegistered | ApiTokenCreated | ApiTokenRevoked
  | RepositoryFolderCreated | RepositoryFolderUpdated | RepositoryFolderDeleted
  | EntityEvent;

export type EventType = TestamentEvent['type'];

/** Events with hand-written shapes (identity, ids, claims, folders). */
export const HAND_WRITTEN_EVENT_TYPES: readonly EventType[] = [
  'IdBlockReserved', 'UniqueValueClaimed', 'DefaultsPlanned',
  'UserRegistered', 'ApiTokenCreated', 'ApiTokenRevoked',
  'RepositoryFolderCreated', 'RepositoryFolderUpdated', 'RepositoryFolderDeleted',
];

/** Every event type: the hand-written ones and those of each catalogue entity. */
export const EVENT_TYPES: readonly string[] = [
  ...HAND_WRITTEN_EVENT_TYPES,
  ...GENERIC_ENTITIES.flatMap((name) => Object.values(eventTypesOf(ENTITIES[name]))),
];

/** Narrow a stored envelope's data by its type. */
export type DataOf<T extends EventType> = Extract<TestamentEvent, { type: T }>['data'];
