"""Pure logic, no Spark: Kafka's partitioner and the layered configuration."""

import pytest

from cdc_monitor.config import ScanConfig, load_config, parse_duration_ms
from cdc_monitor.errors import UsageError
from cdc_monitor.generator.partitioner import murmur2, partition_for


def test_murmur2_matches_kafkas_test_vectors():
    # org.apache.kafka.common.utils.UtilsTest#testMurmur2
    assert murmur2(b"21") == -973932308
    assert murmur2(b"foobar") == -790332482
    assert murmur2(b"a-little-bit-long-string") == -985981536
    assert murmur2(b"a-little-bit-longer-string") == -1486304829
    assert murmur2(b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8") == -58897971
    assert murmur2(b"abc") == 479470107


def test_partition_for_is_stable_and_in_range():
    keys = [f'{{"id":{i}}}'.encode() for i in range(200)]
    parts = [partition_for(k, 3) for k in keys]
    assert parts == [partition_for(k, 3) for k in keys]
    assert set(parts) == {0, 1, 2}


@pytest.mark.parametrize(("text", "ms"), [("15m", 900_000), ("250ms", 250), ("2", 2000), ("1.5s", 1500), ("1h", 3_600_000)])
def test_durations(text, ms):
    assert parse_duration_ms(text) == ms


def test_bad_duration_says_how_to_fix():
    with pytest.raises(UsageError, match="use a number with ms, s, m, h or d"):
        parse_duration_ms("soon")


def test_config_layers_file_then_env(tmp_path):
    cfg_file = tmp_path / "cdc.toml"
    cfg_file.write_text('[scan]\nlag_threshold = "2m"\nfail_on = "warning"\n\n[tables."inventory.orders"]\nlag_threshold = "5s"\n')
    cfg = load_config(str(cfg_file), env={})
    assert (cfg.lag_threshold_ms, cfg.fail_on) == (120_000, "warning")
    assert cfg.table_lag_threshold_ms == {"inventory.orders": 5000}
    cfg = load_config(str(cfg_file), env={"CDC_MONITOR_FAIL_ON": "never", "CDC_MONITOR_LAG_THRESHOLD": "30s"})
    assert (cfg.lag_threshold_ms, cfg.fail_on) == (30_000, "never")
    assert cfg.with_overrides(fail_on="error").fail_on == "error"


def test_config_errors_name_the_problem(tmp_path):
    with pytest.raises(UsageError, match="does not exist"):
        load_config(str(tmp_path / "missing.toml"), env={})
    bad = tmp_path / "bad.toml"
    bad.write_text("[scan]\nlag_treshold = 3\n")
    with pytest.raises(UsageError, match="unknown setting 'lag_treshold'"):
        load_config(str(bad), env={})
    with pytest.raises(UsageError, match="--fail-on"):
        ScanConfig().with_overrides(fail_on="sometimes")


def test_capture_folder_under_a_hidden_folder_is_read_but_hidden_files_inside_are_not(tmp_path):
    from cdc_monitor.sources.capture import expand_paths

    folder = tmp_path / ".cache" / "captures"
    (folder / ".partial").mkdir(parents=True)
    (folder / "a.jsonl").write_text("")
    (folder / ".tmp.jsonl").write_text("")
    (folder / ".partial" / "b.jsonl").write_text("")
    assert expand_paths([folder]) == [str((folder / "a.jsonl").resolve())]


def test_folder_scans_skip_the_generators_fault_labels(tmp_path):
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.kcat_writer import default_labels_path, write_capture
    from cdc_monitor.sources.capture import expand_paths

    capture = tmp_path / "mysql.jsonl.gz"
    written = write_capture(generate("mysql", events=500, seed=3, faults=True), capture,
                            labels_path=default_labels_path(capture))
    assert written["faults"] > 0 and (tmp_path / "mysql.labels.jsonl").is_file()
    assert expand_paths([tmp_path]) == [str(capture.resolve())]


def test_an_input_with_no_records_is_refused_before_spark(tmp_path):
    import gzip

    from cdc_monitor.errors import InputError
    from cdc_monitor.sources.inputs import KafkaFlags, prepare_input

    (tmp_path / "a.jsonl").write_text("")
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as fh:  # an empty gzip still has a header
        fh.write("")
    with pytest.raises(InputError, match=r"no records read from .*kcat.*--allow-empty"):
        prepare_input((str(tmp_path),), KafkaFlags())
    assert prepare_input((str(tmp_path),), KafkaFlags(), allow_empty=True).paths == (str(tmp_path),)
    (tmp_path / "c.jsonl").write_bytes(b" \r\n\r  \n\n")  # lines of spaces: the reader skips them
    with pytest.raises(InputError, match=r"no records read from .*blank files"):
        prepare_input((str(tmp_path),), KafkaFlags())
    (tmp_path / "d.jsonl").write_bytes(b" " * 70_000 + b"\t\n")  # a tab is a line (an unreadable one): Spark's
    assert prepare_input((str(tmp_path),), KafkaFlags()).paths == (str(tmp_path),)


def test_fail_on_counts_findings_at_or_above_the_severity():
    from cdc_monitor.pipeline import ScanResult

    result = ScanResult(window={}, summary={}, events_by_table=[],
                        findings_by_rule={"error": {"invalid_json": 2}, "warning": {"lag_spike": 3}, "info": {"x": 4}})
    assert [result.worst_count(f) for f in ("error", "warning", "never")] == [2, 5, 0]


def test_watch_max_keys_from_the_config_file(tmp_path):
    cfg_file = tmp_path / "c.toml"
    cfg_file.write_text("[watch]\nmax_keys = 250000\n")
    assert load_config(str(cfg_file), env={}).watch_max_keys == 250000
    assert load_config(None, env={}).watch_max_keys is None  # (watch/carry.py's MAX_KEYS)
    cfg_file.write_text("[watch]\nmax_keys = -1\n")
    with pytest.raises(UsageError, match=r"\[watch\] max_keys must be a whole number"):
        load_config(str(cfg_file), env={})
    cfg_file.write_text("[watch]\nmax_key = 5\n")
    with pytest.raises(UsageError, match=r"unknown \[watch\] setting"):
        load_config(str(cfg_file), env={})
