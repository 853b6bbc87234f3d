import { type CiContext, type CiField, ciValueProblem } from '../shared/ciContext';

/**
 * The CI context of an import, from the variables the usual CI services set: which service runs
 * the CLI, the branch and commit built, the build's page, the job (what makes a retried upload
 * recognisable) and its attempt. Options given on the command line win (services/cli/main.ts).
 */

export type CiProvider = 'github-actions' | 'gitlab-ci' | 'jenkins' | 'circleci' | 'azure-pipelines';

export interface DetectedCi extends CiContext {
  provider: CiProvider | null;
  /** Values a variable held that the service would refuse (left out, and said so). */
  dropped: { field: CiField; value: string; reason: string }[];
}

type Env = Record<string, string | undefined>;

const set = (value: string | undefined): string | null => (value === undefined || value.trim() === '' ? null : value.trim());
const stripRef = (ref: string | null): string | null => ref?.replace(/^refs\/heads\//, '') ?? null;
const positive = (value: string | undefined): number | null => (set(value) !== null && /^[1-9]\d{0,9}$/.test(value!.trim()) ? Number(value!.trim()) : null);

function raw(env: Env): { provider: CiProvider | null; values: Omit<CiContext, 'attempt'> & { attempt: string | number | null } } {
  if (env.GITHUB_ACTIONS === 'true') {
    const runId = set(env.GITHUB_RUN_ID);
    const server = set(env.GITHUB_SERVER_URL) ?? 'https://github.com';
    return {
      provider: 'github-actions',
      values: {
        // A pull request's GITHUB_REF_NAME is "<number>/merge"; its source branch is GITHUB_HEAD_REF.
        branch: set(env.GITHUB_HEAD_REF) ?? set(env.GITHUB_REF_NAME),
        commit: set(env.GITHUB_SHA),
        buildUrl: runId && set(env.GITHUB_REPOSITORY) ? `${server.replace(/\/+$/, '')}/${env.GITHUB_REPOSITORY!.trim()}/actions/runs/${runId}` : null,
        ciJobId: runId ? [runId, set(env.GITHUB_JOB)].filter(Boolean).join('-') : null,
        attempt: set(env.GITHUB_RUN_ATTEMPT) ?? 1,
      },
    };
  }
  if (env.GITLAB_CI === 'true') {
    return {
      provider: 'gitlab-ci',
      // A retried GitLab job gets a new CI_JOB_ID: the attempt within one job is always 1.
      values: { branch: set(env.CI_COMMIT_REF_NAME), commit: set(env.CI_COMMIT_SHA), buildUrl: set(env.CI_JOB_URL), ciJobId: set(env.CI_JOB_ID), attempt: 1 },
    };
  }
  if (set(env.JENKINS_URL) !== null) {
    return {
      provider: 'jenkins',
      values: {
        // GIT_BRANCH (the Git plugin) names the remote: "origin/main".
        branch: set(env.BRANCH_NAME) ?? set(env.GIT_BRANCH)?.replace(/^origin\//, '') ?? null,
        commit: set(env.GIT_COMMIT), buildUrl: set(env.BUILD_URL), ciJobId: set(env.BUILD_TAG), attempt: 1,
      },
    };
  }
  if (env.CIRCLECI === 'true') {
    return {
      provider: 'circleci',
      values: { branch: set(env.CIRCLE_BRANCH), commit: set(env.CIRCLE_SHA1), buildUrl: set(env.CIRCLE_BUILD_URL), ciJobId: set(env.CIRCLE_WORKFLOW_JOB_ID), attempt: 1 },
    };
  }
  if ((env.TF_BUILD ?? '').toLowerCase() === 'true') {
    const buildId = set(env.BUILD_BUILDID);
    const collection = set(env.SYSTEM_COLLECTIONURI);
    const project = set(env.SYSTEM_TEAMPROJECT);
    return {
      provider: 'azure-pipelines',
      values: {
        // BUILD_SOURCEBRANCHNAME is only the last segment ("x" of feature/x): the full ref is used where there is one.
        branch: stripRef(set(env.SYSTEM_PULLREQUEST_SOURCEBRANCH)) ?? stripRef(set(env.BUILD_SOURCEBRANCH)) ?? set(env.BUILD_SOURCEBRANCHNAME),
        commit: set(env.BUILD_SOURCEVERSION),
        buildUrl: buildId && collection && project ? `${collection.replace(/\/*$/, '/')}${encodeURIComponent(project)}/_build/results?buildId=${buildId}` : null,
        ciJobId: buildId,
        attempt: set(env.SYSTEM_JOBATTEMPT) ?? 1,
      },
    };
  }
  return { provider: null, values: { branch: null, commit: null, buildUrl: null, ciJobId: null, attempt: null } };
}

/** The CI context the environment describes; a value the service would refuse is left out and reported in `dropped`. */
export function ciContextFromEnv(env: Env): DetectedCi {
  const { provider, values } = raw(env);
  const detected: DetectedCi = { provider, branch: null, commit: null, buildUrl: null, ciJobId: null, attempt: null, dropped: [] };
  for (const field of ['branch', 'commit', 'buildUrl', 'ciJobId'] as const) {
    const value = values[field];
    if (value === null) continue;
    const problem = ciValueProblem(field, value);
    if (problem) detected.dropped.push({ field, value, reason: problem });
    else detected[field] = value;
  }
  if (values.attempt !== null) {
    const attempt = typeof values.attempt === 'number' ? values.attempt : positive(values.attempt);
    if (attempt === null) detected.dropped.push({ field: 'attempt', value: String(values.attempt), reason: 'must be a positive integer' });
    else detected.attempt = attempt;
  }
  return detected;
}
