"""Scan settings, layered: defaults < config file (TOML) < environment (CDC_MONITOR_*) < flags."""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from cdc_monitor.errors import UsageError
from cdc_monitor.vocabulary import (
    FAIL_ON,
    HEARTBEAT_TOPIC_PREFIX,
    TRANSACTION_TOPIC_REGEX,
    Severity,
    TopicRoles,
    exact_topic_regex,
)

REGISTRY_SETTINGS = ("url", "basic_auth_user_info", "bearer_token")
# the [openlineage] table's settings (docs/configuration.md; cdc_monitor/lineage/settings.py reads them)
OPENLINEAGE_SETTINGS = ("url", "namespace", "job", "capture_namespace", "required", "endpoint", "timeout", "api_key")
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)?\s*$")
_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000, None: 1000}


def parse_duration_ms(text: str | int | float, what: str = "duration") -> int:
    """'15m' -> 900000; a bare number is seconds."""
    if isinstance(text, int | float):
        return int(text * 1000)
    m = _DURATION.match(str(text))
    if not m:
        raise UsageError(f"{what} {text!r} is not a duration: use a number with ms, s, m, h or d (e.g. 15m)")
    return int(float(m.group(1)) * _UNITS_MS[m.group(2)])


@dataclass(frozen=True)
class ScanConfig:
    transaction_topic_regex: str = TRANSACTION_TOPIC_REGEX
    heartbeat_topic_prefix: str = HEARTBEAT_TOPIC_PREFIX
    lag_threshold_ms: int = 60_000
    table_lag_threshold_ms: dict[str, int] = field(default_factory=dict)
    # silence after which a server's connector counts as stalled (checks/stalls.py); None: from its heartbeats
    stall_threshold_ms: int | None = None
    fail_on: str = Severity.ERROR.value
    max_findings: int = 10_000
    # windows of at most this many records are checked in one partition, without shuffles
    # (engine/cache.py); larger ones keep every core busy. On 2 cores the two ways break even
    # at ~25k records (9.2k: 4.6 s vs 5.8 s warm; 22.5k: 6.9 vs 7.2 s; 45k: 11.7 vs 10.7 s)
    one_partition_rows: int = 25_000
    # windows of at least this many records are checked with generated code (local mode runs
    # interpreted: compiling a scan's ~350 classes costs more than it saves on a small window, and
    # less than it saves on a large one: runtime/settings.py, docs/performance.md)
    codegen_rows: int = 250_000
    spark_master: str | None = None
    # a Spark Connect server (sc://HOST:PORT) instead of a session of this process: [spark] remote,
    # SPARK_REMOTE, --remote (runtime/connect.py); whichever of it and spark_master is set later wins
    spark_remote: str | None = None
    spark_conf: dict[str, str] = field(default_factory=dict)
    kafka_conf: dict[str, str] = field(default_factory=dict)  # librdkafka settings (kafka.* without the prefix)
    # url, basic_auth_user_info, bearer_token: Avro keys and values in the Confluent wire format
    schema_registry: dict[str, str] = field(default_factory=dict)
    # capture values/keys are Avro-JSON text (kcat -s avro, kafka-avro-console-consumer): True, every
    # record; False, none; None (default), recognised per record by the decoder (docs/avro.md)
    avro_json: bool | None = None
    # the [openlineage] table as read (cdc_monitor/lineage/settings.py settles it with the flags)
    openlineage: dict[str, Any] = field(default_factory=dict)
    # the [history] table (docs/history.md): where per-table measurements are kept (a Spark path;
    # None: no history, no anomaly rules), their interval of record time, and the anomaly rules'
    # baseline (checks/anomalies.py; defaults chosen by benchmarks/anomalies.py)
    history: str | None = None
    history_interval_ms: int = 300_000
    history_lateness_ms: int = 60_000  # watch: how long after an interval's end its records may still arrive
    watch_max_keys: int | None = None  # watch: [watch] max_keys (None: watch/carry.py's MAX_KEYS)
    anomaly_sensitivity: float = 6.0  # the band is the baseline's median +- this many (scaled) MADs
    anomaly_baseline_intervals: int = 24  # N: the last N intervals the baseline reads
    anomaly_min_intervals: int = 8  # fewer in the history: no verdict
    anomaly_floor: float = 0.1  # the MAD's floor, as a fraction of the median (flat history is not noise-free)

    @property
    def roles(self) -> TopicRoles:
        return TopicRoles(self.transaction_topic_regex, self.heartbeat_topic_prefix)

    def with_overrides(self, **values: Any) -> ScanConfig:
        known = {f.name for f in fields(self)}
        clean = {k: v for k, v in values.items() if v is not None and k in known}
        cfg = replace(self, **clean)
        if cfg.fail_on not in FAIL_ON:
            raise UsageError(f"--fail-on {cfg.fail_on!r} is not one of {', '.join(FAIL_ON)}")
        return cfg


