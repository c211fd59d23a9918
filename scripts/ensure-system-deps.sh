#!/usr/bin/env bash
# Installs the system packages the test suite needs when they are missing: Debian's Chromium and
# ChromeDriver (browser tests; never a browser download), Node.js with npm (the Cypher linter),
# PostgreSQL (the suite's second pass runs on it: scripts/with-postgres.sh), and a Java 17+ runtime with
# Maven (the local Neo4j with GDS that tools/neo4j-server builds from Maven Central: scripts/with-neo4j.sh),
# and the openssl command (a test makes a throwaway TLS certificate with it).
set -euo pipefail
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
command -v node >/dev/null 2>&1 || missing+=(nodejs)
command -v npm >/dev/null 2>&1 || missing+=(npm)
ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || missing+=(postgresql)
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing system packages: ${missing[*]}"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
