# What infra/kafka and infra/opensearch share: a JVM server fetched from Maven Central, started
# detached with its pid in a file, stopped with SIGTERM (SIGKILL after a timeout), guarded by a
# lock file. Sourced by their common.sh (not run); everything service-specific (readiness checks,
# the java command line, messages that name the server) stays in their own scripts.
# shellcheck shell=bash

# jvm_service NAME HOST DIST_DIR: sets SERVICE (the [NAME] prefix of messages), SERVICE_HOST,
# DIST (created, absolute), LIB ($DIST/lib), PIDFILE ($DIST/NAME.pid) and DIST_MARKER, the
# -D property that up.sh puts on the java command line so running_pid recognises the process.
# The caller sets SERVICE_LOG (the server's log file) and SERVICE_OUT (the JVM's stdout/stderr)
# for show_logs.
jvm_service() {
  SERVICE=$1
  SERVICE_HOST=$2
  mkdir -p "$3"
  DIST="$(cd "$3" && pwd)"
  LIB="$DIST/lib"
  PIDFILE="$DIST/$SERVICE.pid"
  DIST_MARKER="-Dtestament.$SERVICE.dist=$DIST"
  T0=$(date +%s)
}

say() { echo "[$SERVICE] $*"; }
fail() { echo "[$SERVICE] ERROR: $*" >&2; exit 1; }
elapsed() { echo "$(( $(date +%s) - T0 ))s"; }

# Prints the pid of the server started from $DIST if it is alive (checked against its command
# line, so a stale pid file whose pid was reused is ignored).
running_pid() {
  local pid
  pid=$(cat "$PIDFILE" 2>/dev/null) || return 1
  [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null || return 1
  tr '\0' '\n' <"/proc/$pid/cmdline" 2>/dev/null | grep -qxF -- "$DIST_MARKER" || return 1
  echo "$pid"
}

# lock_dist MESSAGE: serialises up.sh/down.sh runs on $DIST (two test runners starting at once)
# with flock on fd 9 ($DIST/up.lock), held until the script exits; fails with MESSAGE after 600 s.
lock_dist() {
  exec 9>"$DIST/up.lock"
  flock -w 600 9 || fail "$1"
}

# True if something listens on the TCP port (any address).
# shellcheck disable=SC2016
port_in_use() {
  if command -v ss >/dev/null; then
    ss -Hltn "( sport = :$1 )" 2>/dev/null | grep -q .
  else
    timeout 2 bash -c 'exec 3<>"/dev/tcp/$0/$1"' "$SERVICE_HOST" "$1" 2>/dev/null
  fi
}

# require_free_ports MESSAGE PORT...: fails with MESSAGE, after the ss lines of the ports, if
# something listens on any of them.
require_free_ports() {
  local message=$1 port
  shift
  for port in "$@"; do
    if port_in_use "$port"; then
      ss -ltnp 2>/dev/null | grep -E ":($(IFS='|'; echo "$*"))\b" >&2 || true
      fail "$message"
    fi
  done
}

# Tail of the server's logs, to stderr. With LOG_START (line count of $SERVICE_LOG before this
# start) only lines written since then are shown.
# shellcheck disable=SC2153  # SERVICE_LOG and SERVICE_OUT are set by the service's common.sh
show_logs() {
  local log=$SERVICE_LOG start=${LOG_START:-0} lines
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
  if [ -s "$SERVICE_OUT" ]; then
    echo "----- last 20 lines of $SERVICE_OUT (JVM stdout/stderr) -----" >&2
    tail -n 20 "$SERVICE_OUT" >&2
  fi
  echo "-----" >&2
}

# True unless $LIB holds a complete fetch stamped STAMP.
jars_stale() { [ "$(cat "$LIB/.complete" 2>/dev/null || true)" != "$1" ]; }

# fetch_jars NAME VERSION STAMP WHAT USER_ARGS [mvn arguments...]: copies the runtime closure of
# $HERE/pom.xml into $LIB (through $LIB.tmp, so a failed fetch leaves nothing half done) and
# stamps it with STAMP. USER_ARGS is the service's *_MVN_ARGS, split on spaces; WHAT names the
# artifacts in the failure message; the output of mvn is in $DIST/mvn.log.
fetch_jars() {
  local name=$1 version=$2 stamp=$3 what=$4 user_args=$5
  shift 5
  command -v mvn >/dev/null || fail "mvn not found (needed once to fetch the $name jars)"
  say "fetching $name $version jars from Maven Central into $LIB"
  rm -rf "$LIB" "$LIB.tmp"
  # shellcheck disable=SC2086
  if ! mvn -B -q -Dstyle.color=never -f "$HERE/pom.xml" $user_args \
      org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy-dependencies \
      "$@" -DincludeScope=runtime -DoutputDirectory="$LIB.tmp" \
      </dev/null >"$DIST/mvn.log" 2>&1; then
    cat "$DIST/mvn.log" >&2
    rm -rf "$LIB.tmp"
    fail "mvn could not fetch $what (output above, also in $DIST/mvn.log)"
  fi
  mv "$LIB.tmp" "$LIB"
  echo "$stamp" >"$LIB/.complete"
}

# start_detached NOUN OUT COMMAND...: runs COMMAND in its own session (setsid), without stdin,
# output appended to OUT (emptied first), the lock fd closed; sets pid to its pid (also written
# to $PIDFILE; COMMAND is exec'd, so it is the JVM's). Fails if no pid appears within 5 s.
start_detached() {
  local noun=$1 out=$2
  shift 2
  : >"$out"
  rm -f "$PIDFILE"
  # shellcheck disable=SC2016
  setsid nohup bash -c 'echo $$ >"$0"; exec "$@"' "$PIDFILE" "$@" </dev/null >>"$out" 2>&1 9>&- &
  for _ in $(seq 1 50); do [ -s "$PIDFILE" ] && break; sleep 0.1; done
  pid=$(cat "$PIDFILE" 2>/dev/null || true)
  [ -n "$pid" ] || fail "the $noun process did not start"
}

# wait_ready CHECK NOUN TIMEOUT LATE: polls the function CHECK every 0.5 s until it succeeds.
# Fails with the logs if process $pid exits first (removing $PIDFILE), or after TIMEOUT seconds
# with "the NOUN (pid $pid) LATE" (the process is left running). Sets deadline (epoch seconds).
wait_ready() {
  local check=$1 noun=$2 timeout=$3 late=$4
  deadline=$(( $(date +%s) + timeout ))
  until "$check"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      show_logs
      rm -f "$PIDFILE"
      fail "the $noun (pid $pid) exited during startup"
    fi
    if [ "$(date +%s)" -ge "$deadline" ]; then
      show_logs
      fail "the $noun (pid $pid) $late"
    fi
    sleep 0.5
  done
}

# script_help: prints the script's leading comment block (its usage), without the shebang.
script_help() {
  sed -n '2,/^[^#]/{/^#/p}' "$0"
}

# up_args ARG...: up.sh takes no argument; -h prints its usage.
up_args() {
  local arg
  for arg in "$@"; do
    case "$arg" in
      -h|--help) script_help; exit 0 ;;
      *) fail "unknown argument: $arg (up.sh takes none; -h for its usage)" ;;
    esac
  done
}