# the config file's tables besides [scan] (each read on its own; a bare key of the same name is not a setting)
TABLES = ("tables", "spark", "kafka", "schema_registry", "openlineage", "history", "watch")
WATCH_SETTINGS = ("max_keys",)


def _from_mapping(data: dict[str, Any], origin: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    scan = data.get("scan", data)
    for key, value in scan.items():
        name = key.replace("-", "_")
        if name in TABLES:  # (read below)
            continue
        if name in ("lag_threshold", "lag_threshold_ms"):
            out["lag_threshold_ms"] = parse_duration_ms(value, f"{origin}: lag_threshold")
        elif name in ("stall_threshold", "stall_threshold_ms"):
            out["stall_threshold_ms"] = parse_duration_ms(value, f"{origin}: stall_threshold")
        elif name == "transaction_topic":
            out["transaction_topic_regex"] = exact_topic_regex(str(value))
        elif name in {f.name for f in fields(ScanConfig)}:
            out[name] = value
        else:
            raise UsageError(f"{origin}: unknown setting {key!r}; see docs/configuration.md")
    tables = data.get("tables", {})
    thresholds = {t: parse_duration_ms(v.get("lag_threshold"), f"{origin}: tables.{t}.lag_threshold")
                  for t, v in tables.items() if isinstance(v, dict) and "lag_threshold" in v}
    if thresholds:
        out["table_lag_threshold_ms"] = thresholds
    if isinstance(data.get("spark"), dict):
        out["spark_conf"] = {str(k): str(v) for k, v in data["spark"].items() if k != "remote"}
        if "remote" in data["spark"]:
            from cdc_monitor.runtime.connect import check_remote

            out["spark_remote"] = check_remote(str(data["spark"]["remote"]), f"{origin}: [spark] remote")
            if out.get("spark_master"):
                raise UsageError(f"{origin}: give spark_master or [spark] remote, not both")
    if isinstance(data.get("kafka"), dict):
        out["kafka_conf"] = {str(k): str(v) for k, v in data["kafka"].items()}
    if isinstance(data.get("schema_registry"), dict):
        unknown = set(data["schema_registry"]) - set(REGISTRY_SETTINGS)
        if unknown:
            raise UsageError(f"{origin}: unknown [schema_registry] setting(s) {', '.join(sorted(unknown))}; "
                             f"known: {', '.join(REGISTRY_SETTINGS)}")
        out["schema_registry"] = {str(k): str(v) for k, v in data["schema_registry"].items()}
    if isinstance(data.get("openlineage"), dict):
        unknown = set(data["openlineage"]) - set(OPENLINEAGE_SETTINGS)
        if unknown:
            raise UsageError(f"{origin}: unknown [openlineage] setting(s) {', '.join(sorted(unknown))}; "
                             f"known: {', '.join(OPENLINEAGE_SETTINGS)}")
        out["openlineage"] = dict(data["openlineage"])
    if isinstance(data.get("history"), dict):
        out |= history_settings(data["history"], origin)
    if isinstance(data.get("watch"), dict):
        unknown = set(data["watch"]) - set(WATCH_SETTINGS)
        if unknown:
            raise UsageError(f"{origin}: unknown [watch] setting(s) {', '.join(sorted(unknown))}; known: "
                             f"{', '.join(WATCH_SETTINGS)}")
        if "max_keys" in data["watch"]:
            value = data["watch"]["max_keys"]
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UsageError(f"{origin}: [watch] max_keys must be a whole number of keys (0: no cap), not {value!r}")
            out["watch_max_keys"] = value
    return out


# the [history] table's settings -> ScanConfig fields
HISTORY_SETTINGS = {"location": "history", "interval": "history_interval_ms", "lateness": "history_lateness_ms",
                    "sensitivity": "anomaly_sensitivity",
                    "baseline_intervals": "anomaly_baseline_intervals", "min_intervals": "anomaly_min_intervals",
                    "floor": "anomaly_floor"}


def history_settings(table: dict[str, Any], origin: str) -> dict[str, Any]:
    """The [history] table as ScanConfig fields, each checked (a bad value: exit 2 before Spark)."""
    unknown = set(table) - set(HISTORY_SETTINGS)
    if unknown:
        raise UsageError(f"{origin}: unknown [history] setting(s) {', '.join(sorted(unknown))}; "
                         f"known: {', '.join(HISTORY_SETTINGS)}")
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = HISTORY_SETTINGS[key]
        if key == "location":
            out[name] = str(value)
        elif key == "interval":
            out[name] = parse_duration_ms(value, f"{origin}: history.interval")
            if out[name] < 1000 or 86_400_000 % out[name]:
                raise UsageError(f"{origin}: history.interval must divide a day and be at least 1s (e.g. 5m)")
        elif key == "lateness":
            out[name] = parse_duration_ms(value, f"{origin}: history.lateness")
        elif key in ("baseline_intervals", "min_intervals"):
            if not isinstance(value, int) or value < 1:
                raise UsageError(f"{origin}: history.{key} must be a whole number of intervals, at least 1")
            out[name] = value
        else:
            if not isinstance(value, int | float) or value <= 0:
                raise UsageError(f"{origin}: history.{key} must be a positive number")
            out[name] = float(value)
    return out


def load_config(path: str | None, env: dict[str, str] | None = None) -> ScanConfig:
    cfg = ScanConfig()
    if path:
        p = Path(path)
        try:
            data = tomllib.loads(p.read_text())
        except FileNotFoundError:
            raise UsageError(f"config file {path} does not exist: check --config") from None
        except tomllib.TOMLDecodeError as err:
            raise UsageError(f"config file {path} is not valid TOML ({err}): fix the file") from None
        cfg = cfg.with_overrides(**_from_mapping(data, str(path)))
    env = os.environ if env is None else env
    env_map = {k[len("CDC_MONITOR_"):].lower(): v for k, v in env.items() if k.startswith("CDC_MONITOR_")}
    picked = {}
    if "lag_threshold" in env_map:
        picked["lag_threshold_ms"] = parse_duration_ms(env_map["lag_threshold"], "CDC_MONITOR_LAG_THRESHOLD")
    if "stall_threshold" in env_map:
        picked["stall_threshold_ms"] = parse_duration_ms(env_map["stall_threshold"], "CDC_MONITOR_STALL_THRESHOLD")
    if "fail_on" in env_map:
        picked["fail_on"] = env_map["fail_on"]
    if "history" in env_map:
        picked["history"] = env_map["history"]
    if "transaction_topic" in env_map:
        picked["transaction_topic_regex"] = exact_topic_regex(env_map["transaction_topic"])
    # CDC_MONITOR_KAFKA_SASL_PASSWORD=... -> sasl.password: secrets stay off the command line
    kafka_env = {k[len("kafka_"):].replace("_", "."): v for k, v in env_map.items() if k.startswith("kafka_")}
    if kafka_env:
        picked["kafka_conf"] = cfg.kafka_conf | kafka_env
    # CDC_MONITOR_SCHEMA_REGISTRY_URL, ..._BASIC_AUTH_USER_INFO, ..._BEARER_TOKEN
    registry_env = {k[len("schema_registry_"):]: v for k, v in env_map.items()
                    if k.startswith("schema_registry_") and k[len("schema_registry_"):] in REGISTRY_SETTINGS}
    if registry_env:
        picked["schema_registry"] = cfg.schema_registry | registry_env
    cfg = cfg.with_overrides(**picked)
    if env.get("SPARK_REMOTE"):  # pyspark's own variable, read as pyspark reads it
        from cdc_monitor.runtime.connect import check_remote

        cfg = replace(cfg, spark_remote=check_remote(env["SPARK_REMOTE"], "SPARK_REMOTE"), spark_master=None)
    return cfg
