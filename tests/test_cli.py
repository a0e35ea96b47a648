"""The command line as a user runs it: exit codes, one-line errors, JSON on stdout."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from cdc_monitor.generator import generate
from cdc_monitor.generator.kcat_writer import write_capture
from cdc_monitor.runtime import jvm


def run(*args: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "cdc_monitor", *args], capture_output=True, text=True, timeout=timeout)


def test_missing_path_exits_2_with_one_line(tmp_path):
    proc = run("scan", str(tmp_path / "nope.jsonl"))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "does not exist" in lines[0] and "check the path" in lines[0]


@pytest.mark.parametrize("args", [["scan", "--fail-on", "sometimes", "x"], ["scan", "--no-such-flag"],
                                  ["scan"], ["generate", "--output", "x.jsonl", "--faults", "--events", "10"]])
def test_bad_arguments_exit_2(args, tmp_path):
    proc = run(*args)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip()


@pytest.mark.parametrize("content", ["", " \r\n\n"])  # what kcat writes when it captured nothing; blank lines
def test_empty_capture_exits_2_unless_allowed(tmp_path, content):
    capture = tmp_path / "empty.jsonl"
    capture.write_bytes(content.encode())
    proc = run("scan", str(capture))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "no records read from" in lines[0] and "--allow-empty" in lines[0]
    assert "starting Spark" not in proc.stderr  # refused before Spark starts
    # --allow-empty lets it through to Spark (here a master that cannot start, to stop right there;
    # an allowed empty input's scan is tests/test_cli.py::test_blank_lines_are_no_records_after_the_scan)
    proc = run("scan", str(capture), "--allow-empty", "--spark-master", "nowhere://x")
    assert proc.returncode == 2 and "starting Spark" in proc.stderr and "no records" not in proc.stderr


def test_blank_lines_are_no_records_after_the_scan(scan, tmp_path):
    from cdc_monitor.errors import InputError
    from cdc_monitor.verbs.scan import require_records

    capture = tmp_path / "blank.jsonl"
    capture.write_text("\n \n")  # no records (refused before Spark by the CLI; a URL's, only the scan tells)
    result = scan([capture])
    with pytest.raises(InputError, match=r"no records read from .*blank\.jsonl"):
        require_records(result, False, (str(capture),))
    require_records(result, True, (str(capture),))
    (tmp_path / "junk.jsonl").write_text("not a record\n")  # unreadable lines are findings, not emptiness
    require_records(scan([tmp_path / "junk.jsonl"]), False, (str(tmp_path / "junk.jsonl"),))


def test_bad_config_exits_2(tmp_path):
    cfg = tmp_path / "c.toml"
    cfg.write_text("not toml [")
    capture = tmp_path / "c.jsonl"
    capture.write_text("")
    proc = run("scan", str(capture), "--config", str(cfg))
    assert proc.returncode == 2 and "not valid TOML" in proc.stderr


@pytest.fixture(scope="module")
def captures(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli")
    write_capture(generate("postgresql", events=80, seed=5), root / "clean.jsonl")
    # large enough that a step of its scan lasts a few seconds (the live line shows after one)
    write_capture(generate("mysql", events=3000, seed=5, faults=True), root / "faulty.jsonl.gz")
    return root


def class_archive() -> Path:
    """The JVM class archive ``cdc-monitor warm-up`` writes (scripts/test.sh runs it before the
    suite; a bare pytest run writes it here)."""
    archive = jvm.archive_path()
    if not archive.is_file():
        proc = run("warm-up", timeout=600)
        assert proc.returncode == 0 and str(archive) in proc.stderr, proc.stderr[-2000:]
    assert archive.is_file() and archive.stat().st_size > 10_000_000
    assert not list(archive.parent.glob(f"{archive.stem}*.part"))  # no half-written archive left behind
    return archive


@pytest.fixture(scope="module")
def faulty_scan(captures, tmp_path_factory):
    """``cdc-monitor scan`` of the faulty capture as CI runs it (stdout and stderr pipes): its
    arguments, files, process id, exit code, stdout and stderr."""
    class_archive()
    tmp_path = tmp_path_factory.mktemp("faulty-scan")
    loaded, config = tmp_path / "classes.log", tmp_path / "c.toml"  # which classes came from where
    config.write_text(f'[spark]\n"spark.driver.extraJavaOptions" = "-Xlog:class+load=info:file={loaded}"\n')
    report_file, textfile = tmp_path / "r.json", tmp_path / "new" / "folder" / "cdc.prom"
    args = ["scan", str(captures / "faulty.jsonl.gz"), "--output", "json", "--config", str(config),
            "--report-file", str(report_file), "--textfile", str(textfile)]
    popen = subprocess.Popen([sys.executable, "-m", "cdc_monitor", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
    out, err = popen.communicate(timeout=300)
    report, metrics, classes = report_file.read_text(), textfile.read_text(), loaded.read_text()
    return SimpleNamespace(args=args, pid=popen.pid, returncode=popen.returncode, out=out, err=err, report=report,
                           metrics=metrics, classes=classes)


@pytest.mark.xdist_group("cli-faulty-scan")  # (one worker: the scan the module's fixture runs, once)
def test_scan_faulty_capture_json_report_and_exit_1(faulty_scan):
    """The process as a user's terminal sees it: exit 1, the report in its file, stderr only
    cdc-monitor's own lines (the JVM's and log4j's banners kept in the driver log), classes from
    the archive warm-up wrote."""
    out, err = faulty_scan.out, faulty_scan.err
    assert faulty_scan.returncode == 1, err[-2000:]
    assert out == ""  # the report is in its file
    lines = err.splitlines()
    assert lines and all(line.startswith("cdc-monitor: ") for line in lines), err  # no JVM or log4j line
    assert "scanned in" in lines[-1]
    from cdc_monitor.runtime.session import jvm_log_dir

    (own,) = jvm_log_dir().glob(f"driver-*-{faulty_scan.pid}.log")  # this run's (other workers write theirs)
    assert "log4j" in own.read_text(errors="replace")  # kept, not lost
    assert "cdc_window_findings" in faulty_scan.metrics  # its folders created, as for --report-file
    classes = faulty_scan.classes.splitlines()
    shared = sum("shared objects file (top)" in line for line in classes)  # from the archive warm-up wrote
    from_jars = sum("source: jar:" in line or "source: file:" in line for line in classes)
    assert shared > 5000 and shared > 10 * from_jars, (shared, from_jars)
    report = json.loads(faulty_scan.report)
    assert report["tool"] == "cdc-monitor"
    for key in ("version", "window", "summary", "lag", "transactions", "findings"):
        assert key in report
    summary = report["summary"]
    for key in ("records", "data_events", "tombstones", "transaction_markers", "invalid_records", "findings_by_check"):
        assert key in summary
    assert set(summary["findings_by_check"]) == {"decode", "lag", "transactions", "schema", "ordering"}
    assert all(v > 0 for v in summary["findings_by_check"].values())
    finding = report["findings"][0]
    assert set(finding) >= {"check", "rule", "severity", "topic", "partition", "offset", "offsets", "key", "txn_id", "message"}
    lag = report["lag"][0]
    assert set(lag) >= {"topic", "table", "count", "p50_ms", "p95_ms", "p99_ms", "max_ms", "negative", "invalid_source_ts",
                        "snapshot_excluded", "histogram"}
    assert lag["histogram"]["+Inf"] == lag["count"]


def on_a_terminal(args: list[str], timeout: int = 300) -> tuple[int, str, str]:
    """``cdc-monitor ARGS`` with its stderr on a pseudo-terminal and its stdout a pipe (as
    ``cdc-monitor scan ... > report.json`` in a terminal): exit code, stdout, what the terminal got."""
    import fcntl
    import pty
    import struct
    import termios

    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))  # rows, columns
    proc = subprocess.Popen([sys.executable, "-m", "cdc_monitor", *args], stdout=subprocess.PIPE, stderr=slave,
                            env={**os.environ, "TERM": "xterm-256color"}, text=True)
    os.close(slave)
    got = bytearray()

    def drain() -> None:  # the terminal read as it is written (a full pty would block the process)
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the process and its terminal are gone
                return
            if not chunk:
                return
            got.extend(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        out, _ = proc.communicate(timeout=timeout)
    finally:
        proc.kill()
        reader.join(timeout=10)
        os.close(master)
    return proc.returncode, out, got.decode("utf-8", errors="replace")


def screen_lines(terminal: str) -> list[str]:
    """What was written between carriage returns and newlines, control sequences dropped."""
    return [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", part) for line in terminal.split("\n") for part in line.split("\r")]


def step_lines(lines: list[str]) -> set[str]:
    """cdc-monitor's own lines, their seconds aside."""
    return {re.sub(r"\d+\.\d+s\b", "N s", line) for line in lines if line.startswith("cdc-monitor: ")}


