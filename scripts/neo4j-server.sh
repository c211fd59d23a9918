#!/usr/bin/env bash
# A local Neo4j Community 5.26 server with the open Graph Data Science procedures, built from Maven
# Central by tools/neo4j-server (no tarball, no Docker; see its README.md). scripts/with-neo4j.sh runs a
# command against a throwaway one; this script is its engine, and also serves a longer-lived one:
#
#   scripts/neo4j-server.sh build         build tools/neo4j-server unless built already (prints its folder)
#   scripts/neo4j-server.sh start DIR     start a server with its home in DIR (new or empty) on a free
#                                         loopback port; prints the export lines of NEO4J_URI, NEO4J_USER,
#                                         NEO4J_PASSWORD and NEO4J_DATABASE (also left in DIR/env)
#   scripts/neo4j-server.sh stop DIR      stop that server and remove DIR
#   scripts/neo4j-server.sh resume DIR    start the server whose home DIR is, keeping its data and password
#                                         (a new or empty DIR: as start); prints the same export lines
#   scripts/neo4j-server.sh halt DIR      stop that server and keep DIR (for a later resume)
#
#   eval "$(scripts/neo4j-server.sh start /tmp/my-neo4j)"; ...; scripts/neo4j-server.sh stop /tmp/my-neo4j
#
# The server listens on 127.0.0.1 only: Bolt on a free port (no TLS), HTTP, HTTPS and routing off.
# Authentication is on, with a password generated for the server; GDS runs unrestricted (gds.*).
# Needs a JDK 17 or 21 (`java`, or $JAVA) and, for the first build, Maven (`mvn`):
# scripts/ensure-system-deps.sh installs both. The build goes to tools/neo4j-server/target/dist/HASH
# (git-ignored), HASH that of the module's pom and source: while they are unchanged, no Maven runs.
#
# Start-up is made cheap for a test server: C1-only JIT (-XX:TieredStopAtLevel=1) and a class-data
# sharing archive of the server's classes, written by the first server that a JVM runs from a build
# and mapped by the later ones (ARG_NEO4J_CDS=0 turns it off).
#
# Environment: ARG_NEO4J_HEAP (max heap, default 1g), ARG_NEO4J_PAGECACHE (default 256m),
# ARG_NEO4J_JAVA_OPTS (more JVM options, after the script's: -XX:TieredStopAtLevel=4 restores the full
# JIT), ARG_NEO4J_START_TIMEOUT_S (default 180), ARG_NEO4J_PORT (Bolt port; default a free one),
# ARG_NEO4J_WATCH_PID (the server stops by itself when that process ends; scripts/with-neo4j.sh
# passes its own).
set -euo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
MODULE="$REPO/tools/neo4j-server"
TARGET="$MODULE/target"
JAVA=${JAVA:-java}

usage() {
  echo "usage: $0 build | start DIR | stop DIR | resume DIR | halt DIR" >&2
  exit 2
}

say() { echo "neo4j-server: $*" >&2; }

# What the build depends on: the pom and the launcher's source.
stamp() {
  (cd "$MODULE" && find pom.xml src -type f | LC_ALL=C sort | xargs sha256sum) | sha256sum | cut -c1-16
}

# Sets DIST to the built server (lib/, plugins/), building it first unless done.
build() {
  DIST="$TARGET/dist/$(stamp)"
  [ -f "$DIST/.complete" ] && return 0
  mkdir -p "$TARGET"
  # One build at a time (two test sessions starting at once share the cache).
  exec 8>"$TARGET/.build.lock"
  flock 8
  if [ ! -f "$DIST/.complete" ]; then
    if ! command -v mvn >/dev/null 2>&1; then
      say "Maven (mvn) is needed for the first build of tools/neo4j-server (scripts/ensure-system-deps.sh)"
      exit 1
    fi
    say "building tools/neo4j-server (Neo4j and GDS from Maven Central, once: cached in $DIST)"
    rm -rf "$DIST"
    local started=$SECONDS
    if ! mvn -B -q -f "$MODULE/pom.xml" -Ddist.dir="$DIST" package >"$TARGET/build.log" 2>&1; then
      cat "$TARGET/build.log" >&2
      say "the build of tools/neo4j-server failed (log above, also in $TARGET/build.log)"
      exit 1
    fi
    touch "$DIST/.complete"
    say "built in $((SECONDS - started))s: $(find "$DIST/lib" -name '*.jar' | wc -l) jars in $DIST/lib"
    # Earlier builds, unless used within the hour (a server may still run from one).
    find "$TARGET/dist" -mindepth 1 -maxdepth 1 -type d ! -path "$DIST" -mmin +60 -exec rm -rf {} + 2>/dev/null || true
  fi
  exec 8>&-
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 40000))
}

