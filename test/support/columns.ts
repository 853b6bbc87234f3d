import type { ImportedColumns } from '../../contracts/events';

/** Rows as a chunk's columns (one array per key); `keys` gives the columns when there are no rows. */
export function columns<T extends object>(keys: readonly (keyof T)[], rows: T[]): ImportedColumns<T> {
  return Object.fromEntries(keys.map((key) => [key, rows.map((row) => row[key])])) as ImportedColumns<T>;
}

export const FOLDER_KEYS = ['folderId', 'parentId', 'name'] as const;
export const CASE_KEYS = ['caseId', 'folderId', 'title', 'className'] as const;
/** A v2 chunk's cases: with their identity. */
export const CASE_V2_KEYS = [...CASE_KEYS, 'identityKey', 'scope'] as const;
export const ADOPTED_KEYS = ['caseId', 'identityKey', 'identityScope'] as const;
export const SHOWN_KEYS = ['testRunCaseId', 'statusId'] as const;
export const SUITE_OUTPUT_KEYS = ['folderId', 'suite', 'systemOut', 'systemErr'] as const;
export const SUITE_PROPERTY_KEYS = ['name', 'value'] as const;
export const RUN_CASE_KEYS = ['testRunCaseId', 'repositoryCaseId', 'order'] as const;
export const RESULT_KEYS = [
  'resultId', 'testRunCaseId', 'statusId', 'durationMs', 'executedAt', 'message', 'failureType', 'stackTrace', 'systemOut', 'systemErr', 'file', 'line',
  'properties', 'attempt',
] as const;
/** A v2 chunk's results: with whether each was retried. */
export const RESULT_V2_KEYS = [...RESULT_KEYS, 'retried'] as const;