@pytest.mark.xdist_group("cli-faulty-scan")
def test_scan_on_a_terminal_shows_the_running_step_and_its_spark_tasks(faulty_scan):
    """The same scan with stderr on a terminal: while a step runs, a live line with its name and
    Spark's tasks done of total (erased as it ends); the step lines are those of the run without
    a terminal, and the report still goes only where it was asked."""
    code, out, terminal = on_a_terminal(faulty_scan.args)
    assert code == faulty_scan.returncode, terminal[-2000:]
    assert out == ""  # nothing on stdout: the report is in its file, the live line on stderr
    lines = screen_lines(terminal)
    steps = ("read decode", "window", "checks plan and aggregates", "findings", "summary")
    live = [line for line in lines if re.search(r"\btasks \d+/\d+ +\d+s$", line.rstrip())]
    assert live, terminal[-3000:]
    assert all(any(f" {step} " in line for step in steps) for line in live), live[:5]
    assert step_lines(lines) == step_lines(faulty_scan.err.splitlines())
    assert "\x1b" not in faulty_scan.err and "tasks" not in faulty_scan.err  # no terminal: no live line
    assert terminal.rstrip().endswith("at or above --fail-on error")  # the last line after it, whole


def test_scan_clean_capture_text_report_exit_0_and_quiet_is_quiet(spark, captures):
    from click.testing import CliRunner

    from cdc_monitor.cli.main import cli

    run = CliRunner().invoke(cli, ["scan", str(captures / "clean.jsonl")])  # in-process, the session's Spark
    assert run.exit_code == 0, run.output
    assert "No findings." in run.stdout and "public.customers" in run.stdout
    assert "scanned in" in run.stderr
    quiet = CliRunner().invoke(cli, ["scan", str(captures / "clean.jsonl"), "--quiet"])
    assert quiet.exit_code == 0 and quiet.stderr == "" and "No findings." in quiet.stdout


