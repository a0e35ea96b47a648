"""The capture source: exactly the Kafka source's columns; plain, gzip and folders; bad input
counted exactly and never fatal."""

from __future__ import annotations

import gzip
import json

import pytest

from cdc_monitor.errors import InputError
from cdc_monitor.sources import KAFKA_SCHEMA
from cdc_monitor.sources.capture import read_capture
from tests.support.captures import kcat_line, write_lines

GOOD = '{"schema": null, "payload": {"op": "c", "after": {"id": 1}, "source": {"name": "s", "ts_ms": 1700000000000, "file": "mysql-bin.000001", "pos": 4, "connector": "mysql", "db": "d", "table": "t"}, "ts_ms": 1700000000100}}'  # noqa: E501


def test_columns_are_exactly_the_kafka_sources(spark, tmp_path):
    path = write_lines(tmp_path / "c.jsonl", [kcat_line("s.d.t", 0, 0, '{"id":1}', GOOD, 1_700_000_000_200)])
    frame = read_capture(spark, [path]).records
    assert frame.schema == KAFKA_SCHEMA


def test_plain_gzip_and_folder_read_the_same_records(spark, tmp_path):
    lines = [kcat_line("s.d.t", p, o, f'{{"id":{o}}}', GOOD, 1_700_000_000_000 + o,
                       headers=["__debezium.oldkey", '{"id":0}'] if o == 1 else None)
             for p in (0, 1) for o in range(3)]
    plain = write_lines(tmp_path / "a.jsonl", lines[:3])
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as fh:
        fh.write("".join(line + "\n" for line in lines[3:]))
    folder_rows = read_capture(spark, [tmp_path]).records.orderBy("partition", "offset").collect()
    files_rows = read_capture(spark, [plain, tmp_path / "b.jsonl.gz"]).records.orderBy("partition", "offset").collect()
    assert folder_rows == files_rows
    assert [(r.partition, r.offset) for r in folder_rows] == [(p, o) for p in (0, 1) for o in range(3)]
    with_header = folder_rows[1]
    assert [(h.key, bytes(h.value)) for h in with_header.headers] == [("__debezium.oldkey", b'{"id":0}')]
    assert folder_rows[0].headers is None
    assert bytes(folder_rows[0].key) == b'{"id":0}' and folder_rows[0].timestampType == 0
    # a URL (hdfs://, s3a://, file://: what executors of a cluster read) is Spark's to list
    url_rows = read_capture(spark, [tmp_path.as_uri()]).records.orderBy("partition", "offset").collect()
    assert url_rows == folder_rows


def test_missing_url_is_an_input_error_naming_it(spark, tmp_path):
    missing = (tmp_path / "nope").as_uri()
    with pytest.raises(InputError, match=r"capture path not found.*nope.*check the URL"):
        read_capture(spark, [missing])


def test_bad_records_are_counted_exactly_and_kept_visible(scan, tmp_path):
    lines = [
        kcat_line("s.d.t", 0, 0, '{"id":1}', GOOD, 1_700_000_000_200),
        "this is not json at all",                      # garbage line
        '{"topic": "s.d.t", "partition": 0, "offset"',  # truncated line
        "",                                             # empty lines are not records
        "   ",
        '{"hello": "world"}',                           # JSON, but no kcat record
        kcat_line("s.d.t", 0, 1, '{"id":2}', '{"schema": {"type": "str', 1_700_000_000_300),  # truncated value
        kcat_line("s.d.t", 0, 2, '{"id":3}', "\u0000\u00ff\ufffdbinary", 1_700_000_000_400),  # binary value
        kcat_line("s.d.t", 0, 3, '{"id":4}', "", 1_700_000_000_500),                          # empty value
        kcat_line("s.d.t", 0, 4, "not-json-key", GOOD, 1_700_000_000_600),                    # bad key
        kcat_line("s.d.t", 0, 5, '{"id":5}', '{"payload": "a string"}', 1_700_000_000_700),   # wrong shape
    ]
    path = write_lines(tmp_path / "bad.jsonl", lines)
    with open(path, "ab") as fh:
        fh.write(b"\x00\x01\xfe\xff raw bytes\n")  # binary garbage line
    result = scan([path])
    by_rule = {rule: n for per in result.findings_by_rule.values() for rule, n in per.items()}
    assert by_rule["invalid_capture_line"] == 4
    assert by_rule["invalid_json"] == 4
    assert by_rule["invalid_envelope"] == 1
    assert result.summary["records"] == 6
    assert result.summary["invalid_records"] == 9
    assert result.summary["data_events"] == 6  # unparseable values on data topics are data events
    decode = sorted((f["rule"], f["offset"]) for f in result.findings if f["check"] == "decode" and f["offset"] is not None)
    assert decode == [("invalid_envelope", 5), ("invalid_json", 1), ("invalid_json", 2), ("invalid_json", 3), ("invalid_json", 4)]
    messages = {f["offset"]: f["message"] for f in result.findings if f["check"] == "decode"}
    assert messages[1] == 'value is not valid JSON: {"schema": {"type": "str'  # the undecodable text itself
    assert messages[4] == "key is not valid JSON: not-json-key"
    assert messages[5].startswith('value is not a Connect/Debezium object: {"payload": "a string"}')
    assert json.dumps(result.to_json_dict())  # the report renders with all of it


def test_overlapping_captures_count_each_record_once_and_say_so(scan, tmp_path):
    from cdc_monitor.generator import generate
    from cdc_monitor.generator.kcat_writer import write_capture

    whole = tmp_path / "whole.jsonl"
    write_capture(generate("sqlserver", events=150, seed=9, partitions=2), whole)
    lines = whole.read_text().splitlines()
    overlap = write_lines(tmp_path / "again.jsonl", lines[: len(lines) // 3])  # captured twice
    once, twice = scan([whole]), scan([whole, overlap])
    assert twice.summary == {**once.summary, "findings_by_check": twice.summary["findings_by_check"],
                             "findings_by_severity": twice.summary["findings_by_severity"]}
    assert twice.window == once.window and twice.lag == once.lag and twice.transactions == once.transactions
    dup = [f for f in twice.findings if f["rule"] == "duplicate_capture_record"]
    assert [f for f in twice.findings if f not in dup] == once.findings  # no false duplicates, nothing else
    again = {}
    for line in lines[: len(lines) // 3]:
        rec = json.loads(line)
        again[(rec["topic"], rec["partition"])] = again.get((rec["topic"], rec["partition"]), 0) + 1
    assert {(f["topic"], f["partition"]): int(f["message"].split()[0]) for f in dup} == again
    assert all(f["severity"] == "warning" and f["check"] == "decode" for f in dup)
