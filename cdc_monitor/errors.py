"""One exception hierarchy; every message says how to fix the problem.

Exit codes: 0 clean, 1 findings at/above --fail-on, 2 could not run.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FINDINGS = 1
EXIT_CANNOT_RUN = 2


class CdcMonitorError(Exception):
    """Base class: the run could not proceed. ``str(err)`` is one line for the user."""

    exit_code = EXIT_CANNOT_RUN


class UsageError(CdcMonitorError):
    """Bad arguments or configuration."""


class InputError(CdcMonitorError):
    """An input (capture path, topic, broker) could not be read."""


class EnvironmentProblem(CdcMonitorError):
    """The machine lacks something needed (Java, a package)."""
