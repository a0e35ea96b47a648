"""Checks written as SQL text: one statement per scope, analysed by Spark once.

A check built with the DataFrame API pays, per step, a JVM call per column expression and an
analysis of the new frame (a warm 1k-record watch batch built ~250 frames: 572 analyser runs and
~19k JVM calls, 6.5 s with no job running). A check written here declares its findings as text
instead: named subqueries (``SqlFindings.ctes``) over the window's relations and SELECTs giving
rows of the finding contract (``finding_sql``). ``findings_frame`` joins the checks of one scope
into one ``WITH ... SELECT ... UNION ALL ...`` statement and runs it through ``spark.sql`` with the
relations as frames (``{events}``, ``{lag_scope}``) and the window's facts as named parameters
(``:name``): one call, one analysis. The six checks written so, planned with their union, warm:
0.55-0.62 s against 1.25-1.41 s as frames (measured with the retired ``benchmarks.sql_checks``, in git).

Braces are placeholders (Python's ``str.format``): a literal brace in a check's text is doubled.
The text is the project's own: relation and column names it defines, its constants (``lit``). A
value from the data or the configuration (a server or table name, a threshold) never becomes text:
it is a named parameter (``SqlFindings.args``; several values as one JSON text parsed in the
statement, as ``CheckContext``'s facts are). A name holding ``{context}`` once crashed a scan.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from cdc_monitor.checks.findings import FINDING_SCHEMA, MAX_OFFSETS
from cdc_monitor.vocabulary import Rule

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.runtime.session import SessionCaps

def lit(value: str | int | bool | None) -> str:
    """The project's own constant ``value`` (a rule's name, an op) as a SQL literal (text quoted, quotes
    and backslashes escaped). Never a value from the data or the configuration: those are named
    parameters (see the module); a brace would be read as a placeholder, so none is taken."""
    if isinstance(value, str) and ("{" in value or "}" in value):
        raise ValueError(f"{value!r} holds a brace: pass it as a named parameter, not as text")
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def key_payload_sql(key: str) -> str:
    """``findings.key_payload`` in SQL: the payload of a key with an embedded schema, else the key."""
    payload = f"get_json_object({key}, '$.payload')"
    return f"CASE WHEN get_json_object({key}, '$.schema') IS NOT NULL AND {payload} IS NOT NULL THEN {payload} ELSE {key} END"


def finding_sql(rule: Rule | Sequence[Rule], message: str, *, rule_name: str | None = None, topic: str | None = None,
                partition: str | None = None, offset: str | None = None, offsets: str | None = None,
                key: str | None = None, txn_id: str | None = None, server: str | None = None,
                table: str | None = None, at: str | None = None) -> str:
    """The select-list of a finding of ``rule`` (``findings.finding`` in SQL): each argument an
    expression over the subquery it selects from; a missing location is a typed null (``at``: the record
    time of the record the finding points at). With several
    rules, ``rule_name`` is the expression naming each row's rule (one of them): their check and
    severity follow it."""
    def typed(expr: str | None, typ: str) -> str:
        return f"CAST({expr if expr is not None else 'NULL'} AS {typ})"

    def declared(attr: str) -> str:
        values = {getattr(r, attr) for r in rules}
        if len(values) == 1:
            return lit(values.pop())
        return "CASE " + " ".join(f"WHEN {name_sql} = {lit(r.name)} THEN {lit(getattr(r, attr))}" for r in rules) + " END"

    rules = (rule,) if isinstance(rule, Rule) else tuple(rule)
    assert len(rules) == 1 or rule_name is not None, "several rules: name each row's with rule_name"
    name_sql = lit(rules[0].name) if rule_name is None else rule_name
    offset_sql = typed(offset, "bigint")
    if offsets is None:
        offsets = f"CASE WHEN {offset_sql} IS NOT NULL THEN array({offset_sql}) END"
    columns = [
        (declared("check"), "check"), (f"CAST({name_sql} AS string)", "rule"), (declared("severity"), "severity"),
        (typed(topic, "string"), "topic"), (typed(partition, "int"), "partition"), (offset_sql, "offset"),
        (f"slice(CAST({offsets} AS array<bigint>), 1, {MAX_OFFSETS})", "offsets"),
        (key_payload_sql(typed(key, "string")), "key"), (typed(txn_id, "string"), "txn_id"),
        (f"CAST({message} AS string)", "message"), (typed(server, "string"), "server"), (typed(table, "string"), "table"),
        (typed(at, "bigint"), "record_ts_ms"),
    ]
    return ", ".join(f"{expr} AS `{name}`" for expr, name in columns)


def judged_sql(rules: Sequence[Rule], relation: str) -> str:
    """A pass's findings: a SELECT of ``finding_sql`` rows over ``relation``, the rows its judge
    returned (``inline``d), each naming its rule and located in the finding contract's columns."""
    return f"""SELECT {finding_sql(rules, "message", rule_name="rule", topic="topic", partition="partition",
                                   offset="offset", offsets="offsets", key="key", txn_id="txn_id", server="server",
                                   table="`table`", at="record_ts_ms")}
        FROM {relation}"""


