"""The gate's 'observed' line: counts are counts; a sample is called a sample."""

from __future__ import annotations

from cdc_monitor.gate.gx_runner import Outcome


def outcome(result: dict) -> Outcome:
    return Outcome(suite="s", frame="findings", expectation="expect_column_values_to_not_be_in_set",
                   kwargs={"column": "severity"}, success=False, result=result)


def test_counts_of_a_complete_sample_are_counts():
    text = outcome({"unexpected_count": 3, "element_count": 10, "partial_unexpected_counts": [
        {"value": "error", "count": 2}, {"value": "warning", "count": 1}]}).observed()
    assert "values: 'error' x2, 'warning' x1" in text and "3 of 10 rows unexpected" in text


def test_a_partial_sample_is_named_so():
    text = outcome({"unexpected_count": 57, "element_count": 90,
                    "partial_unexpected_counts": [{"value": "error", "count": 20}]}).observed()
    assert "values in a sample of 20 of the 57 unexpected rows: 'error' x20" in text
    assert "values: 'error' x20" not in text
