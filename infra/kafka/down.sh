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
wipe=""
for arg in "$@"; do
  case "$arg" in
    --wipe) wipe=data ;;
    --purge) wipe=all ;;
    -h|--help) sed -n '2,8p' "$0"; exit 0 ;;
    *) fail "unknown argument: $arg (use --wipe or --purge)" ;;
  esac
done

# Do not race an up.sh that is starting the broker.
exec 9>"$DIST/up.lock"
flock -w 600 9 || fail "another up.sh/down.sh holds $DIST/up.lock"

if pid=$(running_pid); then
  t0=$(date +%s)
  say "stopping the broker (pid $pid, SIGTERM)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 $(( KAFKA_STOP_TIMEOUT * 10 ))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "still running after ${KAFKA_STOP_TIMEOUT}s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  say "stopped ($(( $(date +%s) - t0 ))s)"
else
  say "no broker started from $DIST is running"
  if kafka_answers; then
    say "note: a Kafka broker not started from $DIST answers on $KAFKA_HOST:$KAFKA_PORT; left alone"
  fi
fi
rm -f "$PIDFILE"

case "$wipe" in
  data) rm -rf "$DIST/data" "$DIST/logs" "$DIST/server.properties"; say "wiped $DIST/data and $DIST/logs" ;;
  all) exec 9>&-; rm -rf "$DIST"; say "removed $DIST" ;;
esac
exit 0
