"""The partial JSON schema every value and key is parsed with.

Scalars are parsed as strings (Spark keeps a number's text, an object's raw JSON), so a value
that is valid JSON never fails for a type surprise (seed 002 sends ``"ts_ms": "1620393591654"``
and ``"event_serial_no": "1"``); typed casts happen afterwards with ``try_cast``. Row images
(``before``/``after``) and embedded schemas stay raw JSON text for the schema checks.
"""

from __future__ import annotations

from pyspark.sql import types as T

S = T.StringType()

SOURCE_FIELDS = [
    # common
    "version", "connector", "name", "ts_ms", "ts_sec", "ts_us", "ts_ns", "snapshot", "db", "schema",
    "table", "sequence", "txId",
    # mysql / dtle
    "server_id", "gtid", "file", "pos", "row", "thread", "query",
    # postgresql / yugabyte
    "lsn", "xmin",
    # sql server
    "change_lsn", "commit_lsn", "event_serial_no",
    # oracle
    "scn", "commit_scn", "rs_id", "ssn", "redo_thread", "user_name", "lcr_position",
    # mongodb
    "rs", "collection", "ord", "h", "tord",
    # db2 / informix (change_lsn, commit_lsn above) and vitess
    "begin_lsn", "keyspace", "shard", "vgtid",
    # dtle schema-change messages: {"source": {"server": ...}}
    "server",
    # cassandra: the cluster, and the source time in microseconds
    "cluster", "ts_micro",
]

# the source fields a check reads by name (checks/schema.py and events.foreign_producer: connector and version;
# checks/source_block.py and watch/carry.py: PostgreSQL's lsn and sequence): all the events frame keeps of the
# block (decoding/decoder.py's NARROW), the rest judged inside the decoder. A check that reads another adds it here
CHECKED_SOURCE_FIELDS = ("connector", "version", "lsn", "sequence")
SOURCE_SCHEMA = T.StructType([T.StructField(name, S) for name in SOURCE_FIELDS])

TRANSACTION_BLOCK = T.StructType(
    [T.StructField("id", S), T.StructField("total_order", S), T.StructField("data_collection_order", S)]
)

DATA_COLLECTIONS = T.ArrayType(
    T.StructType([T.StructField("data_collection", S), T.StructField("event_count", S)])
)

# Fields that may sit in ``payload`` (enveloped) or at the top level (schemas disabled).
PAYLOAD_FIELDS = [
    T.StructField("before", S),
    T.StructField("after", S),
    T.StructField("patch", S),  # MongoDB 1.x updates
    T.StructField("updateDescription", S),  # MongoDB 2.x updates (updatedFields, removedFields)
    T.StructField("op", S),
    T.StructField("ts_ms", S),
    T.StructField("ts_us", S),  # Debezium 2.x: the processing time in micro- and nanoseconds beside ts_ms
    T.StructField("ts_ns", S),
    T.StructField("source", SOURCE_SCHEMA),
    T.StructField("transaction", TRANSACTION_BLOCK),
    T.StructField("message", S),  # logical-decoding message (op m): {prefix, content}
    # transaction topic
    T.StructField("status", S),
    T.StructField("id", S),
    T.StructField("event_count", S),
    T.StructField("data_collections", DATA_COLLECTIONS),
    # schema-change topic
    T.StructField("databaseName", S),
    T.StructField("schemaName", S),
    T.StructField("ddl", S),
    T.StructField("tableChanges", S),
]

CORRUPT = "_corrupt"

VALUE_SCHEMA = T.StructType(
    [
        T.StructField("schema", S),
        T.StructField("payload", T.StructType(PAYLOAD_FIELDS)),
        *PAYLOAD_FIELDS,
        T.StructField(CORRUPT, S),
    ]
)

KEY_SCHEMA = T.StructType([T.StructField("schema", S), T.StructField("payload", S), T.StructField(CORRUPT, S)])

JSON_OPTIONS = {"mode": "PERMISSIVE", "columnNameOfCorruptRecord": CORRUPT}