@dataclass(frozen=True)
class JavaFunction:
    """A function of the operators jar a check's text calls (a Java UDF: Spark's public
    ``registerJavaFunction``), registered in the session by ``findings_frame`` before the statement."""

    name: str
    java_class: str
    returns: str  # its return type, as DDL


class RelationPass(Protocol):
    """A pass whose output a check's text reads as the relation ``name`` (checks/passes.py's ``GroupPass``)."""

    @property
    def name(self) -> str: ...

    def frame(self, relations: Mapping[str, DataFrame], session: SessionCaps,
              args: Mapping[str, Any] | None = None) -> DataFrame: ...


@dataclass(frozen=True)
class SqlFindings:
    """One check's findings as SQL text over the window's relations (see the module)."""

    selects: tuple[str, ...]  # each a SELECT of ``finding_sql`` rows
    ctes: tuple[tuple[str, str], ...] = ()  # (name, SELECT), each may read the relations and earlier ones
    args: Mapping[str, Any] = field(default_factory=dict)  # named parameters (:name)
    functions: tuple[JavaFunction, ...] = ()  # Java functions of the operators jar the text calls
    passes: tuple[RelationPass, ...] = ()  # passes whose output the text reads, each as the relation it names


def findings_frame(checks: Sequence[SqlFindings], relations: Mapping[str, DataFrame], session: SessionCaps) -> DataFrame:
    """The findings of ``checks`` (rows of ``FINDING_SCHEMA``) as one frame: one statement, one
    ``spark.sql`` call (``sql_over``); ``session``: the capabilities of the relations' session."""
    spark = next(iter(relations.values())).sparkSession
    args: dict[str, Any] = {}
    ctes: list[tuple[str, str]] = []
    selects: list[str] = []
    for function in {f for check in checks for f in check.functions}:
        register(session, function)
    relations = dict(relations)
    for check in checks:
        for group_pass in check.passes:
            assert group_pass.name not in relations, f"two relations named {group_pass.name}"
            relations[group_pass.name] = group_pass.frame(relations, session, check.args)
    for check in checks:
        clash = {k for k, v in check.args.items() if k in args and args[k] != v}
        assert not clash, f"two checks bind different values to :{clash}"
        args.update(check.args)
        ctes += list(check.ctes)
        selects += list(check.selects)
    names = [n for n, _ in ctes]
    assert len(set(names)) == len(names), f"subquery names repeat: {names}"
    if not selects:
        return spark.createDataFrame([], FINDING_SCHEMA)
    text = (("WITH " + ",\n".join(f"{n} AS ({q})" for n, q in ctes) + "\n") if ctes else "") + \
        "\nUNION ALL\n".join(f"SELECT * FROM ({s})" for s in selects)
    return sql_over(session, text, relations, args)


def sql_over(session: SessionCaps, text: str, frames: Mapping[str, DataFrame],
             args: Mapping[str, Any] | None = None) -> DataFrame:
    """``spark.sql(text, args, **frames)`` in the frames' session (``session``: its capabilities), each
    frame a temp view of a name of its own for the statement's analysis, dropped by ``DROP VIEW`` after
    it. PySpark's own keyword frames are dropped through ``catalog.dropTempView``, which uncaches the
    view's plan: a persisted frame passed in is no longer persisted after the call (seen on pyspark 4.3;
    the kept subqueries this module had were unpersisted so, and computed again by each reader), and the
    call plans the view again to find it in the cache (0.16 s a frame with a dozen frames cached; no
    difference measured in a scan's planning, which has few). A Spark Connect client analyses the
    statement when it runs, after the views would be dropped: there PySpark's keyword frames are
    relations of the statement's own plan (no views, nothing uncached). (The frames' session, not
    ``session.spark``: watch's micro-batch runs in Structured Streaming's clone of the session, whose
    temp views are its own.)"""
    spark = next(iter(frames.values())).sparkSession
    if session.connect:
        return spark.sql(text, args=dict(args or {}), **frames)
    names = {name: f"cdc_{name}_{uuid.uuid4().hex}" for name in frames}
    for name, frame in frames.items():
        frame.createOrReplaceTempView(names[name])
    try:
        return spark.sql(text.format(**names), args=dict(args or {}))
    finally:
        for view in names.values():
            spark.sql(f"DROP VIEW IF EXISTS {view}")


def register(session: SessionCaps, function: JavaFunction) -> None:
    """``function`` registered in ``session`` (idempotent; runtime/session.py)."""
    session.register_java_function(function.name, function.java_class, function.returns, "cdc-monitor's checks")
