#!/usr/bin/env bash
# Runs a command against a throwaway Neo4j 5.26 Community server with the open Graph Data Science
# procedures, the graph store of the production path (docker-compose.yml): built from Maven Central by
# tools/neo4j-server (cached in its target/), its home in a temporary folder, Bolt on a free loopback
# port, a generated password; NEO4J_URI, NEO4J_USER, NEO4J_PASSWORD and NEO4J_DATABASE point the command
# at it. The server is stopped and the folder removed afterwards, whatever the command's outcome (whose
# exit status is returned), also on ^C or TERM. (Bash runs a trap once the command in the foreground has
# ended: a TERM meant to stop both goes to the process group, as tests/neo4j_server.py sends it.)
#
#   scripts/with-neo4j.sh .venv/bin/python -m pytest -m neo4j
#
# Needs a JDK 17 or 21 and Maven (scripts/ensure-system-deps.sh installs them). The first run builds
# the server (about 190 MB of jars from Maven Central into ~/.m2, ~40 s; cached in
# tools/neo4j-server/target); a warm start answers on Bolt in 6-8 s. scripts/neo4j-server.sh starts and
# stops a longer-lived server, and tells the settings (ARG_NEO4J_HEAP, ARG_NEO4J_PAGECACHE, ...).
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi
here=$(cd "$(dirname "$0")" && pwd)
dir=$(mktemp -d /tmp/arg-neo4j-XXXXXX)
stop() {
  local status=$?
  trap - EXIT INT TERM
  bash "$here/neo4j-server.sh" stop "$dir" >/dev/null 2>&1 || rm -rf "$dir"
  exit "$status"
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
# The server watches this shell: killed without its traps (SIGKILL), it does not outlive it either.
ARG_NEO4J_WATCH_PID=$$ bash "$here/neo4j-server.sh" start "$dir" >/dev/null
# shellcheck disable=SC1091
. "$dir/env"
pom="$here/../tools/neo4j-server/pom.xml"
echo "Neo4j $(sed -n "s:.*<neo4j.version>\(.*\)</neo4j.version>.*:\1:p" "$pom") with GDS $(sed -n "s:.*<gds.version>\(.*\)</gds.version>.*:\1:p" "$pom")" \
  "on ${NEO4J_URI#bolt://} (throwaway server in $dir)"
"$@"
