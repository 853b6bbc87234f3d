import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';

const ROOT = path.resolve(__dirname, '../../..');

/**
 * The clients of the servers npm start's defaults do without (Kafka, EventStoreDB, OpenSearch,
 * Elasticsearch) are loaded only when their URL asks for one: together some 70 MB of a process's
 * memory (bench/README.md). A fresh process loads every module of the service's processes, then
 * says which of those packages are in its module cache.
 */
describe('service processes: the clients of optional servers are loaded only when configured', function () {
  this.timeout(60_000);

  it('loading every role of the service loads no Kafka, EventStoreDB, OpenSearch or Elasticsearch client', () => {
    const script = `
      for (const m of ['./services/process/main', './services/process/roles', './services/process/platform', './services/process/searchSettings',
        './projections/runtime/kafkaProjector', './projections/search/indexer', './services/process/relay/relay', './infra/search/index']) require(m);
      // What the direct transport uses of infra/kafka works without kafkajs.
      require('./infra/kafka').encodeEvent;
      const loaded = Object.keys(require.cache).map((f) => /node_modules\\/((?:@[^/]+\\/)?[^/]+)\\//.exec(f)?.[1]).filter(Boolean);
      process.stdout.write(JSON.stringify([...new Set(loaded)]));
      process.exit(0);`;
    // main.ts starts the service when loaded: its main() fails at once without a reachable database,
    // after the modules are loaded, so the exit above comes first.
    const out = execFileSync(process.execPath, ['-r', 'tsx/cjs', '-e', script], {
      cwd: ROOT, env: { ...process.env, DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', LOG_LEVEL: 'silent' }, encoding: 'utf8',
    });
    const packages = JSON.parse(out) as string[];
    expect(packages, 'the service itself is loaded').to.include.members(['express', 'knex', 'pg']);
    for (const client of ['kafkajs', '@eventstore/db-client', '@grpc/grpc-js', '@opensearch-project/opensearch', '@elastic/elasticsearch']) {
      expect(packages, client).not.to.include(client);
    }
  });
});
