"""The ``cdc-monitor`` command line."""