# down_args ARG...: down.sh's arguments. Sets WIPE to "" (keep data), data (--wipe) or all
# (--purge); -h prints its usage.
down_args() {
  local arg
  WIPE=""
  for arg in "$@"; do
    case "$arg" in
      --wipe) WIPE=data ;;
      --purge) WIPE=all ;;
      -h|--help) script_help; exit 0 ;;
      *) fail "unknown argument: $arg (use --wipe or --purge)" ;;
    esac
  done
}

# stop_running NOUN TIMEOUT: stops the server started from $DIST, if it runs: SIGTERM, then
# SIGKILL after TIMEOUT seconds. Returns 1 if none was running. $PIDFILE is left to the caller.
stop_running() {
  local noun=$1 timeout=$2 pid t0
  pid=$(running_pid) || return 1
  t0=$(date +%s)
  say "stopping the $noun (pid $pid, SIGTERM)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 $(( timeout * 10 ))); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    say "still running after ${timeout}s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  fi
  say "stopped ($(( $(date +%s) - t0 ))s)"
}

# wipe_dist MESSAGE PATH...: what down.sh --wipe / --purge delete after the stop. With WIPE=data
# the PATHs (then says MESSAGE), with WIPE=all the whole of $DIST (lock fd closed first).
wipe_dist() {
  local message=$1
  shift
  case "$WIPE" in
    data) rm -rf "$@"; say "$message" ;;
    all) exec 9>&-; rm -rf "$DIST"; say "removed $DIST" ;;
  esac
}
