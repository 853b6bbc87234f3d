/**
 * TypeScript shapes of every event's `data`, one per schema in contracts/events/.
 * test/contracts/contracts.unit.spec.ts checks that this list and the schema files agree.
 */
import type { DomainEvent } from './envelope';

type Iso = string;
export type AccessLevel = 'ADMIN' | 'PROJECTADMIN' | 'USER' | 'NONE';

export type IdBlockReserved = DomainEvent<'IdBlockReserved', { category: string; from: number; to: number }>;
export type UniqueValueClaimed = DomainEvent<'UniqueValueClaimed', { scope: string; value: string; ownerId: number }>;

export type UserRegistered = DomainEvent<'UserRegistered', {
  userId: number; email: string; name: string; passwordHash: string; access: AccessLevel; createdAt: Iso;
}>;
export type ApiTokenCreated = DomainEvent<'ApiTokenCreated', {
  tokenId: number; userId: number; name: string; prefix: string; tokenHash: string; expiresAt: Iso | null; createdAt: Iso;
}>;
export type ApiTokenRevoked = DomainEvent<'ApiTokenRevoked', { tokenId: number; userId: number; revokedAt: Iso }>;

export type ProjectCreated = DomainEvent<'ProjectCreated', { projectId: number; name: string; createdAt: Iso }>;
export type ProjectUpdated = DomainEvent<'ProjectUpdated', {
  projectId: number; changes: { name?: string; isDeleted?: boolean }; updatedAt: Iso;
}>;
export type ProjectDeleted = DomainEvent<'ProjectDeleted', { projectId: number; deletedAt: Iso }>;

export type RepositoryFolderCreated = DomainEvent<'RepositoryFolderCreated', {
  folderId: number; projectId: number; parentId: number | null; name: string; createdAt: Iso;
}>;
export type RepositoryFolderUpdated = DomainEvent<'RepositoryFolderUpdated', {
  folderId: number; changes: { name?: string; parentId?: number | null }; updatedAt: Iso;
}>;
export type RepositoryFolderDeleted = DomainEvent<'RepositoryFolderDeleted', { folderId: number; deletedAt: Iso }>;

export type RepositoryCaseCreated = DomainEvent<'RepositoryCaseCreated', {
  caseId: number; projectId: number; folderId: number | null; title: string; description: string | null; createdAt: Iso;
}>;
export type RepositoryCaseUpdated = DomainEvent<'RepositoryCaseUpdated', {
  caseId: number; changes: { title?: string; description?: string | null; folderId?: number | null }; updatedAt: Iso;
}>;
export type RepositoryCaseDeleted = DomainEvent<'RepositoryCaseDeleted', { caseId: number; deletedAt: Iso }>;

export type TestamentEvent =
  | IdBlockReserved | UniqueValueClaimed
  | UserRegistered | ApiTokenCreated | ApiTokenRevoked
  | ProjectCreated | ProjectUpdated | ProjectDeleted
  | RepositoryFolderCreated | RepositoryFolderUpdated | RepositoryFolderDeleted
  | RepositoryCaseCreated | RepositoryCaseUpdated | RepositoryCaseDeleted;

export type EventType = TestamentEvent['type'];

export const EVENT_TYPES: readonly EventType[] = [
  'IdBlockReserved', 'UniqueValueClaimed',
  'UserRegistered', 'ApiTokenCreated', 'ApiTokenRevoked',
  'ProjectCreated', 'ProjectUpdated', 'ProjectDeleted',
  'RepositoryFolderCreated', 'RepositoryFolderUpdated', 'RepositoryFolderDeleted',
  'RepositoryCaseCreated', 'RepositoryCaseUpdated', 'RepositoryCaseDeleted',
];

/** Narrow a stored envelope's data by its type. */
export type DataOf<T extends EventType> = Extract<TestamentEvent, { type: T }>['data'];
