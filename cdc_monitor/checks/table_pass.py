"""The table pass: the rules judged per (server, table), in one aggregate judged by a Java UDF.

One read of the window's events and one shuffle: each record a table's rules need is collected,
as narrow fields (its place, times and hashes: never row images), into its (server, table)'s
group, and ``TABLE_JUDGE`` (``java/TableJudge.java``) returns the group's findings. A schema-change
event joins the group of each table its DDL is about. The rules are declared, and their meaning
documented, in their check modules:

- ``lag_spike`` (checks/lag.py): over the change events of the lag scope (watch: the batch's new
  records and the tails carried), with the table's threshold;
- ``snapshot_restarted`` (checks/snapshots.py): when the window holds snapshot events;
- ``schema_change_without_ddl`` (checks/schema_changes.py): when it holds schema-change events and
  value schemas, for the servers whose schema-change events it holds.

Memory: a group is read as a stream (checks/passes.py), the judge holding what its rules need; over
Spark Connect, as one array (docs/architecture.md, "The passes").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdc_monitor.checks.lag import LAG_SPIKE, VALID_EVENT_TS, VALID_SOURCE_TS
from cdc_monitor.checks.ordering import CONTENT_HASH
from cdc_monitor.checks.passes import GroupPass, distribute_by
from cdc_monitor.checks.schema_changes import SCHEMA_CHANGE_WITHOUT_DDL
from cdc_monitor.checks.snapshots import INCREMENTAL, SNAPSHOT_RESTARTED
from cdc_monitor.checks.sql import JavaFunction, SqlFindings, findings_frame, judged_sql, lit

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.runtime.session import SessionCaps

RULES = (LAG_SPIKE, SNAPSHOT_RESTARTED, SCHEMA_CHANGE_WITHOUT_DDL)
_NO_SINCE = "CAST(NULL AS struct<record_ts_ms:bigint,topic:string,partition:int,offset:bigint>)"
TABLE_JUDGE = JavaFunction(
    "cdc_monitor_judge_tables", "cdcmonitor.TableJudge",
    "array<struct<rule:string,topic:string,partition:int,offset:bigint,offsets:array<bigint>,key:string,"
    "txn_id:string,message:string,record_ts_ms:bigint>>")
_BLOCKING = f"(data_event AND snapshot_event AND op = 'r' AND NOT coalesce(snapshot_marker, '') IN ({lit(INCREMENTAL)}, 'false'))"


@dataclass(frozen=True)
class TableRules:
    """What the table pass judges in a window (the census decides: checks/context.py)."""

    lag_threshold_ms: int
    table_lag_threshold_ms: Mapping[str, int] | None = None
    lag_scope: str = "true"  # a SQL predicate: the records lag spikes run over
    snapshots: bool = True  # the window holds snapshot events
    ddl_servers: tuple[str, ...] | None = None  # the servers whose schema-change events it holds; None: not judged
    # each table's first change event (the census's, WindowFacts.first_change), as SQL over a record's
    # server and table and its named parameters: when its snapshot reads count as restarted
    since: tuple[str, Mapping[str, str]] = (_NO_SINCE, {})

    def threshold_sql(self) -> str:
        """A record's lag threshold: its table's, else the window's (the names and values are parameters)."""
        return ("CAST(coalesce(element_at(from_json(:table_lag_thresholds, 'map<string,bigint>'), `table`), "
                ":lag_threshold_ms) AS bigint)")

    def ddl_sql(self) -> str:
        return "array_contains(from_json(:ddl_servers, 'array<string>'), server)" if self.ddl_servers else "false"

    def args(self) -> dict[str, Any]:
        """The named parameters ``threshold_sql`` and ``ddl_sql`` read: values from the configuration and
        the data never become statement text (checks/sql.py)."""
        return {**self.since[1], "lag_threshold_ms": self.lag_threshold_ms,
                "table_lag_thresholds": json.dumps(dict(self.table_lag_threshold_ms or {})),
                "ddl_servers": json.dumps(list(self.ddl_servers or ()))}

    def where_sql(self) -> str:
        """The records some rule reads."""
        parts = [f"(change_event AND ({self.lag_scope}))"]
        if self.snapshots:
            parts.append("change_event OR blocking")
        if self.ddl_servers:
            parts.append("(data_event AND value_schema_hash IS NOT NULL) OR kind = 'schema_change'")
        return " OR ".join(f"({p})" for p in parts)


