import { auditProjection } from './audit';
import { claimsProjection } from './claims';
import { filesProjection } from './files';
import { identityProjection } from './identity';
import { importsProjection } from './imports';
import { readModelProjection } from './readModel';
import { searchReindexProjection } from './searchReindex';
import type { Projection } from './runtime/projection';

/** Every projection this codebase runs, by name (the names `npm run rebuild` accepts). */
export const ALL_PROJECTIONS: readonly Projection[] = [identityProjection, readModelProjection, auditProjection, importsProjection, filesProjection, claimsProjection, searchReindexProjection];

export function projectionByName(name: string): Projection | undefined {
  return ALL_PROJECTIONS.find((p) => p.name === name);
}
