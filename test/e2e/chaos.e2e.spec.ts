import { expect } from 'chai';
import { formatReport, runChaos } from '../../scripts/chaos/index';
import { KAFKA_BROKERS, kafkaAnswers } from '../support/kafkaBroker.cjs';

/**
 * The chaos run's short form (`npm run chaos -- --short`, docs/reliability.md), through the same
 * code: the service started as separate processes under a mixed load while faults are injected,
 * then every acknowledged write looked for once in the read model and in search, and every 5xx
 * judged. The embedded deployment always; the Kafka one where the Kafka suites run (a broker
 * answers at KAFKA_BROKERS, test/support/kafkaBroker.cjs), on a broker and an OpenSearch node of
 * its own (infra/, on ports 19092 and 19200, stopped and started by its faults): else skipped with a
 * visible line; with REQUIRE_SERVICES=1 it runs, and fails if they cannot be started.
 * Exclusive with Kafka: up to 6 processes of the service and 8 readers at once, which would leave the files beside it short of PostgreSQL connections (100 by default) and of CPU; the embedded deployment alone (one process on its own embedded PostgreSQL) shares the machine
 * Slow: 8,000 JUnit results in 4 uploads and a 200-case migration under 8 readers and 2 searchers, embedded (2 faults), then, if infra/ starts, on 6 processes with own Kafka and OpenSearch (6 faults)
 */
describe('chaos: faults under load (short form)', function () {
  this.timeout(15 * 60_000);
  const log = (line: string) => console.log(`      ${line.split('\n').join('\n      ')}`);

  it('embedded: every acknowledged write once in the read model and in search, no unexcused 5xx', async () => {
    const outcome = await runChaos({ short: true, deployments: ['embedded'], requireServices: true, log });
    expect(outcome.reports).to.have.length(1);
    const [report] = outcome.reports;
    expect(report.failures, formatReport(report)).to.deep.equal([]);
    expect(report.resultsFound).to.equal(report.resultsAcknowledged);
    expect(report.resultsAcknowledged).to.be.greaterThan(0);
  });

  it('kafka roles + OpenSearch: the same, while a worker, the projector, the indexer, OpenSearch, Kafka and PostgreSQL fail in turn', async function () {
    const requireServices = process.env.REQUIRE_SERVICES === '1';
    if (!requireServices && !(await kafkaAnswers())) {
      console.log(`  SKIPPED chaos (kafka deployment) because no Kafka broker answers at ${KAFKA_BROKERS.join(',')}, so the Kafka suites do not run (npm run kafka:up; this one then starts a broker and an OpenSearch node of its own from infra/)`);
      this.skip();
    }
    const outcome = await runChaos({ short: true, deployments: ['kafka'], requireServices, log });
    if (outcome.skipped.length > 0) {
      console.log(`  SKIPPED chaos (kafka deployment) because ${outcome.skipped[0].reason}`);
      this.skip();
    }
    const [report] = outcome.reports;
    expect(report.failures, formatReport(report)).to.deep.equal([]);
    expect(report.resultsFound).to.equal(report.resultsAcknowledged);
  });
});
