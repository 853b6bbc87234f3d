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

SEARCH_START_TIMEOUT=${SEARCH_START_TIMEOUT:-120}
OPENSEARCH_HEAP_OPTS=${OPENSEARCH_HEAP_OPTS:--Xms512m -Xmx512m}
OPENSEARCH_VERSION=$(sed -n 's:.*<opensearch.version>\(.*\)</opensearch.version>.*:\1:p' "$HERE/pom.xml" | head -n1)
LIB="$DIST/lib"
CLASSES="$DIST/classes"
HOME_DIR="$DIST/home"
TMP="$DIST/tmp"

t0=$(date +%s)
elapsed() { echo "$(( $(date +%s) - t0 ))s"; }

# Cluster health yellow or green (one request, bounded by the server's own 1 s wait).
healthy() {
  get "/_cluster/health?wait_for_status=yellow&timeout=1s" 4 | grep -Eq '"status"[[:space:]]*:[[:space:]]*"(green|yellow)"'
}

# Serialise concurrent up.sh/down.sh runs (two test runners starting at once). fd 9 is closed for the node.
exec 9>"$DIST/up.lock"
if ! flock -w 600 9; then fail "another up.sh holds $DIST/up.lock for 600 s"; fi

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
  if port_in_use "$SEARCH_PORT" || port_in_use "$SEARCH_TRANSPORT_PORT"; then
    ss -ltnp 2>/dev/null | grep -E ":($SEARCH_PORT|$SEARCH_TRANSPORT_PORT)\b" >&2 || true
    fail "port $SEARCH_PORT or $SEARCH_TRANSPORT_PORT is taken by something that does not answer as OpenSearch (see the ss line above; SEARCH_PORT and SEARCH_TRANSPORT_PORT choose others)"
  fi
  command -v java >/dev/null || fail "java not found (OpenSearch $OPENSEARCH_VERSION needs Java 17+)"
  command -v javac >/dev/null || fail "javac not found (the launcher is compiled once; install a JDK 17+)"

  # 1. Jars: the runtime closure of pom.xml, fetched again whenever pom.xml changes.
  stamp="$OPENSEARCH_VERSION $(sha256sum "$HERE/pom.xml" | cut -c1-16)"
  if [ "$(cat "$LIB/.complete" 2>/dev/null || true)" != "$stamp" ]; then
    command -v mvn >/dev/null || fail "mvn not found (needed once to fetch the OpenSearch jars)"
    say "fetching OpenSearch $OPENSEARCH_VERSION jars from Maven Central into $LIB"
    rm -rf "$LIB" "$LIB.tmp"
    # shellcheck disable=SC2086
    if ! mvn -B -q -Dstyle.color=never -f "$HERE/pom.xml" ${OPENSEARCH_MVN_ARGS:-} \
        org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
        -DincludeScope=runtime -DoutputDirectory="$LIB.tmp" \
        </dev/null >"$DIST/mvn.log" 2>&1; then
      cat "$DIST/mvn.log" >&2
      rm -rf "$LIB.tmp"
      fail "mvn could not fetch org.opensearch:opensearch:$OPENSEARCH_VERSION and its plugins (output above, also in $DIST/mvn.log)"
    fi
    mv "$LIB.tmp" "$LIB"
    echo "$stamp" >"$LIB/.complete"
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
  LOG_START=$( { wc -l <"$HOME_DIR/logs/opensearch.log"; } 2>/dev/null || echo 0)
  say "starting OpenSearch $OPENSEARCH_VERSION on $BASE (transport $SEARCH_TRANSPORT_PORT), data and logs in $HOME_DIR"
  : >"$DIST/opensearch.out"
  rm -f "$PIDFILE"
  # shellcheck disable=SC2086,SC2016
  setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "$PIDFILE" \
    java $OPENSEARCH_HEAP_OPTS -XX:+UseG1GC -XX:+ExitOnOutOfMemoryError -XX:-UsePerfData \
      -Djava.awt.headless=true -Dfile.encoding=UTF-8 -Djava.locale.providers=SPI,COMPAT \
      -Djava.io.tmpdir="$TMP" -Dlog4j.shutdownHookEnabled=false -Dlog4j2.disable.jmx=true \
      -Dtestament.opensearch.dist="$DIST" \
      -cp "$CLASSES:$LIB/*" OpenSearchNode "$HOME_DIR" "$SEARCH_HOST" "$SEARCH_PORT" "$SEARCH_TRANSPORT_PORT" \
      ${OPENSEARCH_SETTINGS:-} \
    </dev/null >>"$DIST/opensearch.out" 2>&1 9>&- &
  for _ in $(seq 1 50); do [ -s "$PIDFILE" ] && break; sleep 0.1; done
  pid=$(cat "$PIDFILE" 2>/dev/null || true)
  [ -n "$pid" ] || fail "the node process did not start"
fi

# 4. Wait until the cluster is yellow or green.
deadline=$(( $(date +%s) + SEARCH_START_TIMEOUT ))
until healthy; do
  if ! kill -0 "$pid" 2>/dev/null; then
    show_logs
    rm -f "$PIDFILE"
    fail "the node (pid $pid) exited during startup"
  fi
  if [ "$(date +%s)" -ge "$deadline" ]; then
    show_logs
    fail "the node (pid $pid) was not yellow or green on $BASE within ${SEARCH_START_TIMEOUT}s (SEARCH_START_TIMEOUT); it is left running (npm run search:down stops it)"
  fi
  sleep 0.5
done
version=$(get / 3 | sed -n 's/.*"number"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\1/p' | head -n1)
status=$(get "/_cluster/health" 3 | sed -n 's/.*"status"[[:space:]]*:[[:space:]]*"\([a-z]*\)".*/\1/p')
rss=$(awk '/^VmRSS/ {print int($2/1024)}' "/proc/$pid/status" 2>/dev/null || echo '?')
say "ready: OpenSearch ${version:-?} on $BASE, cluster $status, pid $pid, RSS ${rss} MB ($(elapsed))"
