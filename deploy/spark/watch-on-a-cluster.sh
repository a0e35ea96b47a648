#!/usr/bin/env bash
# cdc-monitor watch on a Spark cluster (YARN, standalone or Kubernetes). The cdc-monitor process is
# the Spark driver (client mode): it runs the query loop and serves /metrics, so run it on a host
# Prometheus can scrape and the executors can reach. It ships the cdc_monitor package to the
# executors itself; the executors need Python 3.11 with cdc-monitor's dependencies, shipped here as
# a packed virtualenv (built once). The checkpoint must be a folder the driver and every executor
# see at the same path (an NFS/EFS mount).
#   SPARK_MASTER=yarn KAFKA_BOOTSTRAP=kafka:9092 CHECKPOINT=/mnt/shared/ckpt deploy/spark/watch-on-a-cluster.sh
set -euo pipefail

ENV_ARCHIVE=${ENV_ARCHIVE:-cdc-env.tar.gz}
if [ ! -f "$ENV_ARCHIVE" ]; then
  python3.11 -m venv /tmp/cdc-env
  /tmp/cdc-env/bin/pip install -q confluent-kafka pyarrow pandas venv-pack
  /tmp/cdc-env/bin/venv-pack -p /tmp/cdc-env -o "$ENV_ARCHIVE"
fi
cat > cluster.toml <<TOML
[spark]
"spark.archives" = "${ENV_ARCHIVE}#environment"
"spark.pyspark.python" = "./environment/bin/python"
"spark.executor.instances" = "${EXECUTORS:-2}"
"spark.sql.shuffle.partitions" = "16"
TOML

exec cdc-monitor watch \
  --spark-master "${SPARK_MASTER:-yarn}" \
  --config cluster.toml \
  --bootstrap-servers "${KAFKA_BOOTSTRAP:?set KAFKA_BOOTSTRAP}" \
  --topics "${TOPICS:-mysql_server_1\..*}" \
  --checkpoint "${CHECKPOINT:-/mnt/shared/cdc-monitor/checkpoint}" \
  --listen 0.0.0.0:9464 \
  --interval 30s