@pytest.mark.parametrize("flag,name", [("--textfile", "cdc.prom"), ("--report-file", "r.json")])
def test_unwritable_output_exits_2_before_spark(captures, tmp_path, flag, name):
    (tmp_path / "a-file").write_text("")
    target = tmp_path / "a-file" / "sub" / name  # a folder can never be made under a file
    proc = run("scan", str(captures / "clean.jsonl"), flag, str(target))
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and flag in lines[0] and "writable path" in lines[0], proc.stderr
    assert "starting Spark" not in proc.stderr


@pytest.mark.parametrize("verb", [["scan"], ["gate"], ["watch"], ["generate"], ["warm-up"], ["dashboards", "build"],
                                  ["dashboards", "push"], ["history", "compact"]])
def test_help_shows_two_examples_and_the_exit_codes(verb):
    from click.testing import CliRunner

    from cdc_monitor.cli.main import cli

    proc = CliRunner().invoke(cli, [*verb, "--help"], terminal_width=100)  # the same click command, in-process
    assert proc.exit_code == 0, proc.output
    examples = proc.output.split("Examples:")[1].split("Exit codes:")[0]
    assert sum(f"cdc-monitor {' '.join(verb)}" in line for line in examples.splitlines()) == 2
    codes = proc.output.split("Exit codes:")[1].splitlines()
    assert codes[1].split()[0] == "0" and codes[-1].split()[:4] == ["2", "could", "not", "run:"]


def test_a_pushgateway_that_is_down_fails_the_push_not_the_report(spark, captures, tmp_path):
    """The scan's report and textfile are written; the push's failure is exit 2 with one line that
    also gives the scan's verdict (in-process, the session's Spark)."""
    from click.testing import CliRunner

    from cdc_monitor.cli.main import cli
    from tests.support.broker import free_port

    report, textfile = tmp_path / "r.json", tmp_path / "cdc.prom"
    down = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    run = CliRunner().invoke(cli, ["scan", str(captures / "faulty.jsonl.gz"), "--output", "json", "--report-file", str(report),
                                   "--textfile", str(textfile), "--push-gateway", down])
    assert run.exit_code == 2, run.output
    assert json.loads(report.read_text())["summary"]["records"] > 0
    assert "cdc_window_findings" in textfile.read_text()
    (line,) = [x for x in run.stderr.splitlines() if "error" in x]
    assert f"cannot push to the Pushgateway at {down}" in line and "report was written" in line
    assert "finding(s) at or above --fail-on error" in line and "(0 finding(s)" not in line


@pytest.mark.parametrize("flag,env,config,want", [(None, None, None, None), (None, "/env", "/cfg", "/env"),
                                                   ("/flag", "/env", "/cfg", "/flag"), (None, None, "/cfg", "/cfg")])
def test_watch_takes_its_history_from_the_flag_the_environment_or_the_config(tmp_path, monkeypatch, flag, env, config, want):
    """``watch --history`` as ``scan --history``: the flag over CDC_MONITOR_HISTORY over [history]
    location, with [history]'s other settings (what the verb receives, before anything starts)."""
    from click.testing import CliRunner

    from cdc_monitor.cli.main import cli
    from cdc_monitor.verbs import watch as verb

    got = {}
    monkeypatch.setattr(verb, "run", lambda settings, log=None, live=False: got.setdefault("settings", settings)
                        and verb.Outcome(0, 0, 0))
    monkeypatch.delenv("CDC_MONITOR_HISTORY", raising=False)
    if env:
        monkeypatch.setenv("CDC_MONITOR_HISTORY", env)
    (tmp_path / "c.toml").write_text(f'[history]\n{f"location = {config!r}" if config else ""}\nlateness = "2m"\n')
    args = ["watch", "--bootstrap-servers", "localhost:1", "--config", str(tmp_path / "c.toml"),
            *(["--history", flag] if flag else [])]
    run = CliRunner().invoke(cli, args)
    assert run.exit_code == 0, run.output
    cfg = got["settings"].config
    assert (cfg.history, cfg.history_lateness_ms) == (want, 120_000)
