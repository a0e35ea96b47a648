"""Checks: pure DataFrame -> DataFrame functions over the decoded events frame.

No SparkSession, no reads, no Python UDFs. Each ``*_findings`` function returns frames with
``FINDING_COLUMNS``; aggregates (lag table, transaction statuses) come from their own functions.
Each module declares its rules (``RULES``: name, check, severity, scope, meaning) beside the
logic that judges them; ``catalogue.py`` gathers them, ``suite.py`` runs them all.
"""

from cdc_monitor.checks.findings import FINDING_COLUMNS, finding

__all__ = ["FINDING_COLUMNS", "finding"]
