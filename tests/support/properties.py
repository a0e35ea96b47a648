"""Property tests within the suite's budget: hypothesis draws many small examples up front (no
Spark), the test writes them side by side (each on topics of its own) and scans them all in one
Spark job, as tests/test_accuracy.py batches its captures. Only a failing batch is scanned again
example by example, to name the falsifying one.

Derandomized by default, so a red run is reproducible; explore more with
``CDC_MONITOR_PROPERTY_EXAMPLES=200 CDC_MONITOR_PROPERTY_RANDOM=1 pytest tests/test_accuracy_properties.py``."""

from __future__ import annotations

import os
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st


def examples(default: int) -> int:
    return int(os.environ.get("CDC_MONITOR_PROPERTY_EXAMPLES", str(default)))


def draw(strategy: st.SearchStrategy[Any], n: int) -> list[Any]:
    """``n`` examples of ``strategy`` as hypothesis explores them: the simplest first, then varied
    ones (derandomized: the same ones every run unless CDC_MONITOR_PROPERTY_RANDOM is set)."""
    drawn: list[Any] = []

    @settings(max_examples=n, deadline=None, database=None, phases=[Phase.generate],
              derandomize=not os.environ.get("CDC_MONITOR_PROPERTY_RANDOM"), suppress_health_check=list(HealthCheck))
    @given(strategy)
    def collect(example: Any) -> None:
        drawn.append(example)

    collect()
    return drawn
