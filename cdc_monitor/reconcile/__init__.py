"""``reconcile``: does the topic, replayed, still match the source table?

The window's events fold into each table's latest state per key (``topic_state``); the source
table is read through Spark's JDBC source (``source_side``, one ``Dialect`` per database); both
sides become canonical text per column (``canonical``), so Debezium's type mapping (decimals,
temporal types, JSON, arrays, toasted values) compares equal to the database's own values; one
join classifies every key (``compare``) into a ``ReconcileState``.
"""
