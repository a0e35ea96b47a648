"""Spark Connect sessions (``--remote sc://HOST:PORT``): a thin client of a Spark that runs elsewhere.

No JVM starts in this process. What a classic session does through its ``SparkContext`` is done
through Connect's own API, or skipped and said so in the report:

- the operator jar (the decoder's and the checks' Java UDFs) reaches the server as a session
  artifact (``addArtifacts``), only when the server cannot load the UDF class already: the
  registration is tried first (one round trip), so a server started with the jar on its classpath
  pays nothing, and one without needs no setting to say so;
- this package reaches the server's Python workers (the Kafka reader, Avro decoding) as a
  ``pyfile`` artifact, as ``addPyFile`` ships it to a cluster's executors;
- other jars of ``spark.jars`` (reconcile's JDBC driver) are session artifacts too;
- Spark's settings of the run are session settings; a setting only the server's start can make
  (a static one) is a fix-it error naming it;
- the Spark job and stage counts (``timings_seconds.spark_jobs``/``spark_stages``) need the
  driver's status tracker: not counted, and the report's ``session`` says so (``SKIPPED``).

``watch`` stays classic: its keyed state runs in the operator jar's JVM operator through the
driver's JVM, which a Connect client has not.
"""

from __future__ import annotations

import os
import re
import socket
from collections.abc import Mapping
from typing import TYPE_CHECKING

from cdc_monitor.errors import EnvironmentProblem, UsageError
from cdc_monitor.runtime.jvm import JAR_FOLDER, class_missing, jar_spark_minor, package_zip

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.types import DataType

REMOTE_ENV = "SPARK_REMOTE"
DEFAULT_PORT = 15002
_URL = re.compile(r"^sc://(?P<host>\[[0-9a-fA-F:.]+\]|[^:/;\[\]]+)(?::(?P<port>\d{1,5}))?/?(?P<params>;.*)?$")
PROBE_TIMEOUT_S = 5.0
# what a report over Connect lacks, and why (the JSON report's session.skipped; the text report's line)
SKIPPED = {"spark_jobs": "Spark job and stage counts need the driver's status tracker, which a Spark Connect client has not"}
WATCH_REFUSED = ("watch needs a classic Spark session (--spark-master, default local[*]), not Spark Connect: its keyed state "
                 "runs in the operator jar's JVM operator through the driver's JVM, which a Connect client has not; "
                 "drop --remote (and unset SPARK_REMOTE, [spark] remote)")


def check_remote(url: str, what: str = "--remote") -> str:
    """``url`` if it is a Spark Connect URL (``sc://HOST[:PORT][/;param=value...]``), else a fix-it error."""
    text = url.strip()
    m = _URL.match(text)
    if not m or (m.group("port") and not 0 < int(m.group("port")) < 65536):
        raise UsageError(f"{what} {url!r} is not a Spark Connect URL: use sc://HOST:PORT (e.g. sc://spark:{DEFAULT_PORT})")
    return text


def host_port(url: str) -> tuple[str, int]:
    m = _URL.match(url)
    assert m is not None, url
    return m.group("host").strip("[]"), int(m.group("port") or DEFAULT_PORT)


# HTTP/2's client connection preface and an empty SETTINGS frame (RFC 9113, 3.4): a gRPC server
# answers with its own SETTINGS frame (9-byte header: length, type 0x4, flags, stream 0)
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
_H2_SETTINGS = 0x4


def probe(url: str, timeout_s: float = PROBE_TIMEOUT_S) -> None:
    """Exit 2 in seconds, where the Connect client would retry for minutes: a server that does not
    accept connections, or one that does but does not speak gRPC's HTTP/2 (another service on the
    port: a Kafka broker, a web server, the Spark UI). A TLS URL (``use_ssl=true``) is only connected to."""
    host, port = host_port(url)
    try:
        conn = socket.create_connection((host, port), timeout=timeout_s)
    except OSError as err:
        raise EnvironmentProblem(
            f"no Spark Connect server answers at {host}:{port} ({err.strerror or err}): start one "
            "(sbin/start-connect-server.sh of the pip package, docs/deploy.md) or fix --remote / SPARK_REMOTE") from None
    with conn:
        if re.search(r";use_ssl=true(;|$)", url, re.IGNORECASE):
            return
        head = _first_bytes(conn, _H2_PREFACE, 9)
    if len(head) < 9 or head[3] != _H2_SETTINGS:
        said = "said nothing" if not head else f"answered {head[:9]!r}"
        raise EnvironmentProblem(
            f"the server at {host}:{port} accepted the connection but is not a Spark Connect server (it {said} "
            f"to gRPC's HTTP/2 greeting within {timeout_s:g} s): fix the port in --remote / SPARK_REMOTE (Spark "
            f"Connect listens on {DEFAULT_PORT} unless spark.connect.grpc.binding.port says otherwise)")


