// A projector process killed (SIGKILL: it never leaves its consumer group) leaves a member behind
// that the broker keeps until its session runs out; the process started in its place gets the
// partitions only then. The service's consumers (consumerOptions) keep that wait short: with
// kafkajs's default session of 30 s, the read model stood still for half a minute.
// Slow: waits out the killed member's 10 s session on a real broker (a process started and SIGKILLed first)
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { expect } from 'chai';
import pino from 'pino';
import { createKafka, ensureTopic } from '../../infra/kafka';
import { SESSION_TIMEOUT_MS, consumerGroupOf, consumerOptions } from '../../projections/runtime/kafkaProjector';
import { KAFKA_BROKERS, requireKafka, uniqueTopic, waitUntil } from '../support/kafka';

const ROOT = path.join(__dirname, '..', '..');

/** A consumer of the group in a process of its own, as a projector's: prints "joined" once it holds the partition. */
function memberProcess(topic: string, groupId: string): { child: ChildProcess; joined: Promise<void> } {
  const code = `
    const pino = require('pino');
    const { createKafka } = require(${JSON.stringify(path.join(ROOT, 'infra', 'kafka.ts'))});
    const { consumerOptions } = require(${JSON.stringify(path.join(ROOT, 'projections', 'runtime', 'kafkaProjector.ts'))});
    const kafka = createKafka({ brokers: ${JSON.stringify(KAFKA_BROKERS)}, clientId: 'member-killed', logger: pino({ level: 'silent' }) });
    const consumer = kafka.consumer(consumerOptions(${JSON.stringify(groupId)}));
    consumer.on(consumer.events.GROUP_JOIN, () => console.log('joined'));
    consumer.connect().then(() => consumer.subscribe({ topics: [${JSON.stringify(topic)}], fromBeginning: true }))
      .then(() => consumer.run({ eachMessage: async () => undefined }));`;
  const child = spawn(process.execPath, ['--require', 'tsx/cjs', '-e', code], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  let err = '';
  child.stderr!.on('data', (d) => (err += String(d)));
  const joined = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (d) => String(d).includes('joined') && resolve());
    child.on('exit', (code) => reject(new Error(`the member process ended (${code}) before it joined: ${err.slice(-2000)}`)));
  });
  return { child, joined };
}

describe('Kafka transport: a projector process killed (real broker)', function () {
  this.timeout(90_000);
  const kafka = createKafka({ brokers: KAFKA_BROKERS, clientId: 'member-killed-test', logger: pino({ level: 'silent' }) });
  const admin = kafka.admin();
  const topic = uniqueTopic();
  const groupId = consumerGroupOf(topic, 'killed');
  let child: ChildProcess | undefined;
  let consumer: ReturnType<typeof kafka.consumer> | undefined;
  let connected = false;

  before(async function () {
    await requireKafka(this, 'Kafka transport member killed');
    await admin.connect();
    connected = true;
    await ensureTopic(kafka, topic, 1);
  });
  after(async () => {
    // Skipped (no broker): nothing to clean, and an admin call would retry its connection for half a minute.
    if (!connected) return;
    child?.kill('SIGKILL');
    await consumer?.disconnect().catch(() => undefined);
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
  });

  it(`the process started in its place gets the partition within the session (${SESSION_TIMEOUT_MS / 1000} s), not kafkajs's 30 s`, async () => {
    const member = memberProcess(topic, groupId);
    child = member.child;
    await member.joined;
    child.kill('SIGKILL');
    const killedAt = Date.now();

    const received: number[] = [];
    consumer = kafka.consumer(consumerOptions(groupId));
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({ eachMessage: async () => void received.push(Date.now()) });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic, messages: [{ key: 'k', value: 'after the kill' }] });
    await producer.disconnect();
    // Bounded well below kafkajs's default session (30 s): the old consumers waited it out.
    await waitUntil(() => received.length > 0, 'the message sent after the kill to be consumed', SESSION_TIMEOUT_MS + 8000);
    const waitedMs = received[0] - killedAt;
    console.log(`      consumed ${(waitedMs / 1000).toFixed(1)} s after the SIGKILL`);
    expect(waitedMs).to.be.below(SESSION_TIMEOUT_MS + 8000);
  });
});
