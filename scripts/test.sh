#!/usr/bin/env bash
# Set up everything the test suite needs on a fresh machine, then run it (lint + pytest).
# Usage: bash scripts/test.sh [--quick] [pytest args...]
#   --quick: the inner loop (unit tests, the decoder's and the seed goldens' small scans), under 3 minutes
set -euo pipefail
cd "$(dirname "$0")/.."
QUICK_TESTS=(tests/unit tests/test_decode_documents.py tests/test_decoder_schema.py tests/test_seed_golden.py
             tests/test_job_budget.py tests/test_operator_jar.py)
quick=""
if [ "${1:-}" = "--quick" ]; then
  quick=yes
  shift
fi

# Java: Spark needs a JDK/JRE 17 or 21, and tests/test_operator_jar.py rebuilds the operator jar
# from cdc_monitor/java/*.java to prove the committed jar is current: a JDK (javac, jar), not a JRE,
# or that test fails (it does not skip: a stale jar must not pass green on a JRE-only machine).
# A JDK named by JAVA_HOME counts: its bin goes first on PATH (build_jar.sh runs javac and jar from PATH).
if [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/javac" ]; then
  export PATH="$JAVA_HOME/bin:$PATH"
fi
if ! command -v javac >/dev/null 2>&1 || ! command -v jar >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test.sh: installing a JDK (openjdk-17-jdk-headless)" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
  else
    echo "test.sh: no JDK (javac) on PATH: install one (apt-get install openjdk-17-jdk-headless), JDK 17 or 21" >&2
    exit 2
  fi
fi
java -version 2>&1 | head -1 >&2

# Debian packages: Prometheus, promtool, the Pushgateway and PostgreSQL (not started as services:
# the tests start them on loopback ports and stop them), and headless Chromium
# (tests/test_html_report_in_a_browser.py opens the HTML report in a real browser). One apt run for whatever is missing.
packages=""
for bin in prometheus promtool; do
  command -v "$bin" >/dev/null 2>&1 || packages="prometheus"
done
command -v prometheus-pushgateway >/dev/null 2>&1 || packages="$packages prometheus-pushgateway"
command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || packages="$packages chromium"
# PostgreSQL and its JDBC driver: tests/test_reconcile.py starts a cluster on a loopback port
compgen -G "/usr/lib/postgresql/*/bin/postgres" >/dev/null || packages="$packages postgresql-15"
[ -f /usr/share/java/postgresql.jar ] || packages="$packages libpostgresql-jdbc-java"
# MariaDB: tests/test_debezium_mariadb.py starts a server on a loopback port
[ -x /usr/sbin/mariadbd ] || packages="$packages mariadb-server"
if [ -n "$packages" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "test.sh: installing Debian's$packages" >&2
    # the tests start their own servers: keep the install from starting the packaged services
    # (Debian's policy-rc.d hook, 101 = action forbidden), rather than stopping them afterwards
    policy=""
    if [ ! -e /usr/sbin/policy-rc.d ]; then
      printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod +x /usr/sbin/policy-rc.d && policy="yes"
    fi
    installed=0
    # shellcheck disable=SC2086
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      $packages >/dev/null; } || installed=$?
    if [ -n "$policy" ]; then rm -f /usr/sbin/policy-rc.d; fi
    [ "$installed" = 0 ] || exit "$installed"
  else
    echo "test.sh: missing Debian packages: apt-get install$packages" >&2
    exit 2
  fi
fi
promtool --version 2>&1 | head -1 >&2

# Python dependencies in a project-local virtual environment.
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e ".[test,grafana,gx,avro]"

.venv/bin/ruff check .

# Apache Kafka's broker and Spark's Kafka connector from Maven Central, cached in .cache/jars
bash scripts/jars.sh .venv/bin/python

# The JVM class archive every later Spark start maps (seconds off each CLI run the suite makes;
# tests/test_cli.py proves a scan uses it). Not fatal: without it runs are only slower.
.venv/bin/python -m cdc_monitor warm-up --if-missing || echo "test.sh: cdc-monitor warm-up failed; running without the JVM class archive" >&2

# Two workers (xdist): the suite waits on brokers, servers and JVM starts as much as it computes.
# Tests that share the Spark standalone cluster run on one worker (their xdist_group), so only
# one cluster starts. CDC_MONITOR_TEST_WORKERS=0 runs everything in this process.
set +e
if [ -n "$quick" ]; then
  .venv/bin/python -m pytest -n "${CDC_MONITOR_TEST_WORKERS:-2}" --dist loadgroup --durations=10 "${QUICK_TESTS[@]}" "$@"
else
  .venv/bin/python -m pytest -n "${CDC_MONITOR_TEST_WORKERS:-2}" --dist loadgroup --durations=25 "$@"
fi
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "test.sh: pytest collected no tests: failing, a run that tests nothing proves nothing" >&2
  exit 1
fi
exit "$status"
