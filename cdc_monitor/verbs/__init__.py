"""The application's verbs, each a ``run(settings) -> Outcome`` with typed dataclasses: what the
CLI (``cli/``) calls once it has parsed the flags, and what it renders afterwards. A verb checks
what it can before Spark starts (inputs, brokers, jars) and raises ``errors.CdcMonitorError``
with a fix-it message."""