# the table pass's records: per (server, table), each record's fields in java/TableJudge.java's Rec
# order, then the group's parameters; the table's first change event (a fact of the census) and
# which snapshot reads repeat an earlier one of their key exactly (a window per key and content)
# only where the window holds snapshot events. Several partitions: distributed by the group first, so
# the windows and the groups share one shuffle
_FIELDS = ("topic", "partition", "offset", "record_ts_ms", "key", "txn_id", "ts_ms", "lag_ms", "change_event",
           "blocking", "schema_hash", "ddl", "since", "read_copy")
_READ_COPY = ("blocking AND key_payload IS NOT NULL AND row_number() OVER (PARTITION BY server, `table`, topic, partition, "
              "key_payload, content ORDER BY offset) > 1")
_RECORDS = f"""
SELECT server, `table`, topic, partition, offset, record_ts_ms, key, txn_id, ts_ms, lag_ms, change_event, blocking,
       schema_hash, ddl, {{since}} AS since, {{read_copy}} AS read_copy,
       {{threshold}} AS threshold, server IS NOT NULL AND `table` IS NOT NULL AS named, {{ddl_read}} AS ddl_read
FROM (SELECT server, explode(CASE WHEN kind = 'schema_change' THEN ddl_tables ELSE array(`table`) END) AS `table`,
             topic, partition, offset, record_ts_ms, key, txn_id, ts_ms,
             CASE WHEN change_event AND ({{lag_scope}}) AND {VALID_SOURCE_TS} AND {VALID_EVENT_TS}
                  THEN ts_ms - source_ts_ms END AS lag_ms,
             change_event, blocking, key_payload, CASE WHEN blocking THEN {CONTENT_HASH} END AS content,
             CASE WHEN data_event THEN CAST(value_schema_hash AS string) END AS schema_hash, kind = 'schema_change' AS ddl
      FROM (SELECT *, {_BLOCKING} AS blocking FROM {{{{events}}}}) WHERE {{where}}
      {{distribute}})"""


def table_pass(rules: TableRules, distribute: bool = True) -> GroupPass:
    """The table pass (checks/passes.py): each (server, table)'s records in ts_ms order, walked by
    ``TABLE_JUDGE``."""
    named = "server IS NOT NULL AND `table` IS NOT NULL"
    return GroupPass(
        name="table_findings",
        records=_RECORDS.format(
            since=rules.since[0] if rules.snapshots else _NO_SINCE, read_copy=_READ_COPY if rules.snapshots else "false",
            threshold=rules.threshold_sql(), ddl_read=rules.ddl_sql(), lag_scope=rules.lag_scope,
            where=rules.where_sql(), distribute=distribute_by(("server", "table"), distribute)),
        group=("server", "table"), order=("ts_ms", "topic", "partition", "offset"), fields=_FIELDS, judge=TABLE_JUDGE,
        keep=("server", "table"), udf_args=(rules.threshold_sql(), "`table`", named, rules.ddl_sql()))


def table_sql(rules: TableRules, distribute: bool = True) -> SqlFindings:
    """The table pass's findings as SQL (checks/sql.py) over ``{events}``: every rule judged per
    (server, table) by ``TABLE_JUDGE`` (one read of the events, one shuffle); the thresholds and the
    servers whose DDL was read are named parameters."""
    return SqlFindings(passes=(table_pass(rules, distribute),), args=rules.args(),
                       selects=(judged_sql(RULES, "{table_findings}"),))


def table_findings(events: DataFrame, rules: TableRules, session: SessionCaps) -> DataFrame:
    """The table pass alone over ``events`` (the suite runs ``table_sql`` with the other checks)."""
    return findings_frame([table_sql(rules)], {"events": events}, session)
