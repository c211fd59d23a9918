#!/usr/bin/env bash
# Runs a command against a throwaway PostgreSQL server, the database of the production path
# (docker-compose.yml): a cluster made with initdb in a temporary folder, a server on a free loopback
# port, DATABASE_URL pointing at it for the command; the server is stopped and the folder removed
# afterwards, whatever the command's outcome (whose exit status is returned).
#
#   scripts/with-postgres.sh .venv/bin/python -m pytest tests/memory
#
# Needs Debian's postgresql package (scripts/ensure-system-deps.sh installs it). Run as root, the
# server runs as the package's postgres user (initdb refuses root). Durability is switched off
# (fsync, synchronous_commit): the cluster lives for one test run.
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: $0 COMMAND [ARGS...]" >&2
  exit 2
fi
PGBIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$PGBIN" ] || [ ! -x "$PGBIN/initdb" ]; then
  echo "PostgreSQL is not installed (Debian package postgresql; scripts/ensure-system-deps.sh)" >&2
  exit 1
fi
dir=$(mktemp -d /tmp/arg-postgres-XXXXXX)
as_server=()
if [ "$(id -u)" -eq 0 ]; then
  chown postgres "$dir"
  as_server=(runuser -u postgres --)
fi
# a free loopback port (the kernel's choice), or a random high one without a system python
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
  echo $((20000 + RANDOM % 40000)))
stop() {
  "${as_server[@]}" "$PGBIN/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT
"${as_server[@]}" "$PGBIN/initdb" -D "$dir/data" -U arg --auth=trust -E UTF8 >/dev/null
"${as_server[@]}" "$PGBIN/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w \
  -o "-p $port -k $dir -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=200" \
  start >/dev/null
"${as_server[@]}" "$PGBIN/createdb" -h 127.0.0.1 -p "$port" -U arg arg
echo "PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on 127.0.0.1:$port (throwaway cluster in $dir)"
DATABASE_URL="postgres://arg@127.0.0.1:$port/arg" "$@"
