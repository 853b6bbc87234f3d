// Smoke test of the real Kafka broker (infra/kafka/up.sh, `npm run kafka:up`) with kafkajs 2.2.4,
// covering what the application relies on: admin createTopics/fetchOffsets/describeGroups/
// deleteTopics, an idempotent producer (acks -1, one request in flight) with keys and headers,
// consumer groups reading from the beginning with manual commits (eachMessage and eachBatch),
// per-key order, and a second consumer of the same group resuming after the committed offsets.
//
// KAFKA_BROKERS (default 127.0.0.1:9092). With no broker listening the suite is skipped, or fails
// when REQUIRE_SERVICES=1 (CI).
import net from 'node:net';
import { expect } from 'chai';
import {
  Kafka, logLevel, Partitioners, CompressionTypes,
  type Admin, type Consumer, type Producer, type IHeaders, type KafkaMessage, type logCreator,
} from 'kafkajs';

const brokers = (process.env.KAFKA_BROKERS ?? '127.0.0.1:9092').split(',').map((b) => b.trim()).filter(Boolean);
const PARTITIONS = 6;
const KEYS = ['test-1', 'test-2', 'test-3', 'test-4', 'test-5', 'test-6', 'test-7', 'test-8'];
const FIRST = 15; // messages per key in the first round
const SECOND = 5; // messages per key in the second round

// kafkajs logs every error response at ERROR, also the retriable ones it handles and the one this
// test provokes (creating an existing topic): print the others only.
const EXPECTED_ERRORS = /Topic creation errors|coordinator is loading|coordinator is not available|rebalanc/i;
const printUnexpectedErrors: logCreator = () => ({ level, log }) => {
  if (level > logLevel.ERROR || EXPECTED_ERRORS.test(`${log.message} ${String(log.error ?? '')}`)) return;
  console.error(`    kafkajs: ${JSON.stringify(log)}`);
};

function tcpReachable(broker: string, timeoutMs = 2000): Promise<boolean> {
  const i = broker.lastIndexOf(':');
  const host = broker.slice(0, i);
  const port = Number(broker.slice(i + 1));
  return new Promise((resolve) => {
    const socket = net.connect({ host, port });
    const done = (ok: boolean) => { socket.destroy(); resolve(ok); };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('connect', () => done(true));
    socket.once('error', () => done(false));
  });
}

type Received = { partition: number; offset: string; key: string; seq: number; headers: Record<string, string> };

function decode(partition: number, message: KafkaMessage): Received {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(message.headers ?? ({} as IHeaders))) {
    headers[name] = Buffer.isBuffer(value) ? value.toString('utf8') : String(value);
  }
  const body = JSON.parse(message.value!.toString('utf8')) as { seq: number };
  return { partition, offset: message.offset, key: message.key!.toString('utf8'), seq: body.seq, headers };
}

function waitFor(predicate: () => boolean, what: string, timeoutMs = 30000): Promise<void> {
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const tick = () => {
      if (predicate()) return resolve();
      if (Date.now() - started > timeoutMs) return reject(new Error(`timed out after ${timeoutMs} ms waiting for ${what}`));
      setTimeout(tick, 50);
    };
    tick();
  });
}

function expectPerKeyOrder(received: Received[], from: number, count: number) {
  for (const key of KEYS) {
    const seqs = received.filter((r) => r.key === key).map((r) => r.seq);
    expect(seqs, `order of ${key}`).to.deep.equal(Array.from({ length: count }, (_, i) => from + i));
    const partitions = new Set(received.filter((r) => r.key === key).map((r) => r.partition));
    expect(partitions.size, `${key} stays on one partition`).to.equal(1);
  }
}

