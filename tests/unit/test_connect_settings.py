"""Where the Spark Connect server comes from (--remote, SPARK_REMOTE, [spark] remote) and the fix-it
errors before any Spark: a bad URL, a server that does not answer, watch over Connect."""

from __future__ import annotations

import re
import socket
import threading
import time
from contextlib import contextmanager

import pytest
from click.testing import CliRunner

from cdc_monitor.cli.layered_config import scan_config
from cdc_monitor.cli.main import cli
from cdc_monitor.config import load_config
from cdc_monitor.errors import EnvironmentProblem, UsageError
from cdc_monitor.runtime.connect import probe
from tests.support.broker import free_port


@pytest.fixture(autouse=True)
def no_remote_env(monkeypatch):
    monkeypatch.delenv("SPARK_REMOTE", raising=False)


def test_config_file_remote_is_not_a_spark_setting(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text('[spark]\nremote = "sc://spark:15002"\n"spark.sql.shuffle.partitions" = "4"\n')
    cfg = load_config(str(path), env={})
    assert cfg.spark_remote == "sc://spark:15002"
    assert cfg.spark_conf == {"spark.sql.shuffle.partitions": "4"}


def test_layers_environment_beats_file_and_flags_beat_both(tmp_path, monkeypatch):
    path = tmp_path / "c.toml"
    path.write_text('[spark]\nremote = "sc://file:15002"\n')
    assert load_config(str(path), env={"SPARK_REMOTE": "sc://env:1"}).spark_remote == "sc://env:1"
    monkeypatch.setenv("SPARK_REMOTE", "sc://env:1")
    assert scan_config(str(path), None, remote="sc://flag:2").spark_remote == "sc://flag:2"
    flagged = scan_config(str(path), None, spark_master="local[1]")
    assert (flagged.spark_remote, flagged.spark_master) == (None, "local[1]")
    with pytest.raises(UsageError, match="not both"):
        scan_config(None, None, spark_master="local[1]", remote="sc://x:1")


@pytest.mark.parametrize("url", ["http://spark:15002", "sc://", "spark:15002", "sc://host:99999"])
def test_a_bad_url_is_a_usage_error(url, tmp_path):
    capture = tmp_path / "c.jsonl"
    capture.write_text('{"topic": "t", "partition": 0, "offset": 0, "payload": null}\n')
    result = CliRunner().invoke(cli, ["scan", str(capture), "--remote", url])
    assert result.exit_code == 2
    assert result.output.strip().splitlines() == [
        f"cdc-monitor: error: --remote {url!r} is not a Spark Connect URL: use sc://HOST:PORT (e.g. sc://spark:15002)"]


def test_a_server_that_does_not_answer_is_exit_2_in_one_line(tmp_path):
    capture = tmp_path / "c.jsonl"
    capture.write_text('{"topic": "t", "partition": 0, "offset": 0, "payload": null}\n')
    port = free_port()
    result = CliRunner().invoke(cli, ["scan", str(capture), "--quiet", "--remote", f"sc://127.0.0.1:{port}"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and f"no Spark Connect server answers at 127.0.0.1:{port}" in lines[0]
    assert "start-connect-server.sh" in lines[0]


@pytest.mark.parametrize("how", ["flag", "env"])
def test_watch_refuses_connect_in_one_line(how, monkeypatch):
    args = ["watch", "--bootstrap-servers", "127.0.0.1:9"]
    if how == "flag":
        args += ["--remote", "sc://127.0.0.1:15002"]
    else:
        monkeypatch.setenv("SPARK_REMOTE", "sc://127.0.0.1:15002")
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert "watch needs a classic Spark session (--spark-master" in lines[0]
    assert "operator jar's JVM operator through the driver's JVM" in lines[0]


@contextmanager
def _loopback(answer: bytes | None):
    """A loopback TCP server that answers each connection with ``answer`` (None: says nothing), by
    thread, stopped on exit."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        server.settimeout(0.1)
        held = []
        while not stop.is_set():
            try:
                conn, _ = server.accept()
            except TimeoutError:
                continue
            held.append(conn)
            if answer is not None:
                conn.recv(1024)
                conn.sendall(answer)
        for conn in held:
            conn.close()

    thread = threading.Thread(target=serve)
    thread.start()
    try:
        yield server.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        server.close()


@pytest.mark.parametrize(("answer", "said"), [
    (b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", "it answered b'HTTP/1.1 '"),  # a web server, the Spark UI
    (None, "it said nothing"),  # a service that waits for its own protocol's first word
])
def test_a_port_that_is_not_spark_connect_is_exit_2_in_one_line_within_the_probe(answer, said, tmp_path):
    """Without the HTTP/2 greeting, the Connect client retried against such a port for minutes."""
    capture = tmp_path / "c.jsonl"
    capture.write_text('{"topic": "t", "partition": 0, "offset": 0, "payload": null}\n')
    with _loopback(answer) as port:
        started = time.monotonic()
        with pytest.raises(EnvironmentProblem, match=f"not a Spark Connect server \\({re.escape(said)}"):
            probe(f"sc://127.0.0.1:{port}", timeout_s=1.0)
        assert time.monotonic() - started < 5
        if answer is not None:
            result = CliRunner().invoke(cli, ["scan", str(capture), "--quiet", "--remote", f"sc://127.0.0.1:{port}"])
            assert result.exit_code == 2
            lines = result.output.strip().splitlines()
            assert len(lines) == 1 and f"the server at 127.0.0.1:{port} accepted the connection" in lines[0]
            assert "fix the port in --remote" in lines[0]
