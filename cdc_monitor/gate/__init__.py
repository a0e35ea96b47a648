"""The CI data-quality gate: Great Expectations suites over a scan's result frames."""
