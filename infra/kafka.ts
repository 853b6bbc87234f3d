import type { Kafka, Admin, ConsumerConfig, ConsumerRunConfig, IHeaders, KafkaMessage, LogEntry, Message } from 'kafkajs';
import type * as KafkaJs from 'kafkajs';
import type { Logger } from 'pino';
import type { EventEnvelope } from '../contracts/envelope';

/**
 * The only module that imports kafkajs: client, topic, partitioning and the message format. kafkajs
 * itself is loaded on first use (about 12 MB of a process's memory, which the direct transport,
 * npm start's default, does not need); the message format needs none of it.
 */
// eslint-disable-next-line @typescript-eslint/no-require-imports
const kafkajs = () => require('kafkajs') as typeof KafkaJs;

export function createKafka(opts: { brokers: string[]; clientId: string; logger: Logger }): Kafka {
  const log = opts.logger.child({ component: 'kafkajs' });
  const { Kafka, logLevel } = kafkajs();
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

/** How long a topic just created may take until every partition has a leader. */
const TOPIC_LEADERS_WAIT_MS = 30_000;

/**
 * Creates the topic when missing; answers its real partition count (an existing topic keeps its own)
 * once every partition has a leader that answers for its offsets. kafkajs's own wait
 * (`waitForLeaders`) retries only LEADER_NOT_AVAILABLE; a broker that has just created the topic
 * may also answer UNKNOWN_TOPIC_OR_PARTITION (its metadata cache behind) or, to an offset request,
 * NOT_LEADER_FOR_PARTITION (leadership not taken up yet): all mean "not yet" here, until the
 * deadline. (CI failed on each: a test's first admin request on a fresh topic.)
 */
export async function ensureTopic(kafka: Kafka, topic: string, partitions: number): Promise<number> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const existing = await admin.listTopics();
    if (!existing.includes(topic)) {
      await admin.createTopics({ waitForLeaders: false, topics: [{ topic, numPartitions: partitions, replicationFactor: 1 }] });
    }
    return await waitForLeaders(admin, topic);
  } finally {
    await admin.disconnect();
  }
}

const NOT_YET = new Set(['UNKNOWN_TOPIC_OR_PARTITION', 'LEADER_NOT_AVAILABLE', 'NOT_LEADER_FOR_PARTITION']);

async function waitForLeaders(admin: Admin, topic: string): Promise<number> {
  const deadline = Date.now() + TOPIC_LEADERS_WAIT_MS;
  let last: string;
  for (;;) {
    try {
      const [found] = (await admin.fetchTopicMetadata({ topics: [topic] })).topics;
      const led = found.partitions.filter((p) => p.partitionErrorCode === 0 && p.leader >= 0);
      last = `${led.length} of ${found.partitions.length} partitions have a leader`;
      if (found.partitions.length > 0 && led.length === found.partitions.length) {
        // The leader named in the metadata may not act as one yet (NOT_LEADER_FOR_PARTITION), which
        // kafkajs's offset requests do not retry: the topic is ready once its offsets can be read.
        await admin.fetchTopicOffsets(topic);
        return found.partitions.length;
      }
    } catch (error) {
      const type = (error as { type?: string }).type;
      if (!type || !NOT_YET.has(type)) throw error;
      last = `${type}: ${(error as Error).message}`;
    }
    if (Date.now() > deadline) throw new Error(`topic ${topic}: not every partition had a leader within ${TOPIC_LEADERS_WAIT_MS / 1000} s (${last})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

let partitioner: ReturnType<typeof KafkaJs.Partitioners.DefaultPartitioner> | null = null;

/** The partition kafkajs's default (Java-compatible murmur2) partitioner gives a key. */
export function partitionOf(key: string, partitions: number): number {
  const partitionMetadata = Array.from({ length: partitions }, (_, partitionId) => ({ partitionId, partitionErrorCode: 0, leader: 0, replicas: [0], isr: [0], offlineReplicas: [] }));
  partitioner ??= kafkajs().Partitioners.DefaultPartitioner();
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
