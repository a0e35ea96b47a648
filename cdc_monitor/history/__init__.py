"""A history of per-table measurements, one row per (server, table, interval of record time), kept as
an append-only Parquet dataset that ``scan`` and ``gate`` write with ``--history LOCATION`` and the
anomaly rules (checks/anomalies.py) read. The layout is a public contract: docs/history.md.

- layout.py: the columns, the folders, a window's id;
- measure.py: the measurements as a part of the window's one collect, and the rows from it;
- store.py: reading committed batches, writing one batch and its commit marker;
- record.py: what a scan does with it: read, judge, write.
- compact.py: each old date's committed batches as one (``cdc-monitor history compact``).
"""
