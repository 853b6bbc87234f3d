import { Kafka, Partitioners, logLevel, type ConsumerConfig, type ConsumerRunConfig, type IHeaders, type KafkaMessage, type LogEntry, type Message } from 'kafkajs';
import type { Logger } from 'pino';
import type { EventEnvelope } from '../contracts/envelope';

/** The only module that imports kafkajs: client, topic, partitioning and the message format. */

export function createKafka(opts: { brokers: string[]; clientId: string; logger: Logger }): Kafka {
  const log = opts.logger.child({ component: 'kafkajs' });
  return new Kafka({
    clientId: opts.clientId,
    brokers: opts.brokers,
    logLevel: logLevel.WARN,
    retry: { initialRetryTime: 100, retries: 8 },
    logCreator: () => ({ level, log: entry }: LogEntry) => {
      const { message, ...extra } = entry;
      if (level <= logLevel.ERROR) log.error(extra, message);
      else if (level === logLevel.WARN) log.warn(extra, message);
      else log.debug(extra, message);
    },
  });
}

/** Creates the topic when missing; answers its real partition count (an existing topic keeps its own). */
export async function ensureTopic(kafka: Kafka, topic: string, partitions: number): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = await admin.listTopics();
    if (!existing.includes(topic)) {
      await admin.createTopics({ waitForLeaders: true, topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }] });
    }
    const metadata = await admin.fetchTopicMetadata({ topics: [topic] });
    return metadata.topics[0].partitions.length;
  } finally {
    await admin.disconnect();
  }
}

const partitioner = Partitioners.DefaultPartitioner();

/** The partition kafkajs's default (Java-compatible murmur2) partitioner gives a key. */
export function partitionOf(key: string, partitions: number): number {
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({ partitionId, partitionErrorCode: 0, leader: 0, replicas: [0], isr: [0], offlineReplicas: [] }));
  return partitioner({ topic: '', partitionMetadata, message: { key, value: null } });
}

/** An event as a Kafka message: keyed by stream id, the envelope as JSON value, identity in headers. */
export function encodeEvent(event: EventEnvelope): Message {
  return {
    key: event.streamId,
    value: JSON.stringify(event),
    headers: {
      'event-id': event.id,
      'event-type': event.type,
      'schema-version': String(event.schemaVersion),
      position: event.position,
    },
  };
}

export function headerText(headers: IHeaders | undefined, name: string): string | null {
  const v = headers?.[name];
  if (v === undefined) return null;
  const first = Array.isArray(v) ? v[0] : v;
  return first === undefined ? null : first.toString();
}

/** The message value as JSON; throws on a missing value or malformed JSON. */
export function decodeValue(message: KafkaMessage): unknown {
  if (!message.value) throw new Error('message has no value');
  return JSON.parse(message.value.toString('utf8'));
}

export type { ConsumerConfig, ConsumerRunConfig, Kafka, KafkaMessage };
