"""Each verb's ``--help`` ends with two examples and what its exit codes mean."""

from __future__ import annotations

CANNOT_RUN = "could not run: bad arguments, config or input (one line on stderr says how to fix it)"

_EXAMPLES = {
    "scan": ("cdc-monitor scan captures/ --output json --report-file report.json",
             "cdc-monitor scan --bootstrap-servers kafka:9092 --topics 'mysql_server_1\\..*' --since 15m "
             "--fail-on warning"),
    "gate": ("cdc-monitor gate capture.jsonl --suite expectations/ --junit reports/cdc-gate.xml",
             "cdc-monitor gate --bootstrap-servers kafka:9092 --since 30m --suite expectations/lag.json"),
    "watch": ("cdc-monitor watch --bootstrap-servers kafka:9092 --checkpoint /var/lib/cdc-monitor --listen 0.0.0.0:9464",
              "cdc-monitor watch --bootstrap-servers kafka:9092 --topics 'pg\\..*' --checkpoint ckpt --interval 5s"),
    "generate": ("cdc-monitor generate --flavour mysql --faults --output demo/mysql.jsonl",
                 "cdc-monitor generate --flavour postgresql --events 5000 --bootstrap-servers localhost:9092"),
    "dashboards build": ("cdc-monitor dashboards build", "cdc-monitor dashboards build --output-dir /etc/grafana/dashboards"),
    "dashboards push": ("GRAFANA_TOKEN=glsa_... cdc-monitor dashboards push --grafana-url https://grafana.example.com",
                        "cdc-monitor dashboards push --grafana-url http://grafana:3000 --token-env GF_TOKEN --folder CDC"),
    "reconcile": ("CDC_MONITOR_JDBC_PASSWORD=... cdc-monitor reconcile captures/ --jdbc-url jdbc:postgresql://db:5432/shop "
                  "--jdbc-user cdc_ro --tables public.orders",
                  "cdc-monitor reconcile --bootstrap-servers kafka:9092 --topics 'pg\\..*' --jdbc-url "
                  "jdbc:postgresql://db/shop --jdbc-password-file /run/secrets/pg --output json"),
    "history compact": ("cdc-monitor history compact /var/lib/cdc-monitor/history   # daily, from cron",
                        "cdc-monitor history compact s3a://bucket/cdc-history --before 2026-11-01 --config cdc-monitor.toml"),
    "warm-up": ("cdc-monitor warm-up",
                "CDC_MONITOR_CACHE_DIR=/opt/cdc-cache cdc-monitor warm-up   # in an image's build"),
}
_OUTCOMES = {
    "scan": ("no finding at or above --fail-on", "findings at or above --fail-on"),
    "gate": ("every expectation passed", "an expectation failed"),
    "watch": ("stopped cleanly (SIGTERM)", "-"),
    "generate": ("written or produced", "-"),
    "dashboards build": ("written", "-"),
    "dashboards push": ("every dashboard uploaded", "-"),
    "reconcile": ("every row matches (in-flight rows aside)", "a row is missing, extra or differs"),
    "history compact": ("compacted, or nothing to compact", "-"),
    "warm-up": ("the archive was written", "-"),
}


def epilog(verb: str) -> str:
    """Click keeps ``\b`` paragraphs as written."""
    ok, bad = _OUTCOMES[verb]
    codes = [f"  0  {ok}", *([f"  1  {bad}"] if bad != "-" else []), f"  2  {CANNOT_RUN}"]
    lines = "\n".join(f"  {example}" for example in _EXAMPLES[verb])
    return "\b\nExamples:\n" + lines + "\n\n\b\nExit codes:\n" + "\n".join(codes)
