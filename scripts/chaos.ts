/**
 * `npm run chaos -- [--short] [--deployment embedded|kafka|both]`
 *
 * Faults under load, measured (docs/reliability.md): the service started as separate OS processes
 * (the embedded default; and api, relay, projector, indexer and two workers on Kafka + OpenSearch
 * + the machine PostgreSQL), a mixed load of CI uploads, readers, searches and a migration, while a
 * worker, the projector, the indexer, OpenSearch, the Kafka broker and PostgreSQL fail in turn.
 * Then every acknowledged write is looked for, once, in the read model and in search. Prints the
 * figures; exit code 1 when a check failed. REQUIRE_SERVICES=1: a Kafka or OpenSearch that cannot
 * be started fails the run instead of skipping the Kafka deployment.
 */
import { runChaos } from './chaos/index';
import type { DeploymentName } from './chaos/deployments';

function parse(argv: string[]): { short: boolean; deployments: DeploymentName[] } {
  let short = false;
  let deployment = 'both';
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--short') short = true;
    else if (arg === '--deployment') deployment = argv[++i] ?? '';
    else if (arg.startsWith('--deployment=')) deployment = arg.slice('--deployment='.length);
    else throw new Error(`unknown argument ${arg} (usage: npm run chaos -- [--short] [--deployment embedded|kafka|both])`);
  }
  if (!['embedded', 'kafka', 'both'].includes(deployment)) throw new Error(`--deployment must be embedded, kafka or both, got "${deployment}"`);
  return { short, deployments: deployment === 'both' ? ['embedded', 'kafka'] : [deployment as DeploymentName] };
}

async function main(): Promise<void> {
  const { short, deployments } = parse(process.argv.slice(2));
  const requireServices = process.env.REQUIRE_SERVICES === '1' || process.env.REQUIRE_SERVICES === 'true';
  const outcome = await runChaos({ short, deployments, requireServices });
  console.log(outcome.ok ? 'chaos: every check passed' : 'chaos: FAILED');
  process.exit(outcome.ok ? 0 : 1);
}

main().catch((err) => {
  console.error(`chaos: ${(err as Error).stack ?? err}`);
  process.exit(1);
});
