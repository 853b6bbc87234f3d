#!/usr/bin/env bash
# Starts a real single-node OpenSearch 2.19 for development and CI, from Maven Central jars (no
# Docker, no distribution tarball). Idempotent: if the node started from here is already running,
# or any OpenSearch already answers on $SEARCH_HOST:$SEARCH_PORT, it says so and exits 0. Needs
# java (17+, with javac) and mvn; no stdin; any cwd.
#
#   bash infra/opensearch/up.sh          (npm run search:up)
#
# Steps: fetch the jars into .cache/opensearch/lib (once per pom.xml) -> compile the launcher
# src/OpenSearchNode.java into .cache/opensearch/classes (once per source) -> start the node
# detached (setsid/nohup, pid in .cache/opensearch/opensearch.pid, data and logs under
# .cache/opensearch/home) -> wait until the cluster health is yellow or green.
#
# Environment (all optional):
#   SEARCH_HOST (127.0.0.1)  SEARCH_PORT (9200)  SEARCH_TRANSPORT_PORT (9300)
#   SEARCH_START_TIMEOUT seconds (120)  OPENSEARCH_HEAP_OPTS ("-Xms512m -Xmx512m")
#   OPENSEARCH_DIST_DIR (.cache/opensearch)  OPENSEARCH_MVN_ARGS (extra mvn arguments, e.g. -o or
#   -Dmaven.repo.local=...)  OPENSEARCH_SETTINGS (extra node settings, "key=value key=value")
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
# shellcheck source=SCRIPTDIR/common.sh
. "$HERE/common.sh"
up_args "$@"

SEARCH_START_TIMEOUT=${SEARCH_START_TIMEOUT:-120}
OPENSEARCH_HEAP_OPTS=${OPENSEARCH_HEAP_OPTS:--Xms512m -Xmx512m}
OPENSEARCH_VERSION=$(sed -n 's:.*<opensearch.version>\(.*\)</opensearch.version>.*:\1:p' "$HERE/pom.xml" | head -n1)
CLASSES="$DIST/classes"
HOME_DIR="$DIST/home"
TMP="$DIST/tmp"

# Cluster health yellow or green (one request, bounded by the server's own 1 s wait).
healthy() {
  get "/_cluster/health?wait_for_status=yellow&timeout=1s" 4 | grep -Eq '"status"[[:space:]]*:[[:space:]]*"(green|yellow)"'
}

# Serialise concurrent up.sh/down.sh runs (two test runners starting at once). fd 9 is closed for the node.
lock_dist "another up.sh holds $DIST/up.lock for 600 s"

if pid=$(running_pid); then
  if healthy; then
    say "node already running (pid $pid) and healthy on $BASE"
    exit 0
  fi
  say "node process $pid is running but not healthy yet; waiting for it"
elif search_answers; then
  if is_opensearch; then
    say "an OpenSearch not started from $DIST already answers on $BASE; using it"
    exit 0
  fi
  fail "a search server that is not OpenSearch answers on $BASE (stop it, or set SEARCH_PORT)"
else
  pid=""
fi

if [ -z "$pid" ]; then
  require_free_ports "port $SEARCH_PORT or $SEARCH_TRANSPORT_PORT is taken by something that does not answer as OpenSearch (see the ss line above; SEARCH_PORT and SEARCH_TRANSPORT_PORT choose others)" \
    "$SEARCH_PORT" "$SEARCH_TRANSPORT_PORT"
  command -v java >/dev/null || fail "java not found (OpenSearch $OPENSEARCH_VERSION needs Java 17+)"
  command -v javac >/dev/null || fail "javac not found (the launcher is compiled once; install a JDK 17+)"

  # 1. Jars: the runtime closure of pom.xml, fetched again whenever pom.xml changes.
  stamp="$OPENSEARCH_VERSION $(sha256sum "$HERE/pom.xml" | cut -c1-16)"
  if jars_stale "$stamp"; then
    fetch_jars OpenSearch "$OPENSEARCH_VERSION" "$stamp" \
      "org.opensearch:opensearch:$OPENSEARCH_VERSION and its plugins" "${OPENSEARCH_MVN_ARGS:-}"
    say "fetched $(find "$LIB" -name '*.jar' | wc -l) jars, $(du -sm "$LIB" | cut -f1) MB ($(elapsed))"
  fi

  # 2. The launcher, compiled again whenever its source or the jars change.
  src_stamp="$(sha256sum "$HERE/src/OpenSearchNode.java" | cut -c1-16) $stamp"
  if [ "$(cat "$CLASSES/.complete" 2>/dev/null || true)" != "$src_stamp" ]; then
    rm -rf "$CLASSES"
    mkdir -p "$CLASSES"
    javac -nowarn -d "$CLASSES" -cp "$LIB/*" "$HERE/src/OpenSearchNode.java" >"$DIST/javac.log" 2>&1 \
      || { cat "$DIST/javac.log" >&2; fail "javac could not compile $HERE/src/OpenSearchNode.java"; }
    echo "$src_stamp" >"$CLASSES/.complete"
  fi

  # 3. Start detached: own session (setsid), no stdin, output to a file, lock fd closed.
  mkdir -p "$HOME_DIR/config" "$HOME_DIR/logs" "$TMP"
  cp "$HERE/log4j2.properties" "$HOME_DIR/config/log4j2.properties"
  LOG_START=$( { wc -l <"$SERVICE_LOG"; } 2>/dev/null || echo 0)
  say "starting OpenSearch $OPENSEARCH_VERSION on $BASE (transport $SEARCH_TRANSPORT_PORT), data and logs in $HOME_DIR"
  # shellcheck disable=SC2086
  start_detached node "$SERVICE_OUT" \
    java $OPENSEARCH_HEAP_OPTS -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError -XX:-UsePerfData \
      -Djava.awt.headless=true -Dfile.encoding=UTF-8 -Djava.locale.providers=SPI,COMPAT \
      -Djava.io.tmpdir="$TMP" -Dlog4j.shutdownHookEnabled=false -Dlog4j2.disable.jmx=true \
      "$DIST_MARKER" \
      -cp "$CLASSES:$LIB/*" OpenSearchNode "$HOME_DIR" "$SEARCH_HOST" "$SEARCH_PORT" "$SEARCH_TRANSPORT_PORT" \
      ${OPENSEARCH_SETTINGS:-}
fi

# 4. Wait until the cluster is yellow or green.
wait_ready healthy node "$SEARCH_START_TIMEOUT" \
  "was not yellow or green on $BASE within ${SEARCH_START_TIMEOUT}s (SEARCH_START_TIMEOUT); it is left running (npm run search:down stops it)"
version=$(get / 3 | sed -n 's/.*"number"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' | head -n1)
status=$(get "/_cluster/health" 3 | sed -n 's/.*"status"[[:space:]]*:[[:space:]]*"\([a-z]*\)".*/\1/p')
rss=$(awk '/^VmRSS/ {print int($2/1024)}' "/proc/$pid/status" 2>/dev/null || echo '?')
say "ready: OpenSearch ${version:-?} on $BASE, cluster $status, pid $pid, RSS ${rss} MB ($(elapsed))"
