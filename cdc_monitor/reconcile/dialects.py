"""What differs between source databases, and nothing else: a quoting rule, the catalogue query
that lists a table's columns and primary key, the SQL that turns each kind of column into the
text ``canonical`` compares, and what the database exposes about in-flight rows.

Spark-free: the CLI checks the URL, the driver jar and the credentials with it before Spark starts.
Adding a database is one more ``Dialect`` (MySQL/MariaDB: backquotes, ``information_schema``,
``UNIX_TIMESTAMP``-based temporal text; no row version, so only ``--settle``-free quiescent checks).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum

from cdc_monitor.errors import UsageError


class ColumnKind(StrEnum):
    """How a column's values are compared (``canonical`` has one normaliser per kind)."""

    INTEGER = "integer"
    DECIMAL = "decimal"
    FLOAT = "float"
    BOOLEAN = "boolean"
    TEXT = "text"
    JSON = "json"
    ARRAY = "array"
    BINARY = "binary"
    DATE = "date"  # days since 1970-01-01
    TIME = "time"  # microseconds since midnight
    TIMESTAMP = "timestamp"  # the wall clock, in microseconds since 1970-01-01 00:00 as if UTC
    TIMESTAMPTZ = "timestamptz"  # an instant, in microseconds since the epoch


@dataclass(frozen=True)
class SourceColumn:
    name: str
    kind: ColumnKind
    scale: int | None = None  # decimals: the declared scale (decodes a base64 Decimal sent without its schema)


@dataclass(frozen=True)
class SourceTable:
    """A table as the source's catalogue describes it: ``name`` as Debezium spells the data
    collection (``schema.table``), its columns in order, its primary key's columns in key order."""

    name: str
    schema: str
    table: str
    columns: tuple[SourceColumn, ...]
    key: tuple[str, ...]

    def column(self, name: str) -> SourceColumn:
        return next(c for c in self.columns if c.name == name)


@dataclass(frozen=True)
class Dialect:
    name: str
    url_prefix: str
    driver: str
    jar_paths: tuple[str, ...]  # where the distribution installs its JDBC driver
    jar_hint: str  # how to get the driver when no jar is found
    default_port: int
    read_only_statement: str  # runs when each connection opens (Spark's sessionInitStatement)
    kinds: Mapping[str, ColumnKind]  # catalogue type name -> kind (others are TEXT)
    text_sql: Mapping[ColumnKind, str]  # kind -> SQL giving the column's text ("{c}" is the quoted column)
    catalogue_sql: str  # columns of the listed tables: schema, table, name, type, scale, position, key_position
    row_version_sql: str | None = None  # a per-row transaction id (PostgreSQL xmin), compared with source.txId
    position_sql: str | None = None  # the source's current log position as a number (pg_current_wal_lsn)
    quote: Callable[[str], str] = field(default=lambda name: '"' + name.replace('"', '""') + '"')

    def literal(self, text: str) -> str:
        return "'" + text.replace("'", "''") + "'"

    def kind(self, type_name: str) -> ColumnKind:
        return self.kinds.get(type_name.lower(), ColumnKind.TEXT)

    def column_text(self, column: SourceColumn) -> str:
        sql = self.text_sql.get(column.kind, self.text_sql[ColumnKind.TEXT])
        return sql.format(c=self.quote(column.name))

    def catalogue_query(self, tables: list[tuple[str, str]]) -> str:
        pairs = " or ".join(f"(c.table_schema = {self.literal(s)} and c.table_name = {self.literal(t)})"
                            for s, t in tables)
        return self.catalogue_sql.format(tables=pairs or "false")

    def qualified(self, table: SourceTable) -> str:
        return f"{self.quote(table.schema)}.{self.quote(table.table)}"


_PG_MICROS = "case when isfinite({c}) then (extract(epoch from {c}) * 1000000)::numeric(30,0)::text else {c}::text end"

POSTGRESQL = Dialect(
    name="postgresql",
    url_prefix="jdbc:postgresql:",
    driver="org.postgresql.Driver",
    jar_paths=("/usr/share/java/postgresql.jar",),
    jar_hint="apt-get install libpostgresql-jdbc-java (Debian/Ubuntu), or name the jar with --jdbc-jar",
    default_port=5432,
    read_only_statement="SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY",
    kinds={
        **dict.fromkeys(("smallint", "integer", "bigint"), ColumnKind.INTEGER),
        "numeric": ColumnKind.DECIMAL,
        "money": ColumnKind.DECIMAL,
        **dict.fromkeys(("real", "double precision"), ColumnKind.FLOAT),
        "boolean": ColumnKind.BOOLEAN,
        **dict.fromkeys(("json", "jsonb"), ColumnKind.JSON),
        "array": ColumnKind.ARRAY,
        "bytea": ColumnKind.BINARY,
        "date": ColumnKind.DATE,
        "time without time zone": ColumnKind.TIME,
        "timestamp without time zone": ColumnKind.TIMESTAMP,
        "timestamp with time zone": ColumnKind.TIMESTAMPTZ,
    },
    text_sql={
        ColumnKind.TEXT: "{c}::text",
        ColumnKind.DECIMAL: "{c}::numeric::text",
        ColumnKind.ARRAY: "to_json({c})::text",
        ColumnKind.BINARY: "translate(encode({c}, 'base64'), E'\\n', '')",
        ColumnKind.DATE: "case when isfinite({c}) then ({c} - date '1970-01-01')::text else {c}::text end",
        ColumnKind.TIME: "(extract(epoch from {c}) * 1000000)::numeric(30,0)::text",
        ColumnKind.TIMESTAMP: _PG_MICROS,
        ColumnKind.TIMESTAMPTZ: _PG_MICROS,
    },
    catalogue_sql="""
        select c.table_schema as schema_name, c.table_name, c.column_name as name, c.data_type as type_name,
               c.numeric_scale as scale, c.ordinal_position as position, k.ordinal_position as key_position
        from information_schema.columns c
        left join information_schema.table_constraints t
          on t.table_schema = c.table_schema and t.table_name = c.table_name and t.constraint_type = 'PRIMARY KEY'
        left join information_schema.key_column_usage k
          on k.constraint_schema = t.constraint_schema and k.constraint_name = t.constraint_name
         and k.table_name = c.table_name and k.column_name = c.column_name
        where {tables}""",
    row_version_sql="xmin::text::bigint",
    position_sql="select (pg_current_wal_lsn() - '0/0'::pg_lsn)::bigint as position",
)

DIALECTS = (POSTGRESQL,)


def dialect_for(url: str) -> Dialect:
    for dialect in DIALECTS:
        if url.startswith(dialect.url_prefix):
            return dialect
    known = ", ".join(d.url_prefix + "//HOST:PORT/DB" for d in DIALECTS)
    raise UsageError(f"--jdbc-url {redact_url(url)}: no dialect for this database; supported: {known}")


def redact_url(url: str) -> str:
    """The URL without its parameters (where a password may sit): what reports and errors show."""
    return url.split("?", 1)[0].split(";", 1)[0]
