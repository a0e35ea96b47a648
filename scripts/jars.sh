#!/usr/bin/env bash
# Resolve the JVM parts the test suite runs from Maven Central into .cache/jars (kept between runs):
#   kafka-broker/  Apache Kafka's broker (KRaft), started by tests/support/broker.py
#   debezium-connect/  Kafka Connect (the broker's version) and Debezium's PostgreSQL and MySQL
#                  connectors on one flat classpath, started by tests/support/debezium.py
#   debezium-mariadb/  Debezium's MariaDB connector (3.5.0), a Connect plugin, started by
#                  tests/support/debezium_mariadb.py
#   spark-kafka/   Spark's Kafka connector (spark-sql-kafka-0-10) for --kafka-reader spark: the
#                  installed pyspark's version, else the newest published one before it
# Usage: bash scripts/jars.sh [python]   (the Python whose pyspark picks the connector's version)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${1:-.venv/bin/python}
CONNECTOR_FALLBACK=4.2.0  # the newest spark-sql-kafka on Maven Central when pyspark 4.3.0 came out without one

if ! command -v mvn >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "jars.sh: installing Debian's maven" >&2
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends maven >/dev/null
  else
    echo "jars.sh: Maven (mvn) not found: apt-get install maven" >&2
    exit 2
  fi
fi

# resolve NAME TAG [mvn -D...]: scripts/maven/NAME.pom.xml's runtime jars into .cache/jars/NAME,
# unless they are there already for TAG
resolve() {
  local name=$1 tag=$2 dir=.cache/jars/$1
  shift 2
  if [ -f "$dir/.resolved" ] && [ "$(cat "$dir/.resolved")" = "$tag" ]; then
    return 0
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  if mvn -q -B -U -f "scripts/maven/$name.pom.xml" dependency:copy-dependencies -DincludeScope=runtime \
      -DoutputDirectory="$PWD/$dir" "$@" >"$dir.log" 2>&1; then
    echo "$tag" > "$dir/.resolved"
    rm -f "$dir.log"
  else
    rm -rf "$dir"
    return 1
  fi
}

resolve kafka-broker "$(sha256sum scripts/maven/kafka-broker.pom.xml | cut -c1-16)" || {
  echo "jars.sh: could not resolve Apache Kafka's broker from Maven Central; see .cache/jars/kafka-broker.log" >&2
  exit 2
}
resolve debezium-connect "$(sha256sum scripts/maven/debezium-connect.pom.xml | cut -c1-16)" || {
  echo "jars.sh: could not resolve Kafka Connect and Debezium from Maven Central; see .cache/jars/debezium-connect.log" >&2
  exit 2
}
resolve debezium-mariadb "$(sha256sum scripts/maven/debezium-mariadb.pom.xml | cut -c1-16)" \
    -DexcludeGroupIds=org.apache.kafka,org.slf4j || {
  echo "jars.sh: could not resolve Debezium's MariaDB connector from Maven Central; see .cache/jars/debezium-mariadb.log" >&2
  exit 2
}
spark_version=$("$PY" -c 'import pyspark; print(pyspark.__version__)')
if ! resolve spark-kafka "$spark_version" -Dspark.version="$spark_version"; then
  echo "jars.sh: spark-sql-kafka $spark_version is not on Maven Central; using $CONNECTOR_FALLBACK" >&2
  resolve spark-kafka "$spark_version" -Dspark.version="$CONNECTOR_FALLBACK" || {
    echo "jars.sh: could not resolve spark-sql-kafka from Maven Central; see .cache/jars/spark-kafka.log" >&2
    exit 2
  }
fi
