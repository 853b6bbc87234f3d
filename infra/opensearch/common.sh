# Shared by up.sh and down.sh (sourced, not run). Expects $HERE = infra/opensearch, $ROOT = the repository.
# shellcheck shell=bash

SEARCH_HOST=${SEARCH_HOST:-127.0.0.1}
SEARCH_PORT=${SEARCH_PORT:-9200}
SEARCH_TRANSPORT_PORT=${SEARCH_TRANSPORT_PORT:-9300}
DIST=${OPENSEARCH_DIST_DIR:-$ROOT/.cache/opensearch}
mkdir -p "$DIST"
DIST="$(cd "$DIST" && pwd)"
PIDFILE="$DIST/opensearch.pid"
BASE="http://$SEARCH_HOST:$SEARCH_PORT"

say() { echo "[opensearch] $*"; }
fail() { echo "[opensearch] ERROR: $*" >&2; exit 1; }

# Prints the pid of the node started from $DIST if it is alive (checked against its command line,
# so a stale pid file whose pid was reused is ignored).
running_pid() {
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "-Dtestament.opensearch.dist=$DIST" || return 1
  echo "$pid"
}

# GET $BASE$1 (body on stdout); fails when nothing answers within $2 seconds (5) or the status is
# not 2xx. curl when there is one, else HTTP/1.0 over bash's /dev/tcp.
# shellcheck disable=SC2016
get() {
  if command -v curl >/dev/null; then
    curl -fsS --max-time "${2:-5}" "$BASE$1" 2>/dev/null
    return
  fi
  local reply
  reply=$(timeout "${2:-5}" bash -c '
    exec 3<>"/dev/tcp/$0/$1" || exit 1
    printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$2" "$0" >&3
    cat <&3' "$SEARCH_HOST" "$SEARCH_PORT" "$1" 2>/dev/null) || return 1
  case "${reply%%$'\r'*}" in "HTTP/1."?" 2"*) ;; *) return 1 ;; esac
  printf '%s\n' "${reply#*$'\r\n\r\n'}"
}

# True if an OpenSearch or Elasticsearch server answers GET / on $BASE.
search_answers() {
  local body
  body=$(get / 3) || return 1
  case "$body" in *'"cluster_name"'*) return 0 ;; *) return 1 ;; esac
}

# True if the server at $BASE is OpenSearch.
is_opensearch() { get / 3 | grep -q '"distribution"[[:space:]]*:[[:space:]]*"opensearch"'; }

# True if something listens on the TCP port (any address).
# shellcheck disable=SC2016
port_in_use() {
  if command -v ss >/dev/null; then
    ss -Hltn "( sport = :$1 )" 2>/dev/null | grep -q .
  else
    timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$SEARCH_HOST" "$1" 2>/dev/null
  fi
}

# Tail of the node's logs, to stderr. With LOG_START (line count of opensearch.log before this
# start) only lines written since then are shown.
show_logs() {
  local log="$DIST/home/logs/opensearch.log" start=${LOG_START:-0} lines
  if [ -s "$log" ]; then
    lines=$(wc -l <"$log")
    [ "$lines" -ge "$start" ] || start=0
    if [ "$lines" -gt "$start" ]; then
      echo "----- last lines of $log (this start) -----" >&2
      tail -n +"$(( start + 1 ))" "$log" | tail -n 40 >&2
    else
      echo "----- $log: nothing written by this start -----" >&2
    fi
  fi
  if [ -s "$DIST/opensearch.out" ]; then
    echo "----- last 20 lines of $DIST/opensearch.out (JVM stdout/stderr) -----" >&2
    tail -n 20 "$DIST/opensearch.out" >&2
  fi
  echo "-----" >&2
}
