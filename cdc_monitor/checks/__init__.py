"""Checks: pure DataFrame -> DataFrame functions over the decoded events frame.

No SparkSession, no reads, no Python UDFs. Each ``*_findings`` function returns frames with
``FINDING_COLUMNS``; aggregates (lag table, transaction statuses) come from their own functions.
"""

from cdc_monitor.checks.findings import FINDING_COLUMNS, RULES, SEVERITIES, finding

__all__ = ["FINDING_COLUMNS", "RULES", "SEVERITIES", "finding"]
