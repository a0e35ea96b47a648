"""Where the Spark Connect server comes from (--remote, SPARK_REMOTE, [spark] remote) and the fix-it
errors before any Spark: a bad URL, a server that does not answer, watch over Connect."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from cdc_monitor.cli.layered_config import scan_config
from cdc_monitor.cli.main import cli
from cdc_monitor.config import load_config
from cdc_monitor.errors import UsageError
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