def _first_bytes(conn: socket.socket, send: bytes, n: int) -> bytes:
    """What the peer answers ``send`` with, up to ``n`` bytes (fewer: it closed, reset or went quiet)."""
    head = b""
    try:
        conn.sendall(send)
        while len(head) < n:
            got = conn.recv(n - len(head))
            if not got:
                break
            head += got
    except OSError:  # (a timeout, or a reset: not an HTTP/2 server either way)
        pass
    return head


def connect_session(url: str, settings: Mapping[str, str], own: Mapping[str, str]) -> SparkSession:
    """A Connect session at ``url`` with ``settings`` (cdc-monitor's defaults, which the server may
    keep for itself) and ``own`` (the user's [spark] table, which must apply), this package shipped
    to its Python workers and ``spark.jars`` as artifacts."""
    probe(url)
    os.environ.setdefault("PYARROW_IGNORE_TIMEZONE", "1")
    os.environ.pop(REMOTE_ENV, None)  # (the builder's remote() is the one: pyspark refuses both)
    from pyspark.sql import SparkSession

    jars = [j for v in (settings.get("spark.jars"), own.get("spark.jars")) if v for j in v.split(",") if j]
    builder = SparkSession.builder.remote(url)
    for key, value in settings.items():  # (one round trip; a setting the server keeps for itself is skipped)
        if key != "spark.jars":
            builder = builder.config(key, value)
    spark = builder.getOrCreate()
    for key, value in own.items():
        if key == "spark.jars":
            continue
        try:
            spark.conf.set(key, value)
        except Exception as exc:  # a static setting, or one the server refuses
            first = (str(exc).strip().splitlines() or [""])[0][:200]
            raise UsageError(f"[spark] {key!r} cannot be set from a Spark Connect client ({first}): set it where "
                             "the Connect server starts (--conf of start-connect-server.sh)") from None
    spark.addArtifacts(str(package_zip()), pyfile=True)
    if jars:
        spark.addArtifacts(*jars)
    return spark


_SHIPPED: set[str] = set()  # sessions the operator jar was added to


def ship_operator_jar(spark: SparkSession) -> bool:
    """Add the operator jar for the server's Spark minor to the session (False: it was already, or
    this cdc-monitor has none for that minor)."""
    session_id = str(getattr(spark, "session_id", id(spark)))
    minor = ".".join(spark.version.split(".")[:2])
    jar = JAR_FOLDER / f"cdc-monitor-operators-spark{minor}.jar"
    if session_id in _SHIPPED or not jar.is_file() or jar_spark_minor(jar) != minor:
        return False
    spark.addArtifacts(str(jar))
    _SHIPPED.add(session_id)
    return True


def register_on_server(spark: SparkSession, name: str, java_class: str, returns: DataType | str, what: str) -> None:
    """A UDF of the operator jar registered in a Connect ``spark`` as ``name`` (idempotent): a server
    that cannot load its class is sent the operator jar as the session's artifact and asked again;
    one whose Spark minor this cdc-monitor has no jar for is a fix-it error naming ``what`` needs it."""
    try:
        spark.udf.registerJavaFunction(name, java_class, returns)
    except Exception as exc:  # the class is not on the server's classpath
        if not class_missing(exc):
            raise
        if ship_operator_jar(spark):
            register_on_server(spark, name, java_class, returns, what)
            return
        raise EnvironmentProblem(
            f"{what} ({java_class}) cannot be loaded by the Spark Connect server (Spark {spark.version}), and this "
            f"cdc-monitor has no operator jar for that Spark minor (it has "
            f"{', '.join(sorted(p.name for p in JAR_FOLDER.glob('cdc-monitor-operators-spark*.jar'))) or 'none'}): "
            "run a server of a Spark this cdc-monitor supports (see its README)") from None
