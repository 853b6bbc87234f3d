// The broker refuses an event for good (larger than it accepts): the relay cannot skip it (the
// consumers would miss it) and retrying cannot help, so it fails once — failed, the broker's
// error, a correlation id — instead of sending it again forever. What came before is published.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { relayReadiness } from '../../services/process/roles';
import { startRelay, type RelayStatus } from '../../services/process/relay/relay';
import { KAFKA_BROKERS, META, TEST_SECRET, appendCase, caseStream, readAllEvents, relayPosition, transportSuite, waitForRelay, waitUntil, type TransportTest } from '../support/kafka';

/** 2 MB of text the broker cannot compress away (its default limit is 1 MB per message batch). */
const TOO_LARGE = Array.from({ length: (2 * 1024 * 1024) / 32 }, (_, i) => `${i.toString(36).padStart(8, '0')}abcdefghijklmnopqrstuvwx`).join('');

async function appendTooLarge(tt: TransportTest, caseId: number): Promise<void> {
  await tt.store.append(caseStream(caseId), [{
    type: 'RepositoryCaseCreated', schemaVersion: 1,
    data: { caseId, projectId: 1, folderId: null, title: 'too large', description: TOO_LARGE, createdAt: new Date().toISOString() },
  }], { expectedRevision: 'no-stream', metadata: META });
}

describe('Kafka transport: the broker refuses an event for good (real broker)', function () {
  this.timeout(90_000);
  const suite = transportSuite('Kafka transport relay failure');

  it('an event larger than the broker accepts: the relay fails once at it, /readyz says so, and everything before it is published', async () => {
    const tt = await suite.open({ partitions: 3 });
    await appendCase(tt.store, 1, 5);
    const told: RelayStatus[] = [];
    const relay = startRelay({ store: tt.store, knex: tt.knex, kafka: tt.kafka, topic: tt.topic, logger: tt.logger, onFailed: (s) => told.push(s) });
    tt.defer(() => relay.stop());
    await waitForRelay(tt);
    const before = await tt.store.headPosition();

    await appendTooLarge(tt, 2);

    await waitUntil(() => relay.status().state === 'failed', 'the relay to fail', 60_000, () => JSON.stringify(relay.status()));
    const status = relay.status();
    expect(status.lastError).to.match(/larger than the max message size|too large/i);
    expect(status.lastError, 'no budget was spent on it').not.to.match(/^gave up after/);
    expect(told.map((s) => [s.state, s.correlationId]), 'onFailed, once').to.deep.equal([['failed', status.correlationId]]);
    expect(status.position, 'stopped before the refused event').to.equal(before);
    const readiness = await relayReadiness(relay).check();
    expect(readiness.ok).to.equal(false);
    expect(readiness.details).to.deep.include({ state: 'failed', lastError: status.lastError, correlationId: status.correlationId });

    await relay.stop();
    expect(await relayPosition(tt.knex, tt.topic), 'the checkpoint holds what the broker acknowledged').to.equal(before);
    expect((await readAllEvents(tt.store)).length).to.equal(6);
  });

  it('the relay role on its own (services/process/relay/main.ts) exits 1 when the relay fails, naming the event; the events before it in the same batch are published', async () => {
    const tt = await suite.open({ partitions: 3 });
    await appendCase(tt.store, 1, 3);
    await appendTooLarge(tt, 2);
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'testament-relay-'));
    const child = spawn(process.execPath, ['--require', 'tsx/cjs', path.join(__dirname, '..', '..', 'services', 'process', 'relay', 'main.ts')], {
      env: {
        ...process.env, LOG_LEVEL: 'info', DATABASE_URL: tt.db.url, EVENTSTORE_URL: '', KAFKA_BROKERS: KAFKA_BROKERS.join(','), KAFKA_TOPIC: tt.topic,
        KAFKA_PARTITIONS: String(tt.partitions), DATA_DIR: dataDir, SESSION_SECRET: TEST_SECRET, TOKEN_SECRET: TEST_SECRET,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    tt.defer(async () => {
      if (child.exitCode === null) child.kill('SIGKILL');
      await exited;
      fs.rmSync(dataDir, { recursive: true, force: true });
    });

    expect(await exited, output).to.equal(1);
    const failed = output.split('\n').filter((l) => l.includes('"relay failed; stopped until restarted"')).map((l) => JSON.parse(l));
    expect(failed, 'one error line').to.have.length(1);
    const events = await readAllEvents(tt.store);
    expect(failed[0]).to.include({ level: 50, eventId: events.at(-1)!.id, eventPosition: events.at(-1)!.position });
    expect(failed[0].correlationId).to.be.a('string');
    expect(await relayPosition(tt.knex, tt.topic), 'the events before it published and acknowledged').to.equal(events.at(-2)!.position);
  });
});
