import type { SearchDocument, SearchType } from '../../../services/shared/search';

/**
 * Search documents for tests: `searchDocument` fills every field a type does not have with null or
 * empty (as the indexer does), and `sampleCorpus` is a small, realistic set over two projects that
 * the engine contract (engineContract.ts) asserts on. Change the corpus with the contract: its
 * expectations name these ids.
 */
export function searchDocument(type: SearchType, id: string, fields: Partial<SearchDocument> = {}): SearchDocument {
  return {
    type, id, projectId: 'p1', project: 'Web shop', title: `${type} ${id}`, description: null, content: null, tags: [],
    folder: null, template: null, state: null, status: null, creator: null, configuration: null, branch: null,
    failureType: null, runId: null, caseId: null, customFields: [], createdAt: '2024-01-01T00:00:00.000Z', updatedAt: null,
    executedAt: null, ...fields,
  };
}

const NPE_TRACE = [
  'java.lang.NullPointerException: Cannot invoke "com.example.auth.User.getName()" because "user" is null',
  '\tat com.example.auth.LoginService.login(LoginService.java:42)',
  '\tat com.example.auth.TokenCache$2.refreshToken(TokenCache.java:17)',
  '\tat com.example.auth.LoginController.submit(LoginController.java:88)',
  '\tat org.springframework.web.servlet.FrameworkServlet.service(FrameworkServlet.java:897)',
].join('\n');

/**
 * Project p1 ("Web shop"), which the caller may read, and project p2 ("Back office"), which the
 * caller may not (the access filter is `terms projectId [p1]`): p2's documents match the same
 * words on purpose, so that a leak shows.
 */
export const sampleCorpus = {
  /** Title match for "login"; steps about login. */
  loginCase: searchDocument('repository_cases', 'c1', {
    title: 'Login with valid credentials',
    description: 'A registered user signs in from the start page.',
    content: '1. Open the login page\n   Expected: the form shows e-mail and password fields\n2. Enter a valid e-mail and password and press "Sign in"\n   Expected: the dashboard greets the user by name',
    tags: ['smoke', 'auth'], folder: 'Web / Authentication', template: 'Steps', state: 'Active', creator: 'Alice Martin',
    customFields: [{ name: 'Priority', value: 'High' }, { name: 'Component', value: 'Authentication service' }],
    createdAt: '2024-01-10T09:00:00.000Z', updatedAt: '2024-02-01T10:00:00.000Z',
  }),
  /** "login" in the description only. */
  passwordResetCase: searchDocument('repository_cases', 'c2', {
    title: 'Password reset e-mail',
    description: 'Covers the forgotten password link below the login form.',
    content: '1. Click "Forgot password?"\n   Expected: a reset e-mail arrives within a minute\n2. Follow the link and choose a new password\n   Expected: the new password is accepted',
    tags: ['auth'], folder: 'Web / Authentication', template: 'Steps', state: 'Draft', creator: 'Bob Stone',
    customFields: [{ name: 'Priority', value: 'Medium' }],
    createdAt: '2024-01-20T09:00:00.000Z',
  }),
  /** "test" (singular) in the title: "tests" must find it. HTML in its steps, to be escaped in highlights. */
  exportCase: searchDocument('repository_cases', 'c3', {
    title: 'Export test results to CSV',
    description: 'The export keeps the order of the run.',
    content: '1. Name the export <script>alert("x")</script> & "quotes"\n   Expected: the file name is shown as typed, no script runs\n2. Download the CSV\n   Expected: one line per test result',
    tags: ['export', 'regression'], folder: 'Reports', template: 'Text', state: 'Active', creator: 'Alice Martin',
    createdAt: '2024-02-15T09:00:00.000Z',
  }),
  /** A failure of c1 in run r1: message as title, stack trace as content, "failed" in the description. */
  npeFailure: searchDocument('failures', 'f1', {
    title: 'java.lang.NullPointerException: Cannot invoke "com.example.auth.User.getName()" because "user" is null',
    description: 'Login with valid credentials failed on Chrome / Linux',
    content: NPE_TRACE, status: 'failed', failureType: 'NullPointerException', runId: 'r1', caseId: 'c1',
    configuration: 'Chrome / Linux', branch: 'main', creator: 'CI bot',
    createdAt: '2024-03-02T03:15:00.000Z', executedAt: '2024-03-02T03:14:00.000Z',
  }),
  /** A run whose description says "Failing". */
  regressionRun: searchDocument('test_runs', 'r1', {
    title: 'Release 2.4 regression',
    description: 'Failing cases are retried nightly before the release.',
    tags: ['release'], state: 'In progress', creator: 'Carol Diaz', configuration: 'Chrome / Linux',
    createdAt: '2024-03-01T08:00:00.000Z', executedAt: '2024-03-03T18:00:00.000Z',
  }),
  session: searchDocument('sessions', 's1', {
    title: 'Checkout with expired coupons',
    content: 'Mission: explore how checkout treats coupons that expired yesterday, today and tomorrow.',
    tags: ['checkout'], state: 'Done', creator: 'Bob Stone', createdAt: '2024-02-20T14:00:00.000Z',
  }),
  /** Values full of characters that mean something in SQL, LIKE patterns and query syntax. */
  oddCase: searchDocument('repository_cases', 'c4', {
    title: 'Discount of 50% for O\'Brien\'s cart',
    description: 'A path like C:\\shop\\cart_items must be kept as typed.',
    content: 'Apply the code "HALF_OFF"', tags: ['50%_off', "o'brien", 'back\\slash'], folder: 'Cart / 50%_off',
    template: 'Text', state: 'Active', creator: 'Dan O\'Brien', createdAt: '2024-02-25T09:00:00.000Z',
  }),
  /** Project p2: the same words, never visible to the caller of p1. */
  otherProjectFailure: searchDocument('failures', 'f2', {
    projectId: 'p2', project: 'Back office',
    title: 'java.lang.NullPointerException in the login handler', description: 'Login failed on Safari',
    content: 'java.lang.NullPointerException\n\tat com.example.backoffice.LoginHandler.handle(LoginHandler.java:17)',
    tags: ['smoke', 'auth', 'secret-tag'], folder: 'Web / Authentication', status: 'failed', failureType: 'NullPointerException',
    runId: 'r9', caseId: 'c9', createdAt: '2024-03-05T09:00:00.000Z', executedAt: '2024-03-05T09:00:00.000Z',
  }),
  otherProjectCase: searchDocument('repository_cases', 'c9', {
    projectId: 'p2', project: 'Back office',
    title: 'Login of an administrator', description: 'Tests the admin login', content: '1. Open the login page',
    tags: ['smoke', 'secret-tag'], folder: 'Secret folder', template: 'Steps', state: 'Active', createdAt: '2024-01-05T09:00:00.000Z',
  }),
} satisfies Record<string, SearchDocument>;

export const sampleDocuments: readonly SearchDocument[] = Object.values(sampleCorpus);

/** Documents of the corpus the p1 caller may see. */
export const visibleDocuments = sampleDocuments.filter((d) => d.projectId === 'p1');
