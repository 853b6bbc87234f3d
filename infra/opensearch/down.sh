#!/usr/bin/env bash
# Stops the OpenSearch node started by infra/opensearch/up.sh (SIGTERM: the node closes and
# flushes its indices; SIGKILL after OPENSEARCH_STOP_TIMEOUT seconds, default 30). Exits 0 if it
# is not running. Any cwd.
#
#   bash infra/opensearch/down.sh            stop, keep data (indices survive the next up.sh)
#   bash infra/opensearch/down.sh --wipe     stop and delete data and logs
#   bash infra/opensearch/down.sh --purge    stop and delete all of .cache/opensearch (jars too)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=SCRIPTDIR/common.sh
. "$HERE/common.sh"

OPENSEARCH_STOP_TIMEOUT=${OPENSEARCH_STOP_TIMEOUT:-30}
wipe=""
for arg in "$@"; do
  case "$arg" in
    --wipe) wipe=data ;;
    --purge) wipe=all ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) fail "unknown argument: $arg (use --wipe or --purge)" ;;
  esac
done

# Do not race an up.sh that is starting the node.
exec 9>"$DIST/up.lock"
flock -w 600 9 || fail "another up.sh/down.sh holds $DIST/up.lock"

if pid=$(running_pid); then
  t0=$(date +%s)
  say "stopping the node (pid $pid, SIGTERM)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 $(( OPENSEARCH_STOP_TIMEOUT * 10 ))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "still running after ${OPENSEARCH_STOP_TIMEOUT}s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  say "stopped ($(( $(date +%s) - t0 ))s)"
else
  say "no node started from $DIST is running"
  if search_answers; then
    say "note: a search server not started from $DIST answers on $BASE; left alone"
  fi
fi
rm -f "$PIDFILE"

case "$wipe" in
  data) rm -rf "$DIST/home" "$DIST/tmp" "$DIST/opensearch.out"; say "wiped $DIST/home (data and logs)" ;;
  all) exec 9>&-; rm -rf "$DIST"; say "removed $DIST" ;;
esac
exit 0
