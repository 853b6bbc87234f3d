/**
 * `testament`: import test results from a terminal or a CI pipeline; download and check evidence bundles. A thin client: it expands
 * globs, resolves names through POST /api/lookup, uploads the files to /api/test-results/import
 * and follows the stream; parsing happens on the server. Built into standalone binaries by
 * `npm run build:cli` (scripts/build-cli.ts).
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { glob } from 'tinyglobby';
import { version as VERSION } from '../../package.json';
import { type CiField, ciValueProblem } from '../shared/ciContext';
import { describeBundleReport, verifyBundle } from '../shared/evidenceBundle';
import { ciContextFromEnv } from './ciEnv';
import { type ImportEvent, type ImportFields, ServiceClient } from './client';
import { CliError, clearStored, effectiveSettings, masked, normaliseUrl, readStored, settingsFile, writeStored } from './settings';

const FORMATS = ['auto', 'junit', 'testng', 'nunit', 'xunit', 'mstest', 'mocha', 'cucumber'];

const HELP: Record<string, string> = {
  main: `testament ${VERSION}: import test results into Testament

Usage:
  testament import <file_glob...> -p <project> -n <test run name> [options]
  testament evidence (--run <id> | --milestone <id>) [-o <file.zip>]
  testament verify <bundle.zip> [--json]
  testament config set --url <instance_url> --token <API_TOKEN>
  testament config show
  testament config clear
  testament --version | --help | <command> --help

SERVICE_URL and SERVICE_TOKEN in the environment take precedence over the stored configuration.`,
  import: `testament import <file_glob...> -p <project> [-n <test run name>] [options]

Uploads result files (JUnit, TestNG, NUnit, xUnit, MSTest, Mocha, Cucumber) and shows the
import's progress. Globs are expanded by testament itself (quote them), the same on every OS.
Names are resolved on the server with your permissions; numbers are ids.

Options:
  -p, --project <name or id>    project (required)
  -n, --name <name>             name of the new test run (required unless --test-run)
      --test-run <name or id>   add the results to this run (the newest of that name)
  -F, --format <format>         ${FORMATS.join(', ')} (default auto)
  -s, --state <name or id>      workflow state of the run (scope RUNS)
  -c, --config <name or id>     configuration
  -m, --milestone <name or id>  milestone
  -f, --folder <name or id>     folder under which the suites become folders
  -t, --tags <list>             comma-separated tags ("a,b" or '"with, comma",b'); created when missing if you may
      --template <name or id>   template of new test cases
      --json                    print one JSON object instead of progress
  -h, --help                    this help

Where the run came from (kept on the run; read from GitHub Actions, GitLab CI, Jenkins,
CircleCI or Azure Pipelines variables when not given):
      --branch <name>           the branch built
      --commit <sha>            the commit built (7 to 64 hex digits)
      --build-url <url>         the build's page (http or https)
      --ci-job-id <id>          the CI job; the same files sent again for the same job and
                                attempt are recognised: the first import's run is the answer
      --attempt <n>             the attempt of the CI job (a re-run pipeline)
      --new-attempt             import the files again even if this job and attempt sent them

The last line counts the tests (run cases given a result), results and retries (attempts the
files say were retried: Surefire's flakyFailure/rerunFailure, TestNG's retried="true") the import
recorded, to compare with your runner's totals.

Exit codes: 0 imported; 1 the service refused or failed; 2 wrong usage (no file matched, bad option).`,
  evidence: `testament evidence (--run <id> | --milestone <id>) [-o <file.zip>]

Downloads the evidence bundle of a test run or a milestone (GET /api/evidence): its events with
their chain hashes, its runs and results with the cases as executed, its signatures, the files
kept with it, and a manifest with SHA-256 of every file. Then checks it as \`testament verify\` does.

Options:
  -r, --run <id>          the test run
  -m, --milestone <id>    the milestone
  -o, --output <file>     where to write it (default evidence-run-<id>.zip / evidence-milestone-<id>.zip)
  -h, --help              this help

Exit codes: 0 downloaded and intact; 1 refused, failed or not intact; 2 wrong usage.`,
  verify: `testament verify <bundle.zip> [--json]

Checks an evidence bundle offline, against itself alone: every file against the manifest, every
event's hash from its content and the hash before it, every signature's content hash, every kept
file against the SHA-256 recorded when it was stored. No service is needed.

Exit codes: 0 intact; 1 not intact (the problems are listed); 2 wrong usage or unreadable file.`,
  config: `testament config set --url <instance_url> --token <API_TOKEN>   store them (file mode 0600)
testament config show                                         show them (token masked) and where they come from
testament config clear                                        delete the stored configuration

The file: ${settingsFile()}`,
};

export async function run(argv: string[], out: (line: string) => void = (l) => process.stdout.write(`${l}\n`), err: (line: string) => void = (l) => process.stderr.write(`${l}\n`)): Promise<number> {
  try {
    const [command, ...rest] = argv;
    if (command === undefined || command === '-h' || command === '--help' || command === 'help') {
      out(HELP.main);
      return 0;
    }
    if (command === '-V' || command === '--version' || command === 'version') {
      out(VERSION);
      return 0;
    }
    if (command === 'config') return configCommand(rest, out);
    if (command === 'import') return await importCommand(rest, out, err);
    if (command === 'verify') return await verifyCommand(rest, out);
    if (command === 'evidence') return await evidenceCommand(rest, out);
    throw new CliError(`Unknown command "${command}". Run testament --help`, 2);
  } catch (error) {
    if (error instanceof CliError) {
      err(`testament: ${error.message}`);
      return error.exitCode;
    }
    if ((error as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
      err(`testament: ${(error as Error).message}. Run testament <command> --help`);
      return 2;
    }
    err(`testament: ${(error as Error).stack ?? String(error)}`);
    return 1;
  }
}

function configCommand(argv: string[], out: (line: string) => void): number {
  const [action, ...rest] = argv;
  const { values } = parseArgs({ args: rest, options: { url: { type: 'string', short: 'u' }, token: { type: 'string', short: 't' }, help: { type: 'boolean', short: 'h' } }, strict: true });
  if (action === undefined || values.help || action === '--help' || action === '-h') {
    out(HELP.config);
    return 0;
  }
  switch (action) {
    case 'set': {
      if (values.url === undefined && values.token === undefined) throw new CliError('Give --url, --token, or both', 2);
      const stored = readStored();
      const next = { url: values.url !== undefined ? normaliseUrl(values.url) : stored.url, token: values.token !== undefined ? values.token.trim() : stored.token };
      if (next.token === '') throw new CliError('The token is empty', 2);
      writeStored(next);
      out(`Saved to ${settingsFile()}`);
      return 0;
    }
    case 'show': {
      const s = effectiveSettings();
      out(`url:   ${s.url ?? '(not set)'}${s.url ? `  (from ${s.source.url})` : ''}`);
      out(`token: ${s.token ? masked(s.token) : '(not set)'}${s.token ? `  (from ${s.source.token})` : ''}`);
      return 0;
    }
    case 'clear':
      out(clearStored() ? `Removed ${settingsFile()}` : 'Nothing was stored');
      return 0;
    default:
      throw new CliError(`Unknown config action "${action}": set, show or clear`, 2);
  }
}

async function verifyCommand(argv: string[], out: (line: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, allowPositionals: true, strict: true, options: { json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
  if (values.help) {
    out(HELP.verify);
    return 0;
  }
  if (positionals.length !== 1) throw new CliError('Give one evidence bundle: testament verify <bundle.zip>', 2);
  const file = positionals[0];
  if (!fs.existsSync(file) || !fs.statSync(file).isFile()) throw new CliError(`No file ${file}`, 2);
  const report = await verifyBundle(file);
  if (values.json) out(JSON.stringify(report));
  else for (const line of describeBundleReport(file, report)) out(line);
  return report.ok ? 0 : 1;
}

async function evidenceCommand(argv: string[], out: (line: string) => void): Promise<number> {
  const { values } = parseArgs({
    args: argv, strict: true,
    options: { run: { type: 'string', short: 'r' }, milestone: { type: 'string', short: 'm' }, output: { type: 'string', short: 'o' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    out(HELP.evidence);
    return 0;
  }
  if ((values.run === undefined) === (values.milestone === undefined)) throw new CliError('Give exactly one of --run <id> and --milestone <id>', 2);
  const id = (values.run ?? values.milestone)!;
  if (!isId(id)) throw new CliError(`--${values.run !== undefined ? 'run' : 'milestone'} must be an id (a positive integer)`, 2);
  const settings = effectiveSettings();
  if (!settings.url) throw new CliError('No service URL: run testament config set --url <instance_url>, or set SERVICE_URL', 2);
  if (!settings.token) throw new CliError('No API token: run testament config set --token <API_TOKEN>, or set SERVICE_TOKEN', 2);
  const client = new ServiceClient(normaliseUrl(settings.url), settings.token, VERSION);
  const file = values.output ?? `evidence-${values.run !== undefined ? 'run' : 'milestone'}-${Number(id)}.zip`;
  const bytes = await client.downloadEvidence(values.run !== undefined ? { runId: Number(id) } : { milestoneId: Number(id) }, file);
  out(`wrote ${file} (${bytes.toLocaleString('en')} bytes)`);
  const report = await verifyBundle(file);
  for (const line of describeBundleReport(file, report)) out(line);
  return report.ok ? 0 : 1;
}

/** "a,b" or '"with, comma",b' → ['a', 'b'] / ['with, comma', 'b']. */
export function splitList(text: string): string[] {
  const items: string[] = [];
  let current = '';
  let quoted = false;
  for (const char of text) {
    if (char === '"') quoted = !quoted;
    else if (char === ',' && !quoted) {
      items.push(current);
      current = '';
    } else current += char;
  }
  items.push(current);
  return items.map((i) => i.trim()).filter((i) => i !== '');
}

