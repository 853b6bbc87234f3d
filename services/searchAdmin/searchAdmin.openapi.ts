import type { OpenAPIV3 } from 'openapi-types';
import { connectionPaths } from './connection.openapi';
import { indicesPaths } from './indices.openapi';
import { monitoringPaths } from './monitoring.openapi';
import { reindexPaths } from './reindex.openapi';

/** /api/admin/search/* in the `custom` category of the OpenAPI documents (services/api/openapi.ts), tag `admin`. */
export function searchAdminPaths(): OpenAPIV3.PathsObject {
  return {
    ...connectionPaths(),
    ...indicesPaths(),
    ...monitoringPaths(),
    ...reindexPaths(),
  };
}