describe('Kafka smoke (real broker, kafkajs)', function () {
  this.timeout(60000);
  const runId = `${process.pid}-${Date.now()}`;
  const topic = `testament-smoke-${runId}`;
  const groupId = `testament-smoke-group-${runId}`;
  const kafka = new Kafka({
    clientId: 'testament-smoke',
    brokers,
    logLevel: logLevel.ERROR,
    logCreator: printUnexpectedErrors,
    connectionTimeout: 3000,
    retry: { initialRetryTime: 100, retries: 8 },
  });
  let admin: Admin;
  let producer: Producer;
  const consumers: Consumer[] = [];
  let connected = false;

  before(async function () {
    const reachable = (await Promise.all(brokers.map((b) => tcpReachable(b)))).some(Boolean);
    if (!reachable) {
      if (process.env.REQUIRE_SERVICES === '1') {
        throw new Error(`Kafka smoke: no broker at ${brokers.join(',')} and REQUIRE_SERVICES=1 (start one with npm run kafka:up)`);
      }
      console.log(`  SKIPPED Kafka smoke: no broker at ${brokers.join(',')} (start one with npm run kafka:up)`);
      this.skip();
    }
    admin = kafka.admin();
    await admin.connect();
    producer = kafka.producer({
      idempotent: true,
      maxInFlightRequests: 1,
      createPartitioner: Partitioners.DefaultPartitioner,
      allowAutoTopicCreation: false,
    });
    await producer.connect();
    connected = true;
  });

  after(async () => {
    await Promise.all(consumers.map((c) => c.disconnect().catch(() => undefined)));
    if (!connected) return;
    await producer.disconnect().catch(() => undefined);
    const topics = await admin.listTopics().catch(() => [] as string[]);
    if (topics.includes(topic)) await admin.deleteTopics({ topics: [topic] }).catch(() => undefined);
    await admin.deleteGroups([groupId]).catch(() => undefined);
    await admin.disconnect().catch(() => undefined);
  });

  it('describes the cluster and creates a topic with 6 partitions', async () => {
    const cluster = await admin.describeCluster();
    expect(cluster.brokers).to.have.length.greaterThan(0);
    expect(cluster.controller).to.not.equal(null);

    const created = await admin.createTopics({
      waitForLeaders: true,
      topics: [{ topic, numPartitions: PARTITIONS, replicationFactor: 1 }],
    });
    expect(created).to.equal(true);
    expect(await admin.listTopics()).to.include(topic);
    const meta = await admin.fetchTopicMetadata({ topics: [topic] });
    expect(meta.topics[0].partitions).to.have.length(PARTITIONS);
    // Creating it again is reported, not thrown.
    expect(await admin.createTopics({ topics: [{ topic, numPartitions: PARTITIONS }] })).to.equal(false);
  });

  it('produces keyed messages with headers through an idempotent producer (acks -1)', async () => {
    // send() one message at a time for half, sendBatch for the rest (gzip), all acks -1.
    for (let seq = 0; seq < FIRST; seq++) {
      const messages = KEYS.map((key) => ({
        key,
        value: JSON.stringify({ seq }),
        headers: { 'event-type': 'SmokeTested', 'correlation-id': `${key}:${seq}` },
      }));
      if (seq % 2 === 0) {
        const meta = await producer.send({ topic, acks: -1, messages });
        expect(meta.every((m) => m.errorCode === 0)).to.equal(true);
      } else {
        await producer.sendBatch({ acks: -1, compression: CompressionTypes.GZIP, topicMessages: [{ topic, messages }] });
      }
    }
    const offsets = await admin.fetchTopicOffsets(topic);
    const total = offsets.reduce((n, p) => n + Number(p.high) - Number(p.low), 0);
    expect(total).to.equal(KEYS.length * FIRST);
  });

  it('consumes from the beginning in a group with manual commits, in per-key order (eachMessage)', async () => {
    const received: Received[] = [];
    const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 1000, maxWaitTimeInMs: 500 });
    consumers.push(consumer);
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachMessage: async ({ topic: t, partition, message }) => {
        received.push(decode(partition, message));
        await consumer.commitOffsets([{ topic: t, partition, offset: (BigInt(message.offset) + 1n).toString() }]);
      },
    });
    await waitFor(() => received.length >= KEYS.length * FIRST, `${KEYS.length * FIRST} messages`);

    const described = await admin.describeGroups([groupId]);
    expect(described.groups[0].state).to.equal('Stable');
    expect(described.groups[0].protocolType).to.equal('consumer');
    expect(described.groups[0].members).to.have.length(1);

    await consumer.disconnect();
    expect(received).to.have.length(KEYS.length * FIRST);
    expectPerKeyOrder(received, 0, FIRST);
    const first = received.find((r) => r.key === 'test-3' && r.seq === 4)!;
    expect(first.headers).to.deep.equal({ 'event-type': 'SmokeTested', 'correlation-id': 'test-3:4' });

    // The committed offsets are the end of every partition.
    const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
    const ends = await admin.fetchTopicOffsets(topic);
    expect(committed[0].partitions).to.have.length(PARTITIONS);
    for (const p of committed[0].partitions) {
      expect(p.offset, `partition ${p.partition}`).to.equal(ends.find((e) => e.partition === p.partition)!.high);
    }
    expect((await admin.describeGroups([groupId])).groups[0].state).to.equal('Empty');
  });

  it('a second consumer of the same group resumes after the committed offsets (eachBatch)', async () => {
    for (let seq = FIRST; seq < FIRST + SECOND; seq++) {
      await producer.send({
        topic,
        acks: -1,
        messages: KEYS.map((key) => ({ key, value: JSON.stringify({ seq }), headers: { 'event-type': 'SmokeTested' } })),
      });
    }
    const received: Received[] = [];
    const consumer = kafka.consumer({ groupId, sessionTimeout: 10000, heartbeatInterval: 1000, maxWaitTimeInMs: 500 });
    consumers.push(consumer);
    await consumer.connect();
    await consumer.subscribe({ topics: [topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: false,
      eachBatch: async ({ batch, resolveOffset, heartbeat }) => {
        for (const message of batch.messages) {
          received.push(decode(batch.partition, message));
          resolveOffset(message.offset);
        }
        await consumer.commitOffsets([{ topic: batch.topic, partition: batch.partition, offset: (BigInt(batch.lastOffset()) + 1n).toString() }]);
        await heartbeat();
      },
    });
    await waitFor(() => received.length >= KEYS.length * SECOND, `${KEYS.length * SECOND} new messages`);
    await new Promise((r) => setTimeout(r, 500)); // nothing older may arrive late
    await consumer.disconnect();

    expect(received).to.have.length(KEYS.length * SECOND);
    expectPerKeyOrder(received, FIRST, SECOND);
    const committed = await admin.fetchOffsets({ groupId, topics: [topic] });
    const total = committed[0].partitions.reduce((n, p) => n + Number(p.offset), 0);
    expect(total).to.equal(KEYS.length * (FIRST + SECOND));
  });

  it('deletes the topic', async () => {
    await admin.deleteTopics({ topics: [topic], timeout: 10000 });
    let topics = await admin.listTopics();
    for (let i = 0; i < 20 && topics.includes(topic); i++) {
      await new Promise((r) => setTimeout(r, 250));
      topics = await admin.listTopics();
    }
    expect(topics).to.not.include(topic);
  });
});
