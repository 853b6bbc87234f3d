import fs from 'node:fs';
import path from 'node:path';
import { embeddedDeployment, kafkaDeployment, OwnInfrastructure, tempWorkDir, type DeploymentName } from './deployments';
import { cleanUpAll } from './processes';
import { formatReport, runDeployment, type ChaosReport } from './run';

export { formatReport, type ChaosReport } from './run';

export interface ChaosOptions {
  short: boolean;
  deployments: DeploymentName[];
  /** A Kafka deployment whose broker or search node cannot be started fails instead of being skipped. */
  requireServices: boolean;
  log?: (line: string) => void;
}

export interface ChaosOutcome {
  reports: ChaosReport[];
  /** Deployments not run, with why. */
  skipped: Array<{ deployment: DeploymentName; reason: string }>;
  ok: boolean;
}

/** Runs the chaos load on each deployment in turn; everything started is stopped at the end, whatever happened. */
export async function runChaos(opts: ChaosOptions): Promise<ChaosOutcome> {
  const log = opts.log ?? ((line: string) => console.log(line));
  const workDir = tempWorkDir();
  const outcome: ChaosOutcome = { reports: [], skipped: [], ok: true };
  try {
    for (const name of opts.deployments) {
      if (name === 'embedded') {
        const deployment = embeddedDeployment(workDir);
        try {
          outcome.reports.push(await runDeployment(deployment, { short: opts.short, log }));
        } finally {
          await deployment.stop();
        }
        continue;
      }
      const infra = new OwnInfrastructure(path.join(workDir, 'infra-logs'));
      try {
        log(`[kafka] starting a Kafka broker on ${infra.brokers} and OpenSearch on ${infra.searchUrl} (infra/kafka, infra/opensearch)`);
        await infra.start();
      } catch (err) {
        infra.stop();
        const reason = (err as Error).message.split('\n').slice(0, 6).join(' | ');
        if (opts.requireServices) throw new Error(`REQUIRE_SERVICES=1 and the Kafka deployment's services could not be started: ${reason}`, { cause: err });
        log(`SKIPPED the kafka deployment because Kafka or OpenSearch could not be started: ${reason}`);
        outcome.skipped.push({ deployment: 'kafka', reason });
        continue;
      }
      const deployment = kafkaDeployment(workDir, infra);
      let keepDatabase = false;
      try {
        const report = await runDeployment(deployment, { short: opts.short, log });
        outcome.reports.push(report);
        keepDatabase = !report.ok && process.env.CHAOS_KEEP_FAILED === '1';
      } finally {
        await deployment.stop({ keepDatabase });
        infra.stop();
      }
    }
  } finally {
    cleanUpAll();
  }
  outcome.ok = outcome.reports.every((r) => r.ok);
  // The logs stay for a failed run (they say why); a passed run's go.
  if (outcome.ok) fs.rmSync(workDir, { recursive: true, force: true });
  for (const r of outcome.reports) log(formatReport(r));
  return outcome;
}
