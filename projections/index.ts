import { auditProjection } from './audit';
import { claimsProjection } from './claims';
import { externalImportsProjection } from './externalImports';
import { filesProjection } from './files';
import { identityProjection } from './identity';
import { importsProjection } from './imports';
import { notificationsProjection } from './notifications';
import { readModelProjection } from './readModel';
import { searchReindexProjection } from './searchReindex';
import type { Projection } from './runtime/projection';

/** Every projection this codebase runs, by name (the names `npm run rebuild` accepts). */
export const ALL_PROJECTIONS: readonly Projection[] = [identityProjection, readModelProjection, auditProjection, importsProjection, filesProjection, claimsProjection, searchReindexProjection, notificationsProjection, externalImportsProjection];

export function projectionByName(name: string): Projection | undefined {
  return ALL_PROJECTIONS.find((p) => p.name === name);
}
