import { expect } from 'chai';
import { ciContextFromEnv } from '../../services/cli/ciEnv';

const SHA = '0123456789abcdef0123456789abcdef01234567';

/** The CI context the CLI reads from each CI service's variables (names as each service documents them). */
describe('CLI: CI context from the environment', () => {
  const context = (env: Record<string, string>) => {
    const { dropped: _d, ...rest } = ciContextFromEnv(env);
    return rest;
  };

  it('outside CI: nothing', () => {
    expect(ciContextFromEnv({ PATH: '/usr/bin', GITHUB_SHA: SHA })).to.deep.equal({
      provider: null, branch: null, commit: null, buildUrl: null, ciJobId: null, attempt: null, dropped: [],
    });
  });

  it('GitHub Actions: ref name, sha, the run page, run id and job as the job, the run attempt', () => {
    const env = {
      GITHUB_ACTIONS: 'true', GITHUB_REF_NAME: 'main', GITHUB_SHA: SHA, GITHUB_SERVER_URL: 'https://github.com', GITHUB_REPOSITORY: 'acme/shop',
      GITHUB_RUN_ID: '9876543210', GITHUB_JOB: 'test', GITHUB_RUN_ATTEMPT: '3',
    };
    expect(context(env)).to.deep.equal({
      provider: 'github-actions', branch: 'main', commit: SHA, buildUrl: 'https://github.com/acme/shop/actions/runs/9876543210', ciJobId: '9876543210-test', attempt: 3,
    });
    // A pull request: GITHUB_REF_NAME is "<number>/merge", the source branch is GITHUB_HEAD_REF.
    expect(context({ ...env, GITHUB_REF_NAME: '42/merge', GITHUB_HEAD_REF: 'feature/login' }).branch).to.equal('feature/login');
    expect(context({ ...env, GITHUB_HEAD_REF: '' }).branch).to.equal('main');
  });

  it('GitLab CI: ref name, sha, job URL, job id; attempt 1 (a retried job has a new id)', () => {
    expect(context({
      GITLAB_CI: 'true', CI_COMMIT_REF_NAME: 'release/2.0', CI_COMMIT_SHA: SHA, CI_JOB_URL: 'https://gitlab.example.com/acme/shop/-/jobs/4711', CI_JOB_ID: '4711',
    })).to.deep.equal({
      provider: 'gitlab-ci', branch: 'release/2.0', commit: SHA, buildUrl: 'https://gitlab.example.com/acme/shop/-/jobs/4711', ciJobId: '4711', attempt: 1,
    });
  });

  it('Jenkins: BRANCH_NAME (else GIT_BRANCH without origin/), GIT_COMMIT, BUILD_URL, BUILD_TAG', () => {
    const env = {
      JENKINS_URL: 'https://jenkins.example.com/', BRANCH_NAME: 'PR-7', GIT_BRANCH: 'origin/main', GIT_COMMIT: SHA,
      BUILD_URL: 'https://jenkins.example.com/job/shop/12/', BUILD_TAG: 'jenkins-shop-12',
    };
    expect(context(env)).to.deep.equal({
      provider: 'jenkins', branch: 'PR-7', commit: SHA, buildUrl: 'https://jenkins.example.com/job/shop/12/', ciJobId: 'jenkins-shop-12', attempt: 1,
    });
    const { BRANCH_NAME: _b, ...freestyle } = env;
    expect(context(freestyle).branch).to.equal('main');
  });

  it('CircleCI: branch, sha1, build URL, workflow job id', () => {
    expect(context({
      CIRCLECI: 'true', CIRCLE_BRANCH: 'main', CIRCLE_SHA1: SHA, CIRCLE_BUILD_URL: 'https://circleci.com/gh/acme/shop/123',
      CIRCLE_WORKFLOW_JOB_ID: 'a1b2c3d4-0000-4000-8000-000000000001',
    })).to.deep.equal({
      provider: 'circleci', branch: 'main', commit: SHA, buildUrl: 'https://circleci.com/gh/acme/shop/123', ciJobId: 'a1b2c3d4-0000-4000-8000-000000000001', attempt: 1,
    });
  });

  it('Azure Pipelines: the full source branch, source version, the build results page, build id, job attempt', () => {
    const env = {
      TF_BUILD: 'True', BUILD_SOURCEBRANCH: 'refs/heads/feature/login', BUILD_SOURCEBRANCHNAME: 'login', BUILD_SOURCEVERSION: SHA,
      SYSTEM_COLLECTIONURI: 'https://dev.azure.com/acme/', SYSTEM_TEAMPROJECT: 'Web Shop', BUILD_BUILDID: '321', SYSTEM_JOBATTEMPT: '2',
    };
    expect(context(env)).to.deep.equal({
      provider: 'azure-pipelines', branch: 'feature/login', commit: SHA, buildUrl: 'https://dev.azure.com/acme/Web%20Shop/_build/results?buildId=321', ciJobId: '321', attempt: 2,
    });
    const { BUILD_SOURCEBRANCH: _s, ...onlyName } = env;
    expect(context(onlyName).branch).to.equal('login');
    expect(context({ ...env, SYSTEM_PULLREQUEST_SOURCEBRANCH: 'refs/heads/fix/x' }).branch).to.equal('fix/x');
  });

  it('a variable the service would refuse is left out and reported, the rest kept', () => {
    const detected = ciContextFromEnv({ GITLAB_CI: 'true', CI_COMMIT_SHA: 'not-a-sha', CI_JOB_URL: 'ftp://x/1', CI_JOB_ID: '5', CI_COMMIT_REF_NAME: 'main' });
    expect(detected).to.include({ provider: 'gitlab-ci', commit: null, buildUrl: null, ciJobId: '5', branch: 'main', attempt: 1 });
    expect(detected.dropped.map((d) => d.field)).to.deep.equal(['commit', 'buildUrl']);
    const github = ciContextFromEnv({ GITHUB_ACTIONS: 'true', GITHUB_RUN_ID: '1', GITHUB_RUN_ATTEMPT: 'zero' });
    expect(github.attempt).to.equal(null);
    expect(github.dropped).to.deep.equal([{ field: 'attempt', value: 'zero', reason: 'must be a positive integer' }]);
  });
});
