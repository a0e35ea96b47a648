"""``reconcile``'s connection settings fail before Spark starts, in one line, exit 2."""

from __future__ import annotations

import socket

import pytest
from click.testing import CliRunner

from cdc_monitor.cli.main import cli
from cdc_monitor.errors import EXIT_CANNOT_RUN
from cdc_monitor.reconcile.connection import jdbc_settings
from cdc_monitor.reconcile.dialects import POSTGRESQL, ColumnKind, SourceColumn


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def jar(tmp_path):
    path = tmp_path / "postgresql.jar"
    path.write_bytes(b"PK")
    return path


def run(*args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(cli, ["reconcile", *args], env=env)


@pytest.mark.parametrize(("args", "message"), [
    (["--jdbc-url", "jdbc:postgresql://h/db?password=x"], "--jdbc-url carries a password"),
    (["--jdbc-url", "jdbc:sqlite:/tmp/x"], "no dialect for this database"),
    (["--jdbc-url", "jdbc:postgresql://h/db", "--jdbc-jar", "/nonexistent.jar"], "--jdbc-jar /nonexistent.jar: no such file"),
    (["--jdbc-url", "jdbc:postgresql://h/db", "--jdbc-password-file", "/nonexistent"], "--jdbc-password-file /nonexistent"),
])
def test_bad_settings_are_one_line_exit_2(args, message, jar):
    extra = [] if "--jdbc-jar" in args else ["--jdbc-jar", str(jar)]
    result = run("x.jsonl", *args, *extra)
    assert result.exit_code == EXIT_CANNOT_RUN, result.output
    assert message in result.output and len(result.output.strip().splitlines()) == 1


def test_an_unreachable_database_fails_before_spark(jar, tmp_path):
    capture = tmp_path / "c.jsonl"
    capture.write_text("{}\n")
    port = closed_port()
    result = run(str(capture), "--jdbc-url", f"jdbc:postgresql://127.0.0.1:{port}/db", "--jdbc-jar", str(jar))
    assert result.exit_code == EXIT_CANNOT_RUN
    assert f"cannot reach the postgresql database at 127.0.0.1:{port}" in result.output
    assert "starting Spark" not in result.output


def test_credentials_come_from_the_environment_and_never_show(jar, monkeypatch):
    monkeypatch.setenv("CDC_MONITOR_JDBC_USER", "ro")
    monkeypatch.setenv("CDC_MONITOR_JDBC_PASSWORD", "hunter2")
    settings = jdbc_settings("jdbc:postgresql://db:6543/shop?ssl=true", jar=str(jar))
    assert settings.properties()["user"] == "ro" and settings.properties()["password"] == "hunter2"
    assert settings.properties()["readOnly"] == "true"
    assert settings.host_port() == ("db", 6543) and settings.shown_url == "jdbc:postgresql://db:6543/shop"
    assert "hunter2" not in repr(settings)


def test_the_dialect_turns_each_kind_into_text_sql():
    assert POSTGRESQL.kind("timestamp with time zone") is ColumnKind.TIMESTAMPTZ
    assert POSTGRESQL.kind("USER-DEFINED") is ColumnKind.TEXT  # enums compare as their label
    assert POSTGRESQL.column_text(SourceColumn('we"ird', ColumnKind.ARRAY)) == 'to_json("we""ird")::text'
    assert "o''brien" in POSTGRESQL.catalogue_query([("public", "o'brien")])
