# Shared by up.sh and down.sh (sourced, not run). Expects $HERE = infra/opensearch, $ROOT = the
# repository. The pid file, lock, port, log and stop helpers are infra/lib/jvm-service.sh's.
# shellcheck shell=bash

SEARCH_HOST=${SEARCH_HOST:-127.0.0.1}
SEARCH_PORT=${SEARCH_PORT:-9200}
SEARCH_TRANSPORT_PORT=${SEARCH_TRANSPORT_PORT:-9300}
# shellcheck source=SCRIPTDIR/../lib/jvm-service.sh
. "$HERE/../lib/jvm-service.sh"
jvm_service opensearch "$SEARCH_HOST" "${OPENSEARCH_DIST_DIR:-$ROOT/.cache/opensearch}"
SERVICE_LOG="$DIST/home/logs/opensearch.log"
SERVICE_OUT="$DIST/opensearch.out"
BASE="http://$SEARCH_HOST:$SEARCH_PORT"

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
