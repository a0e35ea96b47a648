"""watch's stateful carry operator, its group functions on hand-made rows (no Spark): what each
group keeps for the next micro-batch and what it emits as context."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from click.testing import CliRunner

from cdc_monitor.cli.main import cli
from cdc_monitor.watch.carry import (
    CANDIDATE,
    CARRIED,
    FED_COLUMNS,
    FINAL,
    PENDING,
    ROW,
    S_META,
    TAIL,
    CarrySettings,
    _frame,
    _server,
    _tail,
)
from cdc_monitor.watch.state import LAYOUT

CFG = CarrySettings(key_history=2, await_ms=60_000, final_memory=3)


def rec(topic: str, partition: int, offset: int, **meta) -> dict:
    return {"topic": topic, "partition": partition, "offset": offset, "key": b'{"id":1}', "value": b"\xff{v}",
            "record_us": offset * 1000, "timestampType": 0, "headers_json": None, **meta}


def frame(rows: list[dict], columns: tuple[str, ...] = ROW) -> pd.DataFrame:
    """A group's rows as the Python operator is fed them (``carry_stream``): the record's columns,
    the other ``columns`` packed as one JSON text (null fields left out, as Spark's to_json does)."""
    packed = [{**{c: r.get(c) for c in ROW}, "role": None,
               "meta": json.dumps({c: r[c] for c in columns if c not in ROW and r.get(c) is not None})}
              for r in rows]
    return pd.DataFrame(packed, columns=list(FED_COLUMNS))


def roles(out: list[tuple]) -> dict[str, list[int]]:
    """Offsets per role of a group's output rows (ROW + role), as the operator's frame holds them."""
    frame = _frame(out)
    got: dict[str, list[int]] = {}
    for role, offset in zip(frame["role"], frame["offset"], strict=True):
        got.setdefault(role, []).append(int(offset))
    return got


def marker(offset: int, status: str, txn: str, ts: int, counts: dict | None = None) -> dict:
    return rec("s.transaction", 0, offset, skind="marker", status=status, txn=txn, record_ts_ms=ts, tbl=None,
               counts=None if counts is None else json.dumps(
                   {"n": sum(counts.values()), "c": [{"data_collection": c, "event_count": n} for c, n in counts.items()]}))


def data(offset: int, txn: str, ts: int, partition: int = 0) -> dict:
    return rec("s.t", partition, offset, skind="data", status=None, txn=txn, record_ts_ms=ts, tbl="db.t", counts=None)


def test_server_keeps_open_transactions_and_orphan_candidates_and_remembers_final_ones():
    batch = frame([marker(0, "BEGIN", "1", 100), marker(1, "END", "1", 110), marker(2, "BEGIN", "2", 120),
                   data(10, "1", 105), data(11, "2", 121), data(12, "9", 500)], ROW + S_META)
    out, st = _server({}, batch, CFG, now=1000.0)
    assert out == []  # nothing held yet; new records are emitted by their key's group
    # txn 1 is complete (final), txn 2 is open (its BEGIN and event kept), txn 9 is on no marker and
    # later than the transaction topic: an orphan candidate
    assert st["open"] == ["2"] and st["final"] == ["1"] and st["horizon"] == 120
    assert sorted(r[2] for r in st["rows"]) == [2, 11, 12]
    # next batch: BEGIN of txn 3 makes txn 2 final (missing_end); markers pass 500 so the candidate is judged
    batch = frame([marker(3, "BEGIN", "3", 600), data(13, "1", 130)], ROW + S_META)
    out, st = _server(st, batch, CFG, now=1001.0)
    assert roles(out) == {CARRIED: [2, 11], CANDIDATE: [12], FINAL: [13]}  # a late event of finished txn 1
    assert st["open"] == ["3"] and st["final"] == ["1", "2"]
    assert sorted(r[2] for r in st["rows"]) == [3]


def test_server_holds_no_candidates_without_a_transaction_topic_and_drops_them_after_the_wait():
    _, st = _server({}, frame([data(1, "9", 100)], ROW + S_META), CFG, now=0.0)
    assert st["rows"] == []  # no marker ever seen: no orphans to judge later
    _, st = _server({}, frame([marker(0, "BEGIN", "1", 50), data(1, "9", 100)], ROW + S_META), CFG, now=0.0)
    assert [r[2] for r in st["rows"] if r[8] == "data"] == [1]
    _, st = _server(st, None, CFG, now=61.0)  # past await_ms
    assert [r[2] for r in st["rows"] if r[8] == "data"] == []


def test_a_server_whose_transaction_topic_is_in_the_stream_holds_events_read_before_its_first_marker():
    cfg = CarrySettings(key_history=2, await_ms=60_000, final_memory=3, transaction_servers=("s",))
    _, st = _server({}, frame([data(1, "1", 105), data(2, "1", 106)], ROW + S_META), cfg, now=0.0, server="s")
    assert [r[2] for r in st["rows"]] == [1, 2]  # the transaction topic has not been read yet
    _, other = _server({}, frame([data(1, "1", 105)], ROW + S_META), cfg, now=0.0, server="t")
    assert other["rows"] == []  # (another server, whose transaction topic the stream does not read)
    out, st = _server(st, frame([marker(0, "BEGIN", "1", 100), marker(1, "END", "1", 110, {"db.t": 2}),
                                 marker(2, "BEGIN", "2", 120)], ROW + S_META), cfg, now=1.0, server="s")
    assert roles(out) == {CANDIDATE: [1, 2]}  # judged with their transaction, now final
    assert st["final"] == ["1"] and [r[2] for r in st["rows"]] == [2]  # (only the open BEGIN of txn 2 left)


def test_an_ended_transaction_is_held_while_its_events_are_on_their_way():
    """A per-trigger cap reads the transaction topic ahead: END (2 events of db.t) arrives with one
    of them, its partition's newest record still before the END's time: held (pending), not final."""
    batch = frame([marker(0, "BEGIN", "1", 100), marker(1, "END", "1", 110, {"db.t": 2}), marker(2, "BEGIN", "2", 120),
                   data(10, "1", 105)], ROW + S_META)
    out, st = _server({}, batch, CFG, now=0.0)
    assert roles(out) == {PENDING: [1]} and st["open"] == ["1", "2"] and st["final"] == []
    # the second event arrives: complete, final; its markers and events go with it
    out, st = _server(st, frame([data(11, "1", 108)], ROW + S_META), CFG, now=1.0)
    assert sorted(roles(out)[CARRIED]) == [0, 1, 2, 10] and PENDING not in roles(out) and st["final"] == ["1"] and st["open"] == ["2"]
    assert sorted(r[2] for r in st["rows"]) == [2]
    # short but its collection's partition has passed the END's time: nothing more is coming, final now
    batch = frame([marker(3, "END", "2", 130, {"db.t": 2}), marker(4, "BEGIN", "3", 140), data(12, "2", 125),
                   data(13, "3", 141)], ROW + S_META)
    out, st = _server(st, batch, CFG, now=2.0)
    assert PENDING not in roles(out) and st["final"] == ["1", "2"]
    # short, its partition read up to before the END's time: held; after await_ms with the same
    # partition behind, final (a genuinely incomplete transaction)
    batch = frame([marker(5, "END", "3", 150, {"db.t": 3}), marker(6, "BEGIN", "4", 160), data(14, "4", 145)],
                  ROW + S_META)
    out, st = _server(st, batch, CFG, now=3.0)
    assert roles(out)[PENDING] == [5]
    out, st = _server(st, frame([data(15, "4", 146)], ROW + S_META), CFG, now=3.0 + 60)
    assert PENDING not in roles(out) and st["final"][-1] == "3"
    # one partition of the short collection passed the END, another (quiet) has not: held, as its
    # missing events may be there; a collection never seen at all: held too
    batch = frame([marker(7, "END", "4", 170, {"db.t": 5}), marker(8, "BEGIN", "5", 180), data(16, "4", 175),
                   data(17, "5", 165, partition=1), marker(9, "END", "5", 190, {"db.u": 1}), marker(10, "BEGIN", "6", 200)],
                  ROW + S_META)
    out, st = _server(st, batch, CFG, now=70.0)
    assert roles(out)[PENDING] == [7, 9]
    out, st = _server(st, frame([data(18, "6", 201, partition=0), data(19, "6", 202, partition=1)], ROW + S_META),
                      CFG, now=71.0)  # partition 1 passes END 4's time: final; db.u still never seen
    assert roles(out)[PENDING] == [9] and st["final"][-1] == "4"


def test_a_held_end_waits_for_partitions_that_have_shown_no_event_of_a_transaction():
    """db.t has two partitions; partition 0 has passed the END's time, partition 1 has shown only
    records outside transactions (a snapshot) so far: with the topics' partition counts, held;
    without them (a partition never seen is not known to exist), judged at once."""
    batch = frame([marker(0, "BEGIN", "1", 100), marker(1, "END", "1", 110, {"db.t": 2}), marker(2, "BEGIN", "2", 120),
                   data(10, "1", 105), data(11, "2", 121)], ROW + S_META)
    counted = CarrySettings(key_history=2, await_ms=60_000, final_memory=3, topic_partitions=(("s.t", 2),))
    out, st = _server({}, batch, counted, now=0.0)
    assert roles(out) == {PENDING: [1]} and st["final"] == []
    out, st = _server(st, frame([data(3, "1", 107, partition=1)], ROW + S_META), counted, now=1.0)
    assert PENDING not in roles(out) and st["final"] == ["1"]  # its second event: complete
    out, _ = _server({}, batch, CFG, now=0.0)
    assert PENDING not in roles(out)


def test_rows_held_by_the_previous_state_format_still_load():
    """A checkpoint of the version before tbl/counts: its held rows are read, not misread (their
    table unknown, a transaction they belong to waits out the await time once)."""
    batch = frame([marker(0, "BEGIN", "1", 100), data(10, "1", 105)], ROW + S_META)
    _, st = _server({}, batch, CFG, now=0.0)
    st["rows"] = [[*r[:-3], r[-1]] for r in st["rows"]]  # as stop 26 wrote them
    out, st = _server(st, frame([marker(1, "END", "1", 110, {"db.t": 1}), marker(2, "BEGIN", "2", 120)], ROW + S_META),
                      CFG, now=1.0)
    assert roles(out) == {CARRIED: [0, 10], PENDING: [1]}
    out, st = _server(st, None, CFG, now=61.0)
    assert sorted(roles(out)[CARRIED]) == [0, 1, 2, 10] and PENDING not in roles(out) and st["final"] == ["1"]


def test_final_memory_is_bounded():
    st: dict = {}
    for i in range(5):
        batch = frame([marker(2 * i, "BEGIN", str(i), i), marker(2 * i + 1, "END", str(i), i)], ROW + S_META)
        _, st = _server(st, batch, CFG, now=0.0)
    assert st["final"] == ["2", "3", "4"]


def test_tail_keeps_the_newest_change_event_per_table():
    order = ("record_ts_ms",)
    out, held = _tail(None, frame([{**rec("t", 0, 1), "record_ts_ms": 50}, {**rec("t", 1, 7), "record_ts_ms": 40}],
                                  ROW + order))
    assert out == [] and held[2] == 1
    out, held = _tail(held, frame([{**rec("t", 1, 8), "record_ts_ms": 45}], ROW + order))
    assert roles(out) == {TAIL: [1]} and held[2] == 1  # an older event does not replace it


@pytest.mark.parametrize("old", [None, "state beside the checkpoint", "one Python operator", "this layout"])
def test_a_checkpoint_of_the_earlier_format_is_refused_before_spark(tmp_path, old):
    state = tmp_path / "cdc-state"
    state.mkdir()
    if old == "state beside the checkpoint":
        (state / "CURRENT").write_text("batch-3")
    elif old == "one Python operator":  # driver state saved, no layout written
        (state / "state.json").write_text("{}")
    elif old == "this layout":
        (state / "state.json").write_text("{}")
        (state / "layout").write_text(f"{LAYOUT}\n")
    old = old not in (None, "this layout")
    result = CliRunner().invoke(cli, ["watch", "--bootstrap-servers", "127.0.0.1:1", "--checkpoint", str(tmp_path)])
    assert result.exit_code == 2
    assert ("start with a new --checkpoint" in result.output) == old
