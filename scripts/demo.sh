#!/usr/bin/env bash
# Install cdc-monitor and run a real scan of a freshly generated Debezium MySQL capture that has
# every kind of fault injected. No Kafka needed. Usage: bash scripts/demo.sh [flavour]
set -euo pipefail
cd "$(dirname "$0")/.."
flavour=${1:-mysql}
command -v java >/dev/null 2>&1 || [ -n "${JAVA_HOME:-}" ] || { echo "demo.sh: install Java 17 or 21 first" >&2; exit 2; }
[ -x .venv/bin/python ] || "${PYTHON:-python3}" -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip >/dev/null
.venv/bin/python -m pip install -q -e .
mkdir -p demo
.venv/bin/cdc-monitor generate --flavour "$flavour" --faults --events 1000 --output "demo/$flavour.jsonl"
set +e
.venv/bin/cdc-monitor scan "demo/$flavour.jsonl"
status=$?
set -e
echo
echo "exit code $status (1 = findings at or above --fail-on error: the demo capture has faults injected;"
echo "compare with the ground truth in demo/$flavour.labels.jsonl)"
echo "an HTML report of the same capture, with pictures (open it in a browser):"
echo "  .venv/bin/cdc-monitor scan demo/$flavour.jsonl --output html --report-file demo/report.html"
