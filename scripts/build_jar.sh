#!/usr/bin/env bash
# Build cdc_monitor/java/cdc-monitor-operators.jar (watch's JVM operator) from the Java sources beside
# it, against the installed pyspark's jars. Needs a JDK (javac, jar); the jar is committed, so users
# and CI need only a JRE. Reproducible: fixed entry times, sorted entries; tests/test_operator_jar.py
# rebuilds it and compares. Usage: bash scripts/build_jar.sh [output.jar]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
out=${1:-cdc_monitor/java/cdc-monitor-operators.jar}
jars=$("$PY" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
cp=$(ls "$jars"/spark-sql_*.jar "$jars"/spark-sql-api_*.jar "$jars"/spark-catalyst_*.jar "$jars"/spark-core_*.jar \
  "$jars"/spark-common-utils*.jar "$jars"/scala-library-*.jar | tr '\n' ':')
classes=$(mktemp -d)
trap 'rm -rf "$classes"' EXIT
javac --release 17 -nowarn -cp "$cp" -d "$classes" cdc_monitor/java/*.java
out=$(realpath -m "$out")
rm -f "$out"
(cd "$classes" && find . -name '*.class' | sort | xargs jar --create --no-manifest --date=2026-01-01T00:00:00Z --file "$out")
echo "$out"
