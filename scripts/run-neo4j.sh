#!/usr/bin/env bash
# `make run GRAPH=neo4j`: the platform on the neo4j graph backend, on one machine, with no Docker —
# the local Neo4j with GDS of tools/neo4j-server beside gunicorn, the Celery worker and Celery beat.
#
#   scripts/run-neo4j.sh PYTHON PORT
#
# Its data lives in var/neo4j-run/ (ARG_NEO4J_RUN_DIR): that mode's own SQLite file, broker folder and
# the Neo4j server's home (var/neo4j-run/neo4j, its password kept there), so the draft graph and the
# database stay together from one run to the next and never mix with the sql mode's var/. Each run
# resumes the server on a free loopback port, creates the graph schema (idempotent), loads the demo
# pack on the first run, then serves; Ctrl-C stops web, worker and beat, then the server (which also
# stops by itself if this script is killed).
set -euo pipefail
if [ $# -ne 2 ]; then
  echo "usage: $0 PYTHON PORT" >&2
  exit 2
fi
py=$1
port=$2
here=$(cd "$(dirname "$0")" && pwd)
data=${ARG_NEO4J_RUN_DIR:-$here/../var/neo4j-run}
mkdir -p "$data"
data=$(cd "$data" && pwd)
home="$data/neo4j"
halt() {
  local status=$?
  trap - EXIT INT TERM
  bash "$here/neo4j-server.sh" halt "$home" || true
  exit "$status"
}
trap halt EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
echo "starting the local Neo4j with GDS (home $home)"
# A long-lived server: the full JIT (the launcher's default is C1 only, for quick test starts).
ARG_NEO4J_JAVA_OPTS=${ARG_NEO4J_JAVA_OPTS:--XX:TieredStopAtLevel=4} ARG_NEO4J_WATCH_PID=$$ \
  bash "$here/neo4j-server.sh" resume "$home" >/dev/null
# shellcheck disable=SC1091
. "$home/env"
export ARG_DATA_DIR="$data" ARG_GRAPH_BACKEND=neo4j NEO4J_URI NEO4J_USER NEO4J_PASSWORD NEO4J_DATABASE
echo "Neo4j on $NEO4J_URI; platform data in $data"
"$py" manage.py migrate --noinput
"$py" manage.py graph_init_schema
"$py" manage.py bootstrap_demo --port "$port"
"$py" manage.py run_embedded --port "$port"
