"""One SparkSession for the whole suite; generated captures shared across test modules."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

# the longest tests start first, so two xdist workers finish together rather than one waiting
# out a long test started last
LONG_FIRST = (
    "tests/test_broker_faults.py::",
    "tests/test_connect.py::",  # a Connect server and a client process scanning the seeds, one flavour and a Kafka window
    "tests/test_large_groups.py::",
    "tests/test_avro.py::test_avro_from_kafka",
    "tests/test_kafka_source.py::test_cli_generate_to_kafka_then_scan_a_time_window_on_a_cluster",
    "tests/test_accuracy.py::test_every_injected_fault_is_found_exactly",
    "tests/test_gate.py::test_faulty_capture",
)


# modules whose module-scoped fixtures are costly (generated captures, a Prometheus server): all their
# tests on one worker, so the fixture is built once, not once per worker
ONE_WORKER_MODULES = ("test_accuracy.py", "test_accuracy_features.py", "test_seed_golden.py",
                      "test_prometheus_integration.py", "test_reconcile.py",
                      "test_broker_faults.py", "test_connect.py")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Tests that use the Spark standalone cluster share one xdist worker (one cluster starts),
    and the longest tests go first."""
    for item in items:
        if "spark_cluster" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.xdist_group("spark-cluster"))
        elif {"debezium_world", "debezium_mariadb"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.xdist_group("debezium"))
        elif item.nodeid.split("::")[0].rsplit("/", 1)[-1] in ONE_WORKER_MODULES:
            item.add_marker(pytest.mark.xdist_group(item.nodeid.split("::")[0]))

    def rank(item) -> int:
        return next((i for i, prefix in enumerate(LONG_FIRST) if item.nodeid.startswith(prefix)), len(LONG_FIRST))

    items.sort(key=rank)


def pytest_collection_finish(session):
    """xdist's loadgroup sends a group to one worker by suffixing its tests' node ids; pytest 9.2
    made node ids read-only, so the suffix silently vanished and every costly fixture (the Spark
    cluster, the Avro world, the accuracy captures) was built on both workers. Fail instead."""
    config = session.config
    if not hasattr(config, "workerinput") or not config.getvalue("loadgroup"):
        return
    lost = [i.nodeid for i in session.items if i.get_closest_marker("xdist_group") and "@" not in i.nodeid]
    if lost:
        raise pytest.UsageError(f"pytest-xdist's --dist loadgroup did not group {lost[0]} (and {len(lost) - 1} more): "
                                "this pytest and pytest-xdist do not work together; pyproject.toml pins a pytest that does")


@pytest.fixture(scope="session")
def spark():
    from cdc_monitor.runtime.session import get_spark

    # Spark's Kafka connector on the classpath (scripts/jars.sh): --kafka-reader spark is tested in process
    from tests.support.broker import spark_kafka_jars

    session = get_spark("local[2]", {"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
                                     "spark.jars": ",".join(spark_kafka_jars())})
    yield session
    session.stop()


@pytest.fixture(scope="session")
def caps(spark):
    """The test session's capabilities (runtime/session.py): what the engine, checks and watch are handed."""
    from cdc_monitor.runtime.session import capabilities

    return capabilities(spark)


@pytest.fixture(scope="session")
def scan(spark):
    """scan(paths, **config) -> ScanResult over capture files."""
    from cdc_monitor.config import ScanConfig
    from cdc_monitor.pipeline import run_scan
    from cdc_monitor.sources.capture import read_capture

    def _scan(paths, **config):
        cfg = ScanConfig(max_findings=100_000, **config)
        return run_scan(read_capture(spark, [str(p) for p in paths]), cfg)

    return _scan


@pytest.fixture(scope="session")
def kafka(tmp_path_factory):
    """An Apache Kafka broker started once for the session (per xdist worker): every test on its own
    topics. tests/test_broker_faults.py kills it and starts it again (same ports and data) in one test."""
    from tests.support.broker import ApacheKafka

    broker = ApacheKafka(tmp_path_factory.mktemp("kafka"))
    yield broker
    broker.stop()


@pytest.fixture(scope="session")
def kafka_broker(kafka):
    """The session broker's bootstrap servers."""
    return kafka.bootstrap


@pytest.fixture(scope="session")
def debezium_world(kafka_broker, tmp_path_factory):
    """A real Debezium pipeline (PostgreSQL, Kafka Connect running Debezium's PostgreSQL connector,
    on the session's broker), started once; its traffic written once: an initial snapshot, a clean
    workload, a connector crash and restart (tests/support/debezium_world.py)."""
    from tests.support.debezium_world import build

    world = build(tmp_path_factory.mktemp("debezium"), kafka_broker)
    yield world
    world.stop()


@pytest.fixture(scope="session")
def spark_cluster(tmp_path_factory):
    """A Spark standalone master and two one-core workers on loopback, started once; executors run
    a Python that has cdc-monitor's dependencies but not cdc-monitor (the driver ships it).
    ``args``: what a CLI run adds to use it (--spark-master and a config file)."""
    from tests.support.spark_cluster import SparkStandalone, worker_environment

    root = tmp_path_factory.mktemp("spark-cluster")
    python = worker_environment(root / "worker-env")
    standalone = SparkStandalone(root)
    config = root / "cluster.toml"
    # what a user sets for a small window on a small cluster: the executors' Python, their size,
    # a few shuffle partitions
    config.write_text(f'[spark]\n"spark.pyspark.python" = "{python}"\n"spark.executor.memory" = "768m"\n'
                      '"spark.executor.cores" = "1"\n"spark.sql.shuffle.partitions" = "4"\n')
    yield {"url": standalone.url, "python": python, "args": ["--spark-master", standalone.url, "--config", str(config)]}
    standalone.stop()


@pytest.fixture(scope="session")
def connect_server(tmp_path_factory):
    """A real Spark Connect server from the pip-installed pyspark, on loopback, started once; without
    the operator jar and with a Python for its workers that has no cdc-monitor (the client ships both
    as session artifacts). Yields its ``sc://`` URL; stopped by PID."""
    from tests.support.connect_server import ConnectServer
    from tests.support.spark_cluster import worker_environment

    root = tmp_path_factory.mktemp("connect-server")
    server = ConnectServer(root, worker_environment(root / "worker-env"))
    yield server.url
    server.stop()
