#!/usr/bin/env bash
# cdc-monitor watch on a Spark cluster (YARN, Kubernetes or standalone). The driver runs the
# query loop and serves /metrics, so run it in client mode on a host Prometheus can scrape.
# Every executor needs Python 3.11+ with cdc-monitor installed (its Kafka reader runs there):
# ship a packed virtualenv, e.g. `venv-pack -o cdc-monitor-env.tar.gz` after `pip install cdc-monitor`.
# The checkpoint must be a folder that the driver and every executor see at the same path (an
# NFS/EFS mount): cdc-monitor's state is written by the driver and its carried records by the
# executors. HDFS/S3 checkpoints are not supported yet.
set -euo pipefail

export PYSPARK_PYTHON=./environment/bin/python
spark-submit \
  --master "${SPARK_MASTER:-yarn}" \
  --deploy-mode client \
  --archives cdc-monitor-env.tar.gz#environment \
  --conf spark.sql.shuffle.partitions=16 \
  --conf spark.sql.session.timeZone=UTC \
  --conf spark.sql.variant.allowDuplicateKeys=true \
  "$(python -c 'import cdc_monitor.__main__ as m; print(m.__file__)')" \
  watch \
    --spark-master "${SPARK_MASTER:-yarn}" \
    --bootstrap-servers "${KAFKA_BOOTSTRAP:?set KAFKA_BOOTSTRAP}" \
    --topics 'mysql_server_1\..*' \
    --checkpoint "${CHECKPOINT:-/mnt/shared/cdc-monitor/checkpoint}" \
    --listen 0.0.0.0:9464 \
    --interval 30s
