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
down_args "$@"

# Do not race an up.sh that is starting the node.
lock_dist "another up.sh/down.sh holds $DIST/up.lock"

if ! stop_running node "$OPENSEARCH_STOP_TIMEOUT"; then
  say "no node started from $DIST is running"
  if search_answers; then
    say "note: a search server not started from $DIST answers on $BASE; left alone"
  fi
fi
rm -f "$PIDFILE"
wipe_dist "wiped $DIST/home (data and logs)" "$DIST/home" "$DIST/tmp" "$DIST/opensearch.out"
exit 0
