"""Structural cost of a scan: the number of Spark jobs it runs, counted by the status tracker
and reported in the JSON report's ``timings_seconds.spark_jobs``. Not a timing: the count is
the same on any machine. A scan runs 3: the decoded events checkpointed (the decoder judges each
record's own rules in that pass), the window census, one collect of everything else; one more when a
capture has unreadable lines, and one more when a small window was read in several partitions (held
again in one). Whatever the input, never more than 12."""

from __future__ import annotations

from cdc_monitor.checks import suite
from cdc_monitor.generator import generate
from cdc_monitor.generator.kcat_writer import write_capture

BUDGET = 12


def test_a_scan_runs_at_most_12_spark_jobs(tmp_path, scan):
    clean, faulty = tmp_path / "clean.jsonl", tmp_path / "faulty.jsonl"
    write_capture(generate("mysql", events=120, seed=5), clean)
    write_capture(generate("sqlserver", events=120, seed=5, faults=True), faulty)
    with faulty.open("a") as fh:  # and an unreadable capture line: the most a scan does
        fh.write("not a kcat record\n")
    # (spread over partitions: whether a small window read in several is held again in one, a job more,
    # depends on how Spark splits the file; the next test counts that job exactly)
    results = [scan([path], one_partition_rows=0) for path in (clean, faulty)]
    assert results[1].summary["unreadable_lines"] == 1 and results[1].findings
    jobs = [r.timings["spark_jobs"] for r in results]
    assert jobs == [3, 4] and all(n <= BUDGET for n in jobs), jobs


def _refuse(*args, **kwargs):
    raise AssertionError("a check was planned whose input the window lacks")


def _report(result) -> dict:
    from cdc_monitor.pipeline import RUN_FIELDS

    return {k: v for k, v in result.to_json_dict().items() if k not in RUN_FIELDS}


def test_checks_whose_input_the_window_lacks_are_not_run_and_change_nothing(tmp_path, scan, monkeypatch):
    """No transaction metadata (Debezium's default) and JSON values without schemas: the window's
    census says there is no transaction, embedded schema, schema change or PostgreSQL sequence to judge, so
    those checks are not planned and the report is the one every check run gives."""
    from cdc_monitor.engine.facts import WindowFacts

    path = tmp_path / "bare.jsonl"
    write_capture(generate("mysql", events=150, seed=4, faults=True, schemas=False, transaction_metadata=False), path)
    from cdc_monitor.checks.table_pass import TableRules

    def table_rules(*args, **kwargs):  # the table pass judges schema changes only where the window holds them
        rules = TableRules(*args, **kwargs)
        if rules.ddl_servers is not None:
            _refuse()
        return rules

    with monkeypatch.context() as patched:  # planning one of them fails the scan
        for check in ("transaction_check", "sequence_sql"):  # (MySQL: no PostgreSQL sequences)
            patched.setattr(suite, check, _refuse)
        patched.setattr(suite, "TableRules", table_rules)
        pruned = scan([path])
    assert pruned.findings and pruned.transactions["total"] == 0
    for name in ("has_transactions", "has_schema_changes", "has_snapshot_events", "has_verdicts", "has_topic_flags",
                 "has_sequences"):
        monkeypatch.setattr(WindowFacts, name, property(lambda self: True))
    everything = scan([path])
    assert _report(pruned) == _report(everything)
    assert pruned.timings["spark_jobs"] == everything.timings["spark_jobs"]


def test_a_small_window_is_checked_without_shuffles_and_reports_what_partitions_report(tmp_path, scan):
    """A window of at most ``one_partition_rows`` records is held in one partition: every join,
    window and aggregate of its checks runs without a shuffle, so each of its jobs is one stage
    (a spread window's findings job alone has a dozen). Faulty traffic of four flavours with
    transactions and schemas (every check planned) reports the same either way."""
    paths = []
    for flavour in ("mysql", "postgresql", "sqlserver", "mongodb"):
        paths.append(tmp_path / f"{flavour}.jsonl")
        write_capture(generate(flavour, events=150, seed=7, faults=True), paths[-1])
    one = scan(paths)
    spread = scan(paths, one_partition_rows=0)
    assert one.findings and one.transactions["total"] > 0
    # (four files are read in four partitions: the small window is held again in one, a job more)
    assert one.timings["spark_stages"] == one.timings["spark_jobs"] == spread.timings["spark_jobs"] + 1
    assert spread.timings["spark_stages"] > spread.timings["spark_jobs"] + 10
    assert _report(one) == _report(spread)
