#!/usr/bin/env bash
# The suite's real Debezium pipeline, by hand: PostgreSQL 15 (wal_level=logical) on a loopback port,
# an Apache Kafka 4.1.1 broker, Kafka Connect standalone running Debezium 3.6.1's PostgreSQL connector
# (pgoutput, transaction metadata, heartbeats, JSON with schemas, an initial snapshot), the tables of
# tests/support/debezium_workload.py snapshotted and, with --workload, its clean transactions run.
# Prints the broker and database addresses; Ctrl-C stops every process it started, by PID.
# Usage: bash scripts/debezium.sh [--workload]     (after bash scripts/jars.sh)
#   then: .venv/bin/cdc-monitor scan --bootstrap-servers <broker> --topics 'dbzpg\..*|__debezium-heartbeat\.dbzpg'
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
exec "$PY" - "$@" <<'PYEOF'
import signal, sys, tempfile, time
from pathlib import Path

from tests.support import debezium_workload as w
from tests.support.broker import ApacheKafka
from tests.support.debezium import DebeziumPostgres
from tests.support.postgres import DATABASE, USER

root = Path(tempfile.mkdtemp(prefix="cdc-monitor-debezium-"))
broker = ApacheKafka(root / "kafka")
pipeline = None
try:
    pipeline = DebeziumPostgres(root, broker.bootstrap, "dbzpg", prepare=lambda pg: pg.sql(w.SCHEMA_SQL))
    if "--workload" in sys.argv[1:]:
        for txn in w.clean_workload():
            pipeline.pg.sql(txn.sql)
    print(f"broker      {broker.bootstrap}", flush=True)
    print(f"postgresql  {pipeline.pg.url} (user {USER}, database {DATABASE}, password in tests/support/postgres.py)")
    print(f"connect     http://127.0.0.1:{pipeline.connect.rest} (REST), logs in {root / 'connect'}")
    print("Ctrl-C stops them", flush=True)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(3600)
except KeyboardInterrupt:
    pass
finally:
    if pipeline is not None:
        pipeline.stop()
    broker.stop()
PYEOF
