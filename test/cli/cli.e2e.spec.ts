import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { seedDefaults } from '../../services/entities/seed';
import { registerUser } from '../../services/identity/identity.handlers';
import { systemMetadata } from '../../services/shared/context';
import { startTestApp, type TestApp } from '../support/app';
import { HttpClient } from '../support/server';
import { buildCli } from '../../scripts/build-cli';
import { runCli } from './cliRunner';

const PASSWORD = 'cli-password-1';
const FIXTURES = path.join(__dirname, '..', 'imports', 'fixtures');
const FORMATS: [string, string][] = [
  ['junit', 'junit-surefire.xml'], ['testng', 'testng.xml'], ['nunit', 'nunit3.xml'], ['xunit', 'xunit.xml'],
  ['mstest', 'mstest.trx'], ['mocha', 'mocha-spec.json'], ['cucumber', 'cucumber-js.json'],
];

/**
 * The `testament` CLI end to end against a started server, twice: its source run by node as a
 * process of its own, and the Linux x64 standalone binary (built here with bun, as
 * `npm run build:cli` does) run with an empty environment (no PATH, so no node): nothing but the
 * service settings and a home directory.
 * Slow: runs the CLI as 34 processes (17 of them imports into an in-process test app) twice: through node and tsx, then as a binary compiled here first with bun build --compile
 */
cliSuite('source, run by node', null);
cliSuite('standalone binary testament-linux-x64, empty environment', 'linux-x64');

