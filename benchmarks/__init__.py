"""On-demand benchmarks (never part of the test suite): `python -m benchmarks --help`."""
