#!/usr/bin/env bash
# Starts a real single-node KRaft Kafka broker (combined broker + controller) for development and
# CI, from Maven Central jars (no Docker). Idempotent: if a Kafka broker already answers on
# $KAFKA_HOST:$KAFKA_PORT it says so and exits 0. Needs java (17+) and mvn; no stdin; any cwd.
#
#   bash infra/kafka/up.sh          (npm run kafka:up)
#
# Steps: fetch jars into infra/kafka/dist/lib (once) -> render dist/server.properties ->
# format KRaft storage in dist/data (once) -> start the broker detached (setsid/nohup, pid in
# dist/kafka.pid, logs in dist/logs/) -> wait until it answers the Kafka protocol (and, when
# kafkajs is installed, until a kafkajs admin client can list topics and find a group coordinator).
#
# Environment (all optional):
#   KAFKA_HOST (127.0.0.1)  KAFKA_PORT (9092)  KAFKA_CONTROLLER_PORT (9093)
#   KAFKA_VERSION (the one in pom.xml)  KAFKA_START_TIMEOUT seconds (120)
#   KAFKA_HEAP_OPTS ("-Xms256m -Xmx512m")  KAFKA_AUTO_CREATE_TOPICS (false)
#   KAFKA_DIST_DIR (infra/kafka/dist)  KAFKA_MVN_ARGS (extra mvn arguments, e.g. -Dmaven.repo.local=...)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=SCRIPTDIR/common.sh
. "$HERE/common.sh"
up_args "$@"

KAFKA_START_TIMEOUT=${KAFKA_START_TIMEOUT:-120}
KAFKA_HEAP_OPTS=${KAFKA_HEAP_OPTS:--Xms256m -Xmx512m}
KAFKA_AUTO_CREATE_TOPICS=${KAFKA_AUTO_CREATE_TOPICS:-false}
POM_VERSION=$(sed -n 's:.*<kafka.version>\(.*\)</kafka.version>.*:\1:p' "$HERE/pom.xml" | head -n1)
KAFKA_VERSION=${KAFKA_VERSION:-$POM_VERSION}
DATA="$DIST/data"
LOGS="$DIST/logs"
CONF="$DIST/server.properties"

# Serialise concurrent up.sh runs (two test runners starting at once). fd 9 is closed for the broker.
lock_dist "another up.sh holds $DIST/up.lock for 600 s"

if pid=$(running_pid); then
  if kafka_answers; then
    say "broker already running (pid $pid) and answering on $KAFKA_HOST:$KAFKA_PORT"
    exit 0
  fi
  say "broker process $pid is running but not answering yet; waiting for it"
elif kafka_answers; then
  say "a Kafka broker already answers on $KAFKA_HOST:$KAFKA_PORT (not started from $DIST); using it"
  exit 0
else
  pid=""
fi

if [ -z "$pid" ]; then
  require_free_ports "port $KAFKA_PORT or $KAFKA_CONTROLLER_PORT on $KAFKA_HOST is taken by something that does not answer as a Kafka broker (see the ss line above)" \
    "$KAFKA_PORT" "$KAFKA_CONTROLLER_PORT"
  command -v java >/dev/null || fail "java not found (Kafka $KAFKA_VERSION needs Java 17+)"

  # 1. Jars (runtime closure of kafka_2.13 + the SLF4J binding), once per version.
  if jars_stale "$KAFKA_VERSION"; then
    fetch_jars Kafka "$KAFKA_VERSION" "$KAFKA_VERSION" "org.apache.kafka:kafka_2.13:$KAFKA_VERSION" \
      "${KAFKA_MVN_ARGS:-}" -Dkafka.version="$KAFKA_VERSION"
    say "fetched $(find "$LIB" -name '*.jar' | wc -l) jars ($(elapsed))"
  fi
  CP="$LIB/*"

  # 2. Configuration, rendered on every start so host/port changes apply.
  mkdir -p "$DATA" "$LOGS"
  sed -e "s|@HOST@|$KAFKA_HOST|g" -e "s|@PORT@|$KAFKA_PORT|g" \
      -e "s|@CONTROLLER_PORT@|$KAFKA_CONTROLLER_PORT|g" -e "s|@DATA_DIR@|$DATA|g" \
      -e "s|@AUTO_CREATE_TOPICS@|$KAFKA_AUTO_CREATE_TOPICS|g" \
      "$HERE/server.properties.template" >"$CONF"

  # 3. Format the KRaft storage once (static quorum: no --standalone).
  if [ ! -f "$DATA/meta.properties" ]; then
    # Cluster id: 16 random bytes, base64url without padding (what StorageTool random-uuid prints);
    # Kafka rejects ids that start with '-'.
    cid=""
    while [ -z "$cid" ] || [ "${cid:0:1}" = "-" ]; do
      cid=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
    done
    say "formatting KRaft storage in $DATA (cluster id $cid)"
    java -Xmx256m -Dlog4j2.configurationFile="file:$HERE/log4j2.properties" -Dkafka.logs.dir="$LOGS" \
      -cp "$CP" kafka.tools.StorageTool format -t "$cid" -c "$CONF" --ignore-formatted </dev/null \
      >"$LOGS/format.out" 2>&1 || { cat "$LOGS/format.out" >&2; fail "formatting the storage failed"; }
  fi

  # 4. Start detached: own session (setsid), no stdin, output to a file, lock fd closed.
  say "starting Kafka $KAFKA_VERSION on $KAFKA_HOST:$KAFKA_PORT (controller $KAFKA_CONTROLLER_PORT), logs in $LOGS"
  LOG_START=$( { wc -l <"$SERVICE_LOG"; } 2>/dev/null || echo 0)
  # shellcheck disable=SC2086
  start_detached broker "$SERVICE_OUT" \
    java $KAFKA_HEAP_OPTS -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20 \
      -XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent \
      -XX:+ExitOnOutOfMemoryError -Djava.awt.headless=true \
      -Dkafka.logs.dir="$LOGS" -Dlog4j2.configurationFile="file:$HERE/log4j2.properties" \
      "$DIST_MARKER" \
      -cp "$CP" kafka.Kafka "$CONF"
fi

# 5. Wait until it really answers.
wait_ready kafka_answers broker "$KAFKA_START_TIMEOUT" \
  "did not answer on $KAFKA_HOST:$KAFKA_PORT within ${KAFKA_START_TIMEOUT}s; it is left running (bash infra/kafka/down.sh stops it)"
say "broker answers the Kafka protocol on $KAFKA_HOST:$KAFKA_PORT ($(elapsed))"

# 6. With kafkajs installed, check what the application uses: metadata, topic list, and a group
#    coordinator (this also creates __consumer_offsets, so the first consumer group joins at once).
if [ -d "$ROOT/node_modules/kafkajs" ] && command -v node >/dev/null; then
  left=$(( deadline - $(date +%s) )); [ "$left" -gt 10 ] || left=10
  if ! (cd "$ROOT" && KAFKA_BROKERS="$KAFKA_HOST:$KAFKA_PORT" PROBE_TIMEOUT_S="$left" node -e "$KAFKAJS_PROBE" </dev/null); then
    show_logs
    fail "the broker answers, but a kafkajs admin client could not use it"
  fi
fi
say "ready: Kafka $(cat "$LIB/.complete" 2>/dev/null || echo '?') on $KAFKA_HOST:$KAFKA_PORT, pid $pid ($(elapsed))"
