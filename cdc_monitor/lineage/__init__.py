"""OpenLineage: a run of ``scan``, ``gate`` or ``reconcile`` as lineage events (START, then
COMPLETE or FAIL) carrying its data-quality results, for the catalogs and lineage tools that read
them (docs/openlineage.md).

- ``settings``: where events go and under which job (flags, the ``[openlineage]`` table, the
  client's environment), checked before Spark starts; no client import.
- ``naming``: dataset namespaces and names as OpenLineage's naming spec gives them.
- ``facets``: cdc-monitor's own facets (their JSON Schema is ``facets.json`` beside it).
- ``datasets``: input datasets from a run's outcome: per topic the rules' assertions and metrics;
  per source table the reconciliation's.
- ``events``: the run's events (START, COMPLETE, FAIL) from an outcome.
- ``delivery``: the client and its transport (HTTP, file, console); a failed delivery is counted,
  never raised.
- ``run``: what the CLI holds: one run, its events sent when the verb ends.
"""
