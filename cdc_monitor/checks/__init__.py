"""Checks: pure DataFrame -> DataFrame functions over the decoded events frame.

No SparkSession, no reads, no Python UDFs, nothing of ``engine/``: a check is given its frames and
a ``CheckContext`` (context.py: the window's facts, the scan settings, where frames live). Each
``*_findings`` function returns frames with ``FINDING_COLUMNS`` (or, for what the driver knows
without reading records, rows of ``FINDING_SCHEMA``); aggregates (lag table, transaction
statuses) come from their own functions. Each module declares its rules as ``Rule`` constants
(name, check, severity, scope, meaning; gathered in its ``RULES``) beside the logic that judges
them; ``catalogue.py`` gathers them, ``suite.py`` runs them all.
"""

from cdc_monitor.checks.findings import FINDING_COLUMNS, finding

__all__ = ["FINDING_COLUMNS", "finding"]
