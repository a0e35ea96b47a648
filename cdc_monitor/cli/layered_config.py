"""The verbs' settings from their layers: defaults < config file < environment < flags."""

from __future__ import annotations

from typing import Any


def scan_config(config_file: str | None, transaction_topic: str | None, lag_threshold: str | None = None,
                **overrides: Any):
    """Defaults < config file < environment < flags."""
    from dataclasses import replace

    from cdc_monitor.config import load_config, parse_duration_ms
    from cdc_monitor.errors import UsageError
    from cdc_monitor.vocabulary import exact_topic_regex

    cfg = load_config(config_file)
    remote = overrides.pop("remote", None)
    if remote and overrides.get("spark_master"):
        raise UsageError("give --spark-master or --remote, not both")
    if remote:
        from cdc_monitor.runtime.connect import check_remote

        cfg = replace(cfg, spark_remote=check_remote(remote), spark_master=None)
    elif overrides.get("spark_master"):
        cfg = replace(cfg, spark_remote=None)
    return cfg.with_overrides(
        lag_threshold_ms=parse_duration_ms(lag_threshold, "--lag-threshold") if lag_threshold else None,
        transaction_topic_regex=exact_topic_regex(transaction_topic) if transaction_topic else None,
        **overrides,
    )
