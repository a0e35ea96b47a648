#!/usr/bin/env bash
# Run the accuracy tests on another pyspark: a second virtual environment (.venv-compat-VERSION)
# with pyspark==VERSION and this checkout, the committed operator jar for that Spark minor checked
# against a fresh build from the sources (needs a JDK), then the accuracy, seed-golden and watch
# engine tests. VERSION must be inside the range pyproject.toml declares (pip refuses it otherwise).
# Usage: bash scripts/compat.sh VERSION [pytest args...]     e.g. bash scripts/compat.sh 4.1.4
set -euo pipefail
cd "$(dirname "$0")/.."
if [ $# -lt 1 ]; then
  echo "usage: bash scripts/compat.sh VERSION [pytest args...]  (a pyspark version, e.g. 4.1.4)" >&2
  exit 2
fi
version=$1
shift
venv=.venv-compat-$version
PY=${PYTHON:-python3}
[ -x "$venv/bin/python" ] || "$PY" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip >/dev/null
"$venv/bin/python" -m pip install -q "pyspark[connect]==$version" -e ".[test,avro]"
got=$("$venv/bin/python" -c 'import pyspark; print(pyspark.__version__)')
echo "compat.sh: pyspark $got in $venv" >&2

minor=${version%.*}
committed=cdc_monitor/java/cdc-monitor-operators-spark$minor.jar
if [ ! -f "$committed" ]; then
  echo "compat.sh: no $committed: build it with PYTHON=$venv/bin/python bash scripts/build_jar.sh and commit it" >&2
  exit 1
fi
# the committed jar must be what the sources build to: without a JDK that cannot be checked, so
# refuse rather than test a jar that may be stale
if ! command -v javac >/dev/null 2>&1 || ! command -v jar >/dev/null 2>&1; then
  echo "compat.sh: no JDK (javac, jar) on PATH to check $committed against the sources: install one (apt-get install openjdk-17-jdk-headless)" >&2
  exit 2
fi
fresh=$(mktemp -d)/operators.jar
PYTHON="$venv/bin/python" bash scripts/build_jar.sh "$fresh" >/dev/null
if ! cmp -s "$fresh" "$committed"; then
  echo "compat.sh: $committed is not what the sources build to against pyspark $got: rebuild it" >&2
  exit 1
fi
echo "compat.sh: $committed rebuilds identically" >&2

set +e
"$venv/bin/python" -m pytest -n "${CDC_MONITOR_TEST_WORKERS:-2}" --dist loadgroup -q -p no:cacheprovider \
  tests/test_accuracy.py tests/test_accuracy_features.py tests/test_seed_golden.py tests/test_watch_engine.py "$@"
status=$?
set -e
echo "compat.sh: pyspark $got: pytest exit $status" >&2
exit "$status"