const isId = (text: string) => /^[1-9]\d{0,9}$/.test(text.trim());

async function importCommand(argv: string[], out: (line: string) => void, err: (line: string) => void): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    strict: true,
    options: {
      project: { type: 'string', short: 'p' }, name: { type: 'string', short: 'n' }, 'test-run': { type: 'string' },
      format: { type: 'string', short: 'F', default: 'auto' }, state: { type: 'string', short: 's' }, config: { type: 'string', short: 'c' },
      milestone: { type: 'string', short: 'm' }, folder: { type: 'string', short: 'f' }, tags: { type: 'string', short: 't' },
      template: { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' },
      branch: { type: 'string' }, commit: { type: 'string' }, 'build-url': { type: 'string' }, 'ci-job-id': { type: 'string' },
      attempt: { type: 'string' }, 'new-attempt': { type: 'boolean' },
    },
  });
  if (values.help) {
    out(HELP.import);
    return 0;
  }
  if (positionals.length === 0) throw new CliError('Give one or more result files or globs', 2);
  if (!values.project) throw new CliError('Give the project: -p <name or id>', 2);
  if (!values.name && !values['test-run']) throw new CliError('Give the test run name (-n) or an existing run (--test-run)', 2);
  if (!FORMATS.includes(values.format!)) throw new CliError(`--format must be one of ${FORMATS.join(', ')}`, 2);
  const ci = ciContext(values, (line) => (values.json ? undefined : err(line)));

  const files = await glob(positionals.map((p) => p.replace(/\\/g, '/')), { absolute: true, onlyFiles: true, expandDirectories: false, dot: true });
  if (files.length === 0) throw new CliError(`No file matches ${positionals.join(' ')}`, 2);
  files.sort();

  const settings = effectiveSettings();
  if (!settings.url) throw new CliError('No service URL: run testament config set --url <instance_url>, or set SERVICE_URL', 2);
  if (!settings.token) throw new CliError('No API token: run testament config set --token <API_TOKEN>, or set SERVICE_TOKEN', 2);
  const client = new ServiceClient(normaliseUrl(settings.url), settings.token, VERSION);

  const resolve = async (type: string, text: string | undefined, projectId?: number, create = false): Promise<number | undefined> =>
    text === undefined ? undefined : isId(text) ? Number(text) : client.lookup(type, text.trim(), projectId, create);
  const projectId = (await resolve('project', values.project))!;
  const fields: ImportFields = {
    projectId,
    name: values.name,
    format: values.format!,
    testRunId: await resolve('testRun', values['test-run'], projectId),
    stateId: await resolve('state', values.state),
    configId: await resolve('config', values.config),
    milestoneId: await resolve('milestone', values.milestone, projectId),
    parentFolderId: await resolve('folder', values.folder, projectId),
    templateId: await resolve('template', values.template),
    tagIds: [],
  };
  for (const tag of values.tags ? splitList(values.tags) : []) fields.tagIds.push((await resolve('tag', tag, undefined, true))!);
  Object.assign(fields, ci.fields, values['new-attempt'] && { newAttempt: true });

  const show = values.json ? () => undefined : progressPrinter(out);
  const warnings: unknown[] = [];
  const outcome = await client.importResults(files, fields, (event: ImportEvent) => {
    if ('warning' in event) {
      warnings.push(event.warning);
      if (!values.json) err(`warning: ${event.warning.file}${event.warning.case ? ` (${event.warning.case})` : ''}: ${event.warning.message}`);
    } else if ('progress' in event) show(event.progress, event.status);
  });
  const { jobId, duplicateOf } = outcome;
  if (outcome.interrupted && !values.json) err(`The import was interrupted; it goes on by itself: waiting for job ${jobId}...`);
  // The job's own record, once the run is readable in full; then what it recorded, counted.
  const job = await client.finishedJob(jobId);
  if (job.state === 'failed') throw new CliError(`Import failed: ${job.error?.error ?? 'see the job'} (${job.error?.code ?? 'failed'})`);
  const testRunId = job.testRunId!;
  const results = job.counts?.results ?? 0;
  const tests = await client.testsOf(jobId);
  const retries = await client.retriesOf(jobId);
  const runUrl = `${client.url}/api/model/testRun/findUnique?q=${encodeURIComponent(JSON.stringify({ where: { id: testRunId } }))}`;
  if (values.json) {
    out(JSON.stringify({
      ok: true, testRunId, jobId, duplicateOf, projectId, url: runUrl, files: files.length, tests, results, retries, counts: job.counts, ci: { provider: ci.provider, ...ci.fields }, warnings,
    }));
  } else {
    if (duplicateOf !== null) out(`These files were sent for CI job ${fields.ciJobId} (attempt ${fields.attempt ?? 1}) before: import job ${jobId} has them, nothing was added (--new-attempt imports them again)`);
    out(`Imported ${files.length} file(s) into test run ${testRunId}: ${tests} test(s), ${results} result(s), ${retries} retr${retries === 1 ? 'y' : 'ies'} recorded${duplicateOf !== null ? ` by job ${jobId}` : ''}: ${runUrl}`);
  }
  return 0;
}

