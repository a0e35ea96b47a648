#!/usr/bin/env bash
# Build cdc_monitor/java/cdc-monitor-operators-spark<MINOR>.jar (the decoder every verb reads through,
# and watch's key-history operator) from the Java sources beside it, against the installed pyspark's
# jars (Spark's own Jackson: no second copy) (MINOR: its major.minor, recorded in the
# jar as cdcmonitor/build.properties; cdc-monitor refuses a jar built for another Spark). Needs a JDK
# (javac, jar); the jars are committed, one per supported Spark minor, so users and CI need only a
# JRE. Reproducible: fixed entry times, sorted entries; tests/test_operator_jar.py rebuilds the
# installed minor's jar and compares, scripts/compat.sh another's.
# Usage: bash scripts/build_jar.sh [output.jar]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
jars=$("$PY" -c 'import os, pyspark; print(os.path.join(os.path.dirname(pyspark.__file__), "jars"))')
minor=$("$PY" -c 'import pyspark; print(".".join(pyspark.__version__.split(".")[:2]))')
out=${1:-cdc_monitor/java/cdc-monitor-operators-spark$minor.jar}
cp=$(ls "$jars"/spark-sql_*.jar "$jars"/spark-sql-api_*.jar "$jars"/spark-catalyst_*.jar "$jars"/spark-core_*.jar \
  "$jars"/spark-common-utils*.jar "$jars"/scala-library-*.jar "$jars"/jackson-core-*.jar "$jars"/jackson-databind-*.jar "$jars"/jackson-annotations-*.jar | tr '\n' ':')
classes=$(mktemp -d)
trap 'rm -rf "$classes"' EXIT
javac --release 17 -nowarn -cp "$cp" -d "$classes" cdc_monitor/java/*.java
printf 'spark.minor=%s\n' "$minor" > "$classes/cdcmonitor/build.properties"
touch -d 2026-01-01T00:00:00Z "$classes/cdcmonitor/build.properties"
out=$(realpath -m "$out")
rm -f "$out"
(cd "$classes" && find . -type f | sort | xargs jar --create --no-manifest --date=2026-01-01T00:00:00Z --file "$out")
echo "$out"
