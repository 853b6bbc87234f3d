/**
 * Where a test run came from: the CI context an import carries (form fields `branch`, `commit`,
 * `buildUrl`, `ciJobId`, `attempt`) and a test run keeps (`branch`, `commit`, `buildUrl`,
 * `ciJobId`, `ciAttempt`). One set of rules for the import routes and the model API.
 */
import { LIMITS } from '../../contracts/limits';

export interface CiContext {
  branch: string | null;
  commit: string | null;
  buildUrl: string | null;
  ciJobId: string | null;
  attempt: number | null;
}

export const NO_CI_CONTEXT: CiContext = { branch: null, commit: null, buildUrl: null, ciJobId: null, attempt: null };

export const MAX_BRANCH_LENGTH = LIMITS.name;
export const MAX_CI_JOB_ID_LENGTH = LIMITS.name;
export const MAX_BUILD_URL_LENGTH = LIMITS.url;
/** A commit: 7 to 64 hexadecimal digits (an abbreviated or full SHA-1, or SHA-256). */
export const COMMIT_PATTERN = /^[0-9a-fA-F]{7,64}$/;
const hasControl = (text: string) => [...text].some((c) => c.charCodeAt(0) < 0x20 || c.charCodeAt(0) === 0x7f);

export type CiField = 'branch' | 'commit' | 'buildUrl' | 'ciJobId' | 'attempt';

/** What is wrong with a value of a CI context field (null: nothing). Strings arrive trimmed. */
export function ciValueProblem(field: CiField, value: unknown): string | null {
  if (value === null) return null;
  if (field === 'attempt') {
    return typeof value === 'number' && Number.isSafeInteger(value) && value >= 1 && value <= 2147483647 ? null : 'must be a positive integer';
  }
  if (typeof value !== 'string') return 'must be a string';
  if (value === '') return 'must not be empty';
  switch (field) {
    case 'branch':
      if (value.length > MAX_BRANCH_LENGTH) return `is longer than ${MAX_BRANCH_LENGTH} characters`;
      return hasControl(value) ? 'must not hold control characters' : null;
    case 'ciJobId':
      if (value.length > MAX_CI_JOB_ID_LENGTH) return `is longer than ${MAX_CI_JOB_ID_LENGTH} characters`;
      return hasControl(value) ? 'must not hold control characters' : null;
    case 'commit':
      return COMMIT_PATTERN.test(value) ? null : 'must be 7 to 64 hexadecimal digits (a commit hash)';
    case 'buildUrl': {
      if (value.length > MAX_BUILD_URL_LENGTH) return `is longer than ${MAX_BUILD_URL_LENGTH} characters`;
      let url: URL;
      try {
        url = new URL(value);
      } catch {
        return 'must be an absolute http or https URL';
      }
      if (url.protocol !== 'http:' && url.protocol !== 'https:') return 'must be an http or https URL';
      // A URL with credentials would put them in the log and on every answer that shows the run.
      if (url.username !== '' || url.password !== '') return 'must not carry a user name or password';
      return null;
    }
  }
}
