import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import YAML from 'yaml';

const ROOT = path.join(__dirname, '..', '..');

/** docker-compose.yml cannot be run here (no Docker engine): check that it parses and points at real things. */
describe('docker-compose.yml', () => {
  // ${VAR:-default} reads as its default, any other ${VAR} as 'value'.
  const text = fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8')
    .replace(/\$\{[A-Z_]+:-([^}]*)\}/g, '$1')
    .replace(/\$\{[^}]*\}/g, 'value');
  const compose = YAML.parse(text, { merge: true });

  it('has the production topology: event store, broker, database, search engine and the roles', () => {
    expect(Object.keys(compose.services)).to.include.members([
      'eventstore', 'kafka', 'postgres', 'opensearch', 'elasticsearch', 'api', 'relay', 'projector', 'indexer', 'worker',
    ]);
  });

  it('runs OpenSearch single-node without its security plugin, published on loopback only, for the api and the indexer', () => {
    const opensearch = compose.services.opensearch;
    expect(opensearch.image).to.match(/^opensearchproject\/opensearch:2\.19\.\d+$/);
    expect(opensearch.environment).to.include({ 'discovery.type': 'single-node', DISABLE_SECURITY_PLUGIN: 'true' });
    expect(opensearch.ports).to.deep.equal(['127.0.0.1:9200:9200']);
    expect(opensearch.healthcheck.test.join(' ')).to.include('_cluster/health');
    expect(compose.services.indexer.command).to.deep.equal(['node', 'dist/services/process/indexer/main.js']);
    for (const role of ['api', 'indexer']) {
      const service = compose.services[role];
      expect(service.environment.SEARCH_URL, role).to.equal('http://opensearch:9200');
      expect(service.depends_on, role).to.have.nested.property('opensearch.condition', 'service_healthy');
      expect(Object.keys(service.depends_on), role).to.include.members(['postgres', 'eventstore', 'kafka']);
    }
    expect(compose.services.elasticsearch.profiles, 'Elasticsearch only on request').to.deep.equal(['elasticsearch']);
  });

  it('runs each role from an entry point that exists', () => {
    for (const [name, service] of Object.entries<any>(compose.services)) {
      if (!service.build) continue;
      const [, script] = service.command as string[];
      const source = script.replace(/^dist\//, '').replace(/\.js$/, '.ts');
      expect(fs.existsSync(path.join(ROOT, source)), `${name}: ${source}`).to.equal(true);
      expect(service.environment.DATABASE_URL, name).to.match(/^postgres:\/\/.+@postgres:5432\//);
      expect(service.environment.KAFKA_BROKERS, name).to.equal('kafka:9092');
    }
    expect(fs.existsSync(path.join(ROOT, 'Dockerfile'))).to.equal(true);
  });

  it('pins every image to a published version tag', () => {
    for (const [name, service] of Object.entries<any>(compose.services)) {
      if (service.build) continue;
      expect(service.image, name).to.match(/^[a-z0-9./-]+:\d+(\.\d+)*$/);
    }
  });

  it('depends only on services it defines', () => {
    for (const service of Object.values<any>(compose.services)) {
      for (const dependency of Object.keys(service.depends_on ?? {})) expect(compose.services).to.have.property(dependency);
    }
  });
});
