#!/usr/bin/env bash
# Stops the Kafka broker started by infra/kafka/up.sh (SIGTERM = controlled shutdown, then SIGKILL
# after KAFKA_STOP_TIMEOUT seconds, default 30). Exits 0 if it is not running. Any cwd.
#
#   bash infra/kafka/down.sh            stop, keep data (topics survive the next up.sh)
#   bash infra/kafka/down.sh --wipe     stop and delete data and logs (next up.sh formats anew)
#   bash infra/kafka/down.sh --purge    stop and delete all of infra/kafka/dist (jars too)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
# shellcheck source=SCRIPTDIR/common.sh
. "$HERE/common.sh"

KAFKA_STOP_TIMEOUT=${KAFKA_STOP_TIMEOUT:-30}
down_args "$@"

# Do not race an up.sh that is starting the broker.
lock_dist "another up.sh/down.sh holds $DIST/up.lock"

if ! stop_running broker "$KAFKA_STOP_TIMEOUT"; then
  say "no broker started from $DIST is running"
  if kafka_answers; then
    say "note: a Kafka broker not started from $DIST answers on $KAFKA_HOST:$KAFKA_PORT; left alone"
  fi
fi
rm -f "$PIDFILE"
wipe_dist "wiped $DIST/data and $DIST/logs" "$DIST/data" "$DIST/logs" "$DIST/server.properties"
exit 0