# True when a Bolt server answers the handshake on 127.0.0.1:$1 (it agrees to Bolt 4.4, which 5.26 speaks).
bolt_answers() {
  local reply
  # shellcheck disable=SC2016 # $1 is the inner shell's
  reply=$(timeout 5 bash -c '
    exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 1
    printf "\x60\x60\xb0\x17\x00\x00\x04\x04\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" >&3
    head -c 4 <&3 | od -An -tx1' bash "$1" 2>/dev/null) || return 1
  [ "${reply//[[:space:]]/}" = "00000404" ]
}

show_logs() {
  local dir=$1 f
  for f in "$dir/logs/console.log" "$dir/logs/neo4j.log" "$dir/logs/debug.log"; do
    if [ -s "$f" ]; then
      echo "----- $f (last 60 lines)" >&2
      tail -n 60 "$f" >&2
    fi
  done
}

start() {
  local dir=$1
  if [ -e "$dir" ] && [ -n "$(ls -A "$dir")" ]; then
    say "$dir is not empty: start needs a new or empty folder"
    exit 1
  fi
  local props major
  props=$("$JAVA" -XshowSettings:properties -version 2>&1 || true)
  major=$(awk -F' = ' '/java.specification.version/ {print $2}' <<<"$props")
  if [ -z "$major" ] || [ "${major%%.*}" -lt 17 ]; then
    say "Neo4j 5.26 needs Java 17 or 21 ($JAVA is ${major:-missing}; scripts/ensure-system-deps.sh)"
    exit 1
  fi
  build
  touch "$DIST" # in use (build removes unused old builds)
  mkdir -p "$dir/conf" "$dir/data" "$dir/logs" "$dir/run" "$dir/import"
  dir=$(cd "$dir" && pwd)
  touch "$dir/.arg-neo4j-server"
  local port=${ARG_NEO4J_PORT:-$(free_port)}
  local password # 32 hex characters from the kernel's generator (Neo4j wants at least 8)
  password=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
  (umask 077 && printf '%s' "$password" >"$dir/password")
  cat >"$dir/conf/neo4j.conf" <<EOF
# Generated by scripts/neo4j-server.sh for a throwaway server.
server.default_listen_address=127.0.0.1
server.default_advertised_address=127.0.0.1
server.bolt.enabled=true
server.bolt.listen_address=127.0.0.1:$port
server.bolt.advertised_address=127.0.0.1:$port
server.bolt.tls_level=DISABLED
server.http.enabled=false
server.https.enabled=false
dbms.routing.enabled=false
dbms.usage_report.enabled=false
dbms.security.auth_enabled=true
server.directories.plugins=$DIST/plugins
dbms.security.procedures.unrestricted=gds.*
dbms.security.procedures.allowlist=gds.*
server.memory.pagecache.size=${ARG_NEO4J_PAGECACHE:-256m}
# One test run: no preallocated 256 MiB transaction logs, and few of them kept.
db.tx_log.preallocate=false
db.tx_log.rotation.retention_policy=2 files
# Stop in a second or two rather than ten (the waits of Bolt's Netty shutdown, in seconds).
internal.dbms.bolt.netty_server_shutdown_quiet_period=0
internal.dbms.bolt.netty_server_shutdown_timeout=2
EOF
  launch "$dir" "$port" "$password" "$dir/password"
}

# Start the server of home $1 on Bolt port $2 with password $3; $4: the initial-password file (only
# for a new home), or empty. Writes DIR/env, waits for Bolt, prints the export lines.
launch() {
  local dir=$1 port=$2 password=$3 initial=$4 vm
  vm=$("$JAVA" -XshowSettings:properties -version 2>&1 | awk -F' = ' '/java.vm.version|java.home/ {print $2}' |
    sha256sum | cut -c1-12)
  cat >"$dir/env" <<EOF
export NEO4J_URI=bolt://127.0.0.1:$port
export NEO4J_USER=neo4j
export NEO4J_PASSWORD=$password
export NEO4J_DATABASE=neo4j
EOF
  # Class-data sharing: map this JVM's archive of the build, or have this server write it at its exit
  # (under a name of its own; `stop` moves it in place once the server has ended by itself).
  local cds=() archive="$DIST/cds-$vm.jsa"
  if [ "${ARG_NEO4J_CDS:-1}" != 0 ]; then
    if [ -s "$archive" ]; then
      cds=(-XX:SharedArchiveFile="$archive")
    elif "$JAVA" -Xshare:on -version >/dev/null 2>&1; then # a base archive to build on
      find "$DIST" -maxdepth 1 -name 'cds-*.jsa.*' -mmin +120 -delete 2>/dev/null || true
      cds=(-XX:ArchiveClassesAtExit="$archive.$$")
      echo "$archive.$$ $archive" >"$dir/cds-pending"
    fi
  fi
  # Neo4j's own JVM flags (those of its neo4j.conf template, without AlwaysPreTouch), small memory,
  # C1 only. Started in the background by a non-interactive shell, the server ignores SIGINT: ^C reaches
  # the command alone, and the server is stopped by `stop` (or its watchdog, ARG_NEO4J_WATCH_PID).
  # shellcheck disable=SC2086 # ARG_NEO4J_JAVA_OPTS is a list of options
  (
    cd "$dir"
    NEO4J_INITIAL_PASSWORD_FILE="$initial" NEO4J_WATCH_PID="${ARG_NEO4J_WATCH_PID:-}" \
      exec nohup "$JAVA" \
      -Xms512m -Xmx"${ARG_NEO4J_HEAP:-1g}" -XX:+UseG1GC -XX:TieredStopAtLevel=1 "${cds[@]}" \
      -XX:-OmitStackTraceInFastThrow -XX:+UnlockExperimentalVMOptions -XX:+TrustFinalNonStaticFields \
      -XX:+DisableExplicitGC -Djdk.nio.maxCachedBufferSize=1024 -Dio.netty.tryReflectionSetAccessible=true \
      -Djdk.tls.ephemeralDHKeySize=2048 -Djdk.tls.rejectClientInitiatedRenegotiation=true \
      --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/java.io=ALL-UNNAMED \
      --add-opens=java.base/sun.nio.ch=ALL-UNNAMED --enable-native-access=ALL-UNNAMED \
      -Dlog4j2.disable.jmx=true -Dfile.encoding=UTF-8 ${ARG_NEO4J_JAVA_OPTS:-} \
      -cp "$DIST/plugins/arg-neo4j-launcher.jar:$DIST/lib/*" org.arg.tools.neo4j.ThrowawayServer \
      --home-dir="$dir" --config-dir="$dir/conf"
  ) >"$dir/logs/console.log" 2>&1 </dev/null &
  local pid=$!
  echo "$pid" >"$dir/neo4j.pid"
  local timeout=${ARG_NEO4J_START_TIMEOUT_S:-180}
  local deadline=$((SECONDS + timeout))
  until grep -q "Started\.$" "$dir/logs/neo4j.log" 2>/dev/null && bolt_answers "$port"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      show_logs "$dir"
      say "the server exited before Bolt answered (its logs above)"
      exit 1
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      show_logs "$dir"
      say "Bolt did not answer on 127.0.0.1:$port within ${timeout}s (its logs above)"
      exit 1
    fi
    sleep 0.2
  done
  cat "$dir/env"
}

resume() {
  local dir=$1
  if [ ! -e "$dir/.arg-neo4j-server" ] || [ ! -f "$dir/conf/neo4j.conf" ] || [ ! -s "$dir/password" ]; then
    start "$dir"
    return
  fi
  dir=$(cd "$dir" && pwd)
  local pid
  pid=$(cat "$dir/neo4j.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    say "the server of $dir runs already (pid $pid): halt it first"
    exit 1
  fi
  build
  touch "$DIST"
  local port=${ARG_NEO4J_PORT:-$(free_port)}
  # A new port (the old one may be taken now), and the current build's plugins.
  sed -i -e "s|^server.bolt.listen_address=.*|server.bolt.listen_address=127.0.0.1:$port|" \
    -e "s|^server.bolt.advertised_address=.*|server.bolt.advertised_address=127.0.0.1:$port|" \
    -e "s|^server.directories.plugins=.*|server.directories.plugins=$DIST/plugins|" "$dir/conf/neo4j.conf"
  rm -f "$dir/logs/neo4j.log"
  launch "$dir" "$port" "$(cat "$dir/password")" ""
}

# Stop the server of home $1 (TERM, then KILL after 60 s) and settle its class-data archive; true when
# it ended by itself.
terminate() {
  local dir=$1 pid clean=1
  pid=$(cat "$dir/neo4j.pid" 2>/dev/null || true)
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    local deadline=$((SECONDS + 60))
    while kill -0 "$pid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
      sleep 0.2
    done
    if kill -0 "$pid" 2>/dev/null; then
      kill -KILL "$pid" 2>/dev/null || true
      clean=0
    fi
  fi
  rm -f "$dir/neo4j.pid"
  if [ -f "$dir/cds-pending" ]; then
    local written archive
    read -r written archive <"$dir/cds-pending"
    if [ "$clean" = 1 ] && [ -s "$written" ]; then
      mv -f "$written" "$archive"
    else
      rm -f "$written"
    fi
    rm -f "$dir/cds-pending"
  fi
}

halt() {
  local dir=$1
  [ -e "$dir/.arg-neo4j-server" ] || return 0
  terminate "$dir"
}

stop() {
  local dir=$1
  [ -d "$dir" ] || return 0
  if [ ! -e "$dir/.arg-neo4j-server" ] && [ -n "$(ls -A "$dir")" ]; then
    say "$dir was not made by $0 start: left alone"
    exit 1
  fi
  terminate "$dir"
  rm -rf "$dir"
}

[ $# -ge 1 ] || usage
case "$1" in
  build) [ $# -eq 1 ] || usage; build; echo "$DIST" ;;
  start) [ $# -eq 2 ] || usage; start "$2" ;;
  stop) [ $# -eq 2 ] || usage; stop "$2" ;;
  resume) [ $# -eq 2 ] || usage; resume "$2" ;;
  halt) [ $# -eq 2 ] || usage; halt "$2" ;;
  *) usage ;;
esac
