"""Snapshots: progress per table (rows, incremental rows, first/last markers), incremental
snapshot chunks while streaming are expected, a blocking snapshot after streaming is not."""

from __future__ import annotations

from tests.support.captures import write_lines
from tests.test_lag import event


def test_snapshot_progress_and_a_restarted_snapshot(scan, tmp_path):
    lines = [
        # orders: a blocking snapshot, streaming, then an incremental snapshot's chunk (signal-driven)
        event(0, 5, table="orders", op="r", snapshot="first"), event(1, 5, table="orders", op="r", snapshot="true"),
        event(2, 5, table="orders", op="r", snapshot="last_in_data_collection"),
        *[event(i, 20, table="orders", op="c") for i in (3, 4, 5)],
        event(6, 5, table="orders", op="r", snapshot="incremental"), event(7, 5, table="orders", op="r", snapshot="incremental"),
        # items: streaming, then the table is snapshotted again (a connector that lost its offsets)
        *[event(i, 20, table="items", op="c") for i in (0, 1, 2)],
        event(3, 5, table="items", op="r", snapshot="true"), event(4, 5, table="items", op="r", snapshot="last"),
    ]
    result = scan([write_lines(tmp_path / "snapshots.jsonl", lines)])
    assert [(f["rule"], f["topic"], f["offset"], f["severity"]) for f in result.findings] == [
        ("snapshot_restarted", "srv.shop.items", 3, "warning")]
    assert result.findings[0]["message"] == ("snapshot of shop.items started again: 2 snapshot event(s) after its changes "
                                             "were streaming (first change at srv.shop.items[0]@0)")
    progress = {r["table"]: r for r in result.snapshots}
    assert progress["shop.orders"] == {"server": "srv", "table": "shop.orders", "rows": 5, "incremental_rows": 2,
                                       "first_marker": True, "last_marker": True}
    assert progress["shop.items"]["rows"] == 2 and not progress["shop.items"]["first_marker"]
    assert {r["table"]: r["count"] for r in result.lag} == {"shop.orders": 3, "shop.items": 3}  # snapshots excluded
