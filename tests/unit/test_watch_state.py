"""A watch checkpoint keeps the Kafka reader that wrote it: the readers' offsets differ, so another
reader is refused before Spark starts (exit 2 from the CLI)."""

from __future__ import annotations

import pytest

from cdc_monitor.errors import InputError
from cdc_monitor.watch.state import StateStore


def test_a_checkpoint_refuses_another_kafka_reader(tmp_path):
    StateStore.check(tmp_path, "spark")  # a new checkpoint takes either
    StateStore(tmp_path).bind_reader("python")
    StateStore.check(tmp_path, "python")  # the same reader resumes
    with pytest.raises(InputError, match=r"written with --kafka-reader python.*new --checkpoint"):
        StateStore.check(tmp_path, "spark")


def test_the_cli_refuses_it_before_spark_starts(tmp_path):
    from click.testing import CliRunner

    from cdc_monitor.cli.main import cli

    StateStore(tmp_path / "ckpt").bind_reader("python")
    got = CliRunner().invoke(cli, ["watch", "--bootstrap-servers", "127.0.0.1:1", "--checkpoint", str(tmp_path / "ckpt"),
                                   "--kafka-reader", "spark"])
    assert got.exit_code == 2 and "--kafka-reader python" in got.output, got.output
