"""Dataset namespaces and names as OpenLineage's naming spec gives them
(https://openlineage.io/docs/spec/naming), so a catalog joins cdc-monitor's datasets with those
other producers emit for the same topics and tables (Debezium's own lineage among them):

- a Kafka topic: namespace ``kafka://{bootstrap server host}:{port}``, name ``{topic}``, the first
  of the bootstrap servers (as Debezium names it);
- a topic read from capture files (kcat captures carry no broker): the ``capture_namespace``
  setting when given (the broker it came from, to join that lineage), else ``file://`` and the
  capture's absolute path (the common folder of several files);
- a PostgreSQL table: namespace ``postgres://{host}:{port}``, name ``{database}.{schema}.{table}``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

KAFKA_DEFAULT_PORT = 9092
# reconcile's dialect -> (the naming spec's scheme, its default port)
JDBC_SCHEMES = {"postgresql": ("postgres", 5432)}


def _host_port(text: str, default_port: int) -> tuple[str, int]:
    """``host[:port]`` or ``[v6]:port``."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        port = rest.removeprefix(":")
        return f"[{host}]", int(port) if port.isdigit() else default_port
    host, sep, port = text.rpartition(":")
    if not sep or not port.isdigit():
        return text, default_port
    return host, int(port)


def kafka_namespace(bootstrap_servers: str) -> str:
    """``kafka://host:port`` of the first bootstrap server (a listener prefix such as
    ``SASL_SSL://`` dropped, Kafka's default port when none is given)."""
    first = bootstrap_servers.split(",")[0].strip()
    first = first.split("://", 1)[1] if "://" in first else first
    host, port = _host_port(first.rstrip("/"), KAFKA_DEFAULT_PORT)
    return f"kafka://{host}:{port}"


def capture_namespace(files: Sequence[str]) -> str:
    """``file://`` and the capture's absolute path: the file, or the common folder of several."""
    local = [f for f in files if "://" not in f]
    if not local:  # captures Spark reads from a URL (s3a://bucket/...): the file, or the common folder
        scheme = files[0].partition("://")[0]
        return f"{scheme}://{os.path.commonpath([f.partition('://')[2] for f in files])}"
    absolute = [str(Path(f).expanduser().resolve()) for f in local]
    return Path(os.path.commonpath(absolute)).as_uri()


def topic_namespace(inputs: Mapping[str, Any], capture_override: str | None = None) -> str:
    """The namespace of the topics a run read, from its inputs as the report describes them."""
    if inputs.get("kind") == "kafka" and inputs.get("bootstrap_servers"):
        return kafka_namespace(str(inputs["bootstrap_servers"]))
    if capture_override:
        return capture_override
    return capture_namespace([str(f) for f in inputs.get("files") or []] or ["."])


def jdbc_dataset(url: str, dialect: str, table: str) -> tuple[str, str]:
    """(namespace, name) of a source table (``schema.table``) behind a JDBC URL such as
    ``jdbc:postgresql://host:5432/inventory?ssl=true``."""
    scheme, default_port = JDBC_SCHEMES.get(dialect, (dialect, 0))
    rest = url.split("//", 1)[1] if "//" in url else url.split(":", 2)[-1]
    authority, _, path = rest.partition("/")
    host, port = _host_port(authority.split(",")[0].split("@")[-1], default_port)
    database = path.split("?", 1)[0].split(";", 1)[0]
    return f"{scheme}://{host}:{port}", f"{database}.{table}"