function cliSuite(label: string, binary: string | null): void {
describe(`testament CLI end to end against a started server (${label})`, function () {
  this.timeout(300_000);
  let command: string | undefined;
  let app: TestApp;
  let admin: HttpClient;
  let token: string;
  let home: string;
  let work: string;
  const ids: Record<string, number> = {};
  const env = (extra: NodeJS.ProcessEnv = {}) => ({ HOME: home, XDG_CONFIG_HOME: path.join(home, '.config'), SERVICE_URL: app.url, SERVICE_TOKEN: token, ...extra });
  const cli = (args: string[], environment: NodeJS.ProcessEnv) => runCli(args, environment, command);
  const model = async (entity: string, op: string, body: unknown) => (await admin.post(`/api/model/${entity}/${op}`, body)).body.data;

  before(async function () {
    if (binary) {
      if (process.platform !== 'linux' || process.arch !== 'x64') {
        console.log(`  SKIPPED the CLI binary suite: it runs the linux-x64 build, and this is ${process.platform}-${process.arch}`);
        this.skip();
      }
      command = buildCli(binary, fs.mkdtempSync(path.join(os.tmpdir(), 'testament-cli-bin-')));
    }
    app = await startTestApp();
    const meta = systemMetadata('test');
    await seedDefaults(app.deps, meta);
    await registerUser(app.deps, { email: 'ci@example.com', name: 'CI', password: PASSWORD, access: 'ADMIN' }, meta);
    admin = new HttpClient(app.url);
    expect((await admin.post('/api/auth/login', { email: 'ci@example.com', password: PASSWORD })).status).to.equal(200);
    token = (await admin.post('/api/tokens', { name: 'cli' })).body.token;
    ids.project = (await model('project', 'create', { data: { name: 'Web Shop' } })).id;
    ids.milestone = (await model('milestone', 'create', { data: { name: 'R1', project: { connect: { id: ids.project } } } })).id;
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-cli-home-'));
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-cli-work-'));
    for (const [format, file] of FORMATS) {
      fs.mkdirSync(path.join(work, format));
      fs.copyFileSync(path.join(FIXTURES, file), path.join(work, format, file));
    }
  });
  after(async () => {
    if (command) fs.rmSync(path.dirname(command), { recursive: true, force: true });
    if (!app) return;
    await app.stop();
    fs.rmSync(home, { recursive: true, force: true });
    fs.rmSync(work, { recursive: true, force: true });
  });

  for (const [format, file] of FORMATS) {
    it(`imports ${format} (${file}) by glob, project name and format auto; the run holds every result`, async () => {
      const run = await cli(['import', path.join(work, format, '*'), '-p', 'Web Shop', '-n', `CLI ${format}`, '-m', 'R1', '-t', 'cli,"from ci"'], env());
      expect(run.code, run.stdout + run.stderr).to.equal(0);
      const runId = Number(/test run (\d+)/.exec(run.stdout)![1]);
      expect(run.stdout).to.include(`${app.url}/api/model/testRun/findUnique?q=`);
      const testRun = await model('testRun', 'findUnique', { where: { id: runId }, include: { tags: true, _count: { select: { results: true } } } });
      expect(testRun).to.include({ name: `CLI ${format}`, projectId: ids.project, milestoneId: ids.milestone, testRunType: format.toUpperCase() });
      expect(testRun.tags.map((t: any) => t.name).sort()).to.deep.equal(['cli', 'from ci']);
      expect(testRun._count.results).to.be.greaterThan(0);
      const audit = await admin.get(`/api/audit?type=ImportRequested&projectId=${ids.project}&via=cli`);
      expect(audit.body.data.length, 'the import recorded as requested through the CLI').to.be.greaterThan(0);
      // Plain progress lines when not on a terminal.
      expect(run.stdout).to.match(/^\s*\d+% /m);
    });
  }

  it('appends with --test-run (by name and by id), --name optional; --json prints one object', async () => {
    const first = await cli(['import', path.join(work, 'junit', '*.xml'), '-p', String(ids.project), '-n', 'Nightly'], env());
    expect(first.code, first.stderr).to.equal(0);
    const runId = Number(/test run (\d+)/.exec(first.stdout)![1]);
    const byName = await cli(['import', path.join(work, 'junit', '*.xml'), '-p', 'Web Shop', '--test-run', 'Nightly', '--json'], env());
    expect(byName.code, byName.stderr).to.equal(0);
    const answer = JSON.parse(byName.stdout.trim());
    expect(answer).to.include({ ok: true, testRunId: runId, projectId: ids.project });
    expect(answer.counts.results).to.be.greaterThan(0);
    const byId = await cli(['import', path.join(work, 'junit', '*.xml'), '-p', 'Web Shop', '--test-run', String(runId), '-F', 'junit'], env());
    expect(byId.code, byId.stderr).to.equal(0);
    const attempts = await model('testRunResult', 'aggregate', { where: { testRunId: runId }, _max: { attempt: true } });
    // Three imports of the same file; its test "flaky" has two attempts each (a flakyFailure, then the pass).
    expect(attempts._max.attempt).to.equal(6);
  });

  it('CI context from GitLab variables (an option wins); the last line counts tests, results and retries; a retried upload adds nothing; --new-attempt does', async () => {
    const sha = '0123456789abcdef0123456789abcdef01234567';
    const file = path.join(work, 'ci-report.xml');
    // "flaky" passed on its third run (two flakyFailures: 2 retries), "twice" is in the file twice (no retry): 3 tests, 6 results, 2 retries.
    fs.writeFileSync(file, `<?xml version="1.0"?><testsuite name="ci.Suite" tests="4">${['stable', 'twice', 'twice']
      .map((name) => `<testcase classname="ci.Suite" name="${name}" time="0.1"/>`).join('')}<testcase classname="ci.Suite" name="flaky" time="0.1">${
      '<flakyFailure message="not yet"/>'.repeat(2)}</testcase></testsuite>`);
    const gitlab = env({ GITLAB_CI: 'true', CI_COMMIT_REF_NAME: 'main', CI_COMMIT_SHA: sha, CI_JOB_URL: 'https://gitlab.example.com/acme/shop/-/jobs/77', CI_JOB_ID: '77' });
    const args = ['import', file, '-p', 'Web Shop', '-n', 'From GitLab', '--branch', 'release/1.0'];
    const first = await cli(args, gitlab);
    expect(first.code, first.stdout + first.stderr).to.equal(0);
    expect(first.stdout).to.match(/Imported 1 file\(s\) into test run \d+: 3 test\(s\), 6 result\(s\), 2 retries recorded: /);
    const runId = Number(/test run (\d+)/.exec(first.stdout)![1]);
    const run = await model('testRun', 'findUnique', { where: { id: runId }, include: { _count: { select: { results: true } } } });
    expect(run).to.include({ branch: 'release/1.0', commit: sha, buildUrl: 'https://gitlab.example.com/acme/shop/-/jobs/77', ciJobId: '77', ciAttempt: 1 });
    expect(run._count.results).to.equal(6);

    const again = await cli([...args, '--json'], gitlab);
    expect(again.code, again.stderr).to.equal(0);
    const answer = JSON.parse(again.stdout.trim());
    expect(answer).to.include({ ok: true, testRunId: runId, tests: 3, results: 6, retries: 2 });
    expect(answer.counts).to.include({ passed: 3, failed: 0 }); // each test by its final result: "twice" twice, "flaky" once
    expect(answer.duplicateOf).to.equal(answer.jobId);
    expect(answer.ci).to.include({ provider: 'gitlab-ci', ciJobId: '77', attempt: 1, branch: 'release/1.0' });
    const plain = await cli(args, gitlab);
    expect(plain.stdout).to.include('nothing was added');
    expect(plain.stdout).to.include(`into test run ${runId}:`);
    expect((await model('testRun', 'findUnique', { where: { id: runId }, include: { _count: { select: { results: true } } } }))._count.results, 'nothing twice').to.equal(6);

    const forced = await cli([...args, '--new-attempt'], gitlab);
    expect(forced.code, forced.stderr).to.equal(0);
    expect(Number(/test run (\d+)/.exec(forced.stdout)![1])).to.not.equal(runId);
    // Options without a CI service: the context still travels.
    const byOptions = await cli(['import', file, '-p', 'Web Shop', '-n', 'By options', '--commit', sha.slice(0, 7), '--build-url', 'https://ci.example.com/b/1', '--ci-job-id', 'local-1', '--attempt', '2'], env());
    expect(byOptions.code, byOptions.stderr).to.equal(0);
    const optionsRun = await model('testRun', 'findUnique', { where: { id: Number(/test run (\d+)/.exec(byOptions.stdout)![1]) } });
    expect(optionsRun).to.include({ branch: null, commit: sha.slice(0, 7), buildUrl: 'https://ci.example.com/b/1', ciJobId: 'local-1', ciAttempt: 2 });
    for (const bad of [['--commit', 'xyz'], ['--build-url', 'ftp://x/1'], ['--attempt', '0']]) {
      const refused = await cli([...args, ...bad], gitlab);
      expect(refused.code, bad.join(' ')).to.equal(2);
      expect(refused.stderr).to.include(bad[0]);
    }
  });

  it('fails clearly: a bad token (1), an unknown project (1), a glob that matches nothing (2), a missing option (2)', async () => {
    const bad = await cli(['import', path.join(work, 'junit', '*'), '-p', 'Web Shop', '-n', 'x'], env({ SERVICE_TOKEN: 'tst_nope' }));
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.match(/refused the token.*invalid-token/);
    const unknown = await cli(['import', path.join(work, 'junit', '*'), '-p', 'No Such Project', '-n', 'x'], env());
    expect(unknown.code).to.equal(1);
    expect(unknown.stderr).to.include('No project named "No Such Project"');
    const none = await cli(['import', path.join(work, 'nothing', '*.xml'), '-p', 'Web Shop', '-n', 'x'], env());
    expect(none.code).to.equal(2);
    expect(none.stderr).to.include('No file matches');
    const noProject = await cli(['import', path.join(work, 'junit', '*')], env());
    expect(noProject.code).to.equal(2);
    expect(noProject.stderr).to.include('-p');
    const noService = await cli(['import', path.join(work, 'junit', '*'), '-p', 'Web Shop', '-n', 'x'], { HOME: home, XDG_CONFIG_HOME: path.join(home, 'empty') });
    expect(noService.code).to.equal(2);
    expect(noService.stderr).to.include('config set --url');
  });

  it('config set / show / clear: a 0600 file in the config directory, the token masked, the environment first', async () => {
    const cfg = { HOME: home, XDG_CONFIG_HOME: path.join(home, '.config') };
    const set = await cli(['config', 'set', '--url', `${app.url}/`, '--token', token], cfg);
    expect(set.code, set.stderr).to.equal(0);
    const file = path.join(home, '.config', 'testament', 'config.json');
    expect(fs.statSync(file).mode & 0o777).to.equal(0o600);
    expect(JSON.parse(fs.readFileSync(file, 'utf8'))).to.deep.equal({ url: app.url, token });
    const show = await cli(['config', 'show'], cfg);
    expect(show.stdout).to.include(app.url);
    expect(show.stdout).to.not.include(token);
    expect(show.stdout).to.include(token.slice(0, 8));
    const stored = await cli(['import', path.join(work, 'mocha', '*'), '-p', 'Web Shop', '-n', 'From stored config'], cfg);
    expect(stored.code, stored.stderr).to.equal(0);
    const overridden = await cli(['config', 'show'], { ...cfg, SERVICE_URL: 'http://127.0.0.1:1' });
    expect(overridden.stdout).to.include('http://127.0.0.1:1  (from SERVICE_URL)');
    expect((await cli(['config', 'clear'], cfg)).code).to.equal(0);
    expect(fs.existsSync(file)).to.equal(false);
  });

  it('on a terminal, progress is a bar redrawn in place (run under script(1), which gives it a pty)', async function () {
    if (!fs.existsSync('/usr/bin/script')) {
      console.log('  SKIPPED the terminal progress bar: no /usr/bin/script (util-linux) to give the CLI a pty');
      this.skip();
    }
    const program = command ?? `${process.execPath} --require tsx/cjs ${path.join(__dirname, '..', '..', 'services', 'cli', 'main.ts')}`;
    const line = `${program} import '${path.join(work, 'junit', '*')}' -p 'Web Shop' -n 'On a terminal'`;
    const run = await runCli(['-q', '-e', '-c', line, '/dev/null'], { ...env(), PATH: process.env.PATH, TERM: 'xterm' }, '/usr/bin/script');
    expect(run.code, run.stdout + run.stderr).to.equal(0);
    expect(run.stdout).to.match(/\r\[#*\.*\] +\d+% /);
    expect(run.stdout).to.include('] 100% ');
    expect(run.stdout).to.match(/Imported 1 file\(s\) into test run \d+/);
  });

  it('--help for every command and --version', async () => {
    for (const args of [['--help'], ['import', '--help'], ['config', '--help']]) {
      const run = await cli(args, {});
      expect(run.code).to.equal(0);
      expect(run.stdout).to.include('testament');
    }
    const version = await cli(['--version'], {});
    expect(version.stdout.trim()).to.equal(JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')).version);
    expect((await cli(['frobnicate'], {})).code).to.equal(2);
  });
});
}
