# Shared by up.sh and down.sh (sourced, not run). Expects $HERE = infra/kafka. The pid file,
# lock, port, log and stop helpers are infra/lib/jvm-service.sh's.
# shellcheck shell=bash

KAFKA_HOST=${KAFKA_HOST:-127.0.0.1}
KAFKA_PORT=${KAFKA_PORT:-9092}
KAFKA_CONTROLLER_PORT=${KAFKA_CONTROLLER_PORT:-9093}
# shellcheck source=SCRIPTDIR/../lib/jvm-service.sh
. "$HERE/../lib/jvm-service.sh"
jvm_service kafka "$KAFKA_HOST" "${KAFKA_DIST_DIR:-$HERE/dist}"
SERVICE_LOG="$DIST/logs/server.log"
SERVICE_OUT="$DIST/logs/kafka.out"

# True if a Kafka broker answers on $KAFKA_HOST:$KAFKA_PORT: sends an ApiVersions v0 request (api key 18,
# correlation id "KAFK", client id "up.sh") over bash's /dev/tcp and checks the correlation id of
# the reply. Needs no client library. The broker only processes requests once it has caught up
# with the metadata log and been unfenced, so an answer means it is ready for clients.
# shellcheck disable=SC2016
kafka_answers() {
  local reply
  reply=$(timeout 5 bash -c '
    exec 3<>"/dev/tcp/$0/$1" || exit 1
    printf "\x00\x00\x00\x0f\x00\x12\x00\x00\x4b\x41\x46\x4b\x00\x05up.sh" >&3
    head -c 8 <&3 | od -An -tx1 | tr -d " \n"' "$KAFKA_HOST" "$KAFKA_PORT" 2>/dev/null) || return 1
  [ "${reply:8:8}" = "4b41464b" ]
}

# Run with `node -e` from the repository root (kafkajs resolved from node_modules). Retries until
# PROBE_TIMEOUT_S: connect, describeCluster, listTopics, describeGroups (finds the group
# coordinator, which makes the broker create __consumer_offsets) and an idempotent producer's
# InitProducerId (the broker fetches its first producer-id block from the controller lazily and
# answers "coordinator is loading" until then). Both warm-ups save the first test a retry.
# shellcheck disable=SC2016,SC2034
KAFKAJS_PROBE='
const { Kafka, logLevel } = require("kafkajs");
const brokers = process.env.KAFKA_BROKERS.split(",");
const deadline = Date.now() + Number(process.env.PROBE_TIMEOUT_S || 60) * 1000;
const kafka = new Kafka({ clientId: "testament-kafka-up", brokers, logLevel: logLevel.NOTHING,
  connectionTimeout: 3000, requestTimeout: 10000, retry: { retries: 0 } });
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
(async () => {
  let last;
  while (Date.now() < deadline) {
    const admin = kafka.admin();
    try {
      await admin.connect();
      const cluster = await admin.describeCluster();
      const topics = await admin.listTopics();
      await admin.describeGroups(["testament-kafka-up-probe"]);
      await admin.disconnect();
      const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, retry: { retries: 5, initialRetryTime: 100 } });
      try { await producer.connect(); } finally { await producer.disconnect().catch(() => {}); }
      console.log(`[kafka] kafkajs: cluster ${cluster.clusterId}, ${cluster.brokers.length} broker(s), ` +
        `${topics.filter((t) => !t.startsWith("__")).length} topic(s), group coordinator and producer ids ready`);
      process.exit(0);
    } catch (e) {
      last = e;
      await admin.disconnect().catch(() => {});
      await sleep(500);
    }
  }
  console.error("[kafka] kafkajs probe failed:", last && (last.stack || last));
  process.exit(1);
})();
'