const CI_OPTIONS: [CiField, 'branch' | 'commit' | 'build-url' | 'ci-job-id' | 'attempt'][] = [
  ['branch', 'branch'], ['commit', 'commit'], ['buildUrl', 'build-url'], ['ciJobId', 'ci-job-id'], ['attempt', 'attempt'],
];

/**
 * The CI context: each option given, else what the CI service's variables say. A bad option is a
 * usage error; a variable the service would refuse is left out, with a note.
 */
function ciContext(values: Partial<Record<string, string | boolean>>, note: (line: string) => void) {
  const detected = ciContextFromEnv(process.env);
  for (const d of detected.dropped) note(`note: the ${detected.provider} variable for ${d.field} ("${d.value}") ${d.reason}; left out`);
  const fields: Pick<ImportFields, 'branch' | 'commit' | 'buildUrl' | 'ciJobId' | 'attempt'> = {};
  for (const [field, option] of CI_OPTIONS) {
    const given = values[option] as string | undefined;
    if (given === undefined) {
      const found = detected[field];
      if (found !== null) Object.assign(fields, { [field]: found });
      continue;
    }
    const text = given.trim();
    if (field === 'attempt') {
      if (!/^[1-9]\d{0,9}$/.test(text) || Number(text) > 2147483647) throw new CliError('--attempt must be a positive integer', 2);
      fields.attempt = Number(text);
      continue;
    }
    const problem = ciValueProblem(field, text);
    if (problem) throw new CliError(`--${option} ${problem}`, 2);
    Object.assign(fields, { [field]: text });
  }
  // A job id with no attempt: the first (the service reads it so too).
  if (fields.ciJobId !== undefined && fields.attempt === undefined) fields.attempt = 1;
  return { provider: detected.provider, fields };
}

/** A bar redrawn in place on a terminal; otherwise a line whenever the status changes. */
function progressPrinter(out: (line: string) => void): (progress: number, status: string) => void {
  const tty = process.stdout.isTTY === true;
  let last = '';
  return (progress, status) => {
    if (tty) {
      const width = 30;
      const filled = Math.round((progress / 100) * width);
      process.stdout.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(progress).padStart(3)}% ${status.slice(0, 60).padEnd(60)}`);
      if (progress >= 100) process.stdout.write('\n');
    } else if (status !== last) {
      out(`${String(progress).padStart(3)}% ${status}`);
    }
    last = status;
  };
}

if (require.main === module) {
  run(process.argv.slice(2)).then((code) => process.exit(code));
}
