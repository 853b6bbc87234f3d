import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import YAML from 'yaml';

const ROOT = path.join(__dirname, '..', '..');

/** docker-compose.yml cannot be run here (no Docker engine): check that it parses and points at real things. */
describe('docker-compose.yml', () => {
  const text = fs.readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8').replace(/\$\{[^}]*\}/g, 'value');
  const compose = YAML.parse(text, { merge: true });

  it('has the production topology: event store, broker, database, search engine and the roles', () => {
    expect(Object.keys(compose.services)).to.include.members(['eventstore', 'kafka', 'postgres', 'elasticsearch', 'api', 'relay', 'projector']);
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
