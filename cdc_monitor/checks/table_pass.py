"""The table pass: the rules judged per (server, table), in one aggregate judged by a Java UDF.

One read of the window's events and one shuffle: each record a table's rules need is collected,
as a narrow struct (its place, times and hashes: never row images), into its (server, table)'s
group, and ``TABLE_JUDGE`` (``java/TableJudge.java``) returns the group's findings. A schema-change
event joins the group of each table its DDL is about. The rules are declared, and their meaning
documented, in their check modules:

- ``lag_spike`` (checks/lag.py): over the change events of the lag scope (watch: the batch's new
  records and the tails carried), with the table's threshold;
- ``snapshot_restarted`` (checks/snapshots.py): when the window holds snapshot events;
- ``schema_change_without_ddl`` (checks/schema_changes.py): when it holds schema-change events and
  value schemas, for the servers whose schema-change events it holds.

Memory: a group is one table's records in the window, held as one array while it is judged (as a
hot key is in the key pass: a few hundred bytes a record; docs/architecture.md, "The passes").
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cdc_monitor.checks.lag import LAG_SPIKE, VALID_EVENT_TS, VALID_SOURCE_TS
from cdc_monitor.checks.ordering import CONTENT_HASH
from cdc_monitor.checks.schema_changes import SCHEMA_CHANGE_WITHOUT_DDL
from cdc_monitor.checks.snapshots import INCREMENTAL, SNAPSHOT_RESTARTED
from cdc_monitor.checks.sql import JavaFunction, SqlFindings, findings_frame, judged_sql, lit

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

RULES = (LAG_SPIKE, SNAPSHOT_RESTARTED, SCHEMA_CHANGE_WITHOUT_DDL)
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

    def threshold_sql(self) -> str:
        """A record's lag threshold: its table's, else the window's (the names and values are parameters)."""
        return ("CAST(coalesce(element_at(from_json(:table_lag_thresholds, 'map<string,bigint>'), `table`), "
                ":lag_threshold_ms) AS bigint)")

    def ddl_sql(self) -> str:
        return "array_contains(from_json(:ddl_servers, 'array<string>'), server)" if self.ddl_servers else "false"

    def args(self) -> dict[str, Any]:
        """The named parameters ``threshold_sql`` and ``ddl_sql`` read: values from the configuration and
        the data never become statement text (checks/sql.py)."""
        return {"lag_threshold_ms": self.lag_threshold_ms,
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


# each record as java/TableJudge.java's Rec (fields in its order), over the events with ``blocking``
_RECORD = f"""struct(topic, partition, offset, record_ts_ms, key, txn_id, ts_ms,
  CASE WHEN change_event AND ({{lag_scope}}) AND {VALID_SOURCE_TS} AND {VALID_EVENT_TS} THEN ts_ms - source_ts_ms END,
  change_event, blocking, key_payload, CASE WHEN blocking THEN {CONTENT_HASH} END,
  CASE WHEN data_event THEN CAST(value_schema_hash AS string) END, kind = 'schema_change')"""


def table_sql(rules: TableRules) -> SqlFindings:
    """The table pass's findings as SQL (checks/sql.py) over ``{events}``: every rule judged per
    (server, table) by ``TABLE_JUDGE`` in one aggregate (one read of the events, one shuffle)."""
    record = _RECORD.format(lag_scope=rules.lag_scope)
    return SqlFindings(
        ctes=(("table_findings", f"""
            SELECT server, `table`, inline(found)
            FROM (SELECT server, `table`,
                         {TABLE_JUDGE.name}(collect_list(rec), {rules.threshold_sql()}, `table`,
                                            server IS NOT NULL AND `table` IS NOT NULL, {rules.ddl_sql()}) AS found
                  FROM (SELECT server, explode(CASE WHEN kind = 'schema_change' THEN ddl_tables ELSE array(`table`) END)
                                 AS `table`, {record} AS rec
                        FROM (SELECT *, {_BLOCKING} AS blocking FROM {{events}}) WHERE {rules.where_sql()})
                  GROUP BY server, `table`)"""),),
        args=rules.args(),
        functions=(TABLE_JUDGE,),
        selects=(judged_sql(RULES, "table_findings"),),
    )


def table_findings(events: DataFrame, rules: TableRules) -> DataFrame:
    """The table pass alone over ``events`` (the suite runs ``table_sql`` with the other checks)."""
    return findings_frame([table_sql(rules)], {"events": events})
