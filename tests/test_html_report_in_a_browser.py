"""The HTML report as a person sees it: ``scan --output html`` of a faulty capture, opened by a
real browser (Debian's headless Chromium; scripts/test.sh installs it): drawn to a PNG, every
picture drawn with no script error, nothing fetched from the network, and every rule found in
the page's text with its meaning, keys shown as their payload."""

from __future__ import annotations

import collections
import json
import re
from html import unescape

from click.testing import CliRunner

from cdc_monitor.checks.catalogue import CATALOGUE
from cdc_monitor.cli.main import cli
from cdc_monitor.generator import generate
from cdc_monitor.generator.kcat_writer import label_dicts, write_capture
from cdc_monitor.sinks.html_charts import CHARTS
from tests.support.browser import chromium


def test_faulty_capture_report_renders_in_a_browser(spark, tmp_path):
    traffic = generate("mysql", events=400, seed=7, faults=True)  # schemas on: keys carry their schema
    write_capture(traffic, tmp_path / "faulty.jsonl")
    page = tmp_path / "report" / "report.html"
    run = CliRunner().invoke(cli, ["scan", str(tmp_path / "faulty.jsonl"), "--output", "html", "--report-file", str(page),
                                   "--quiet"])
    assert run.exit_code == 1, run.output
    html = page.read_text()
    assert not re.findall(r"""(?:src|href)\s*=\s*["']?(?:https?:)?//""", html)  # nothing loaded from elsewhere
    assert "<td>{&quot;schema&quot;" not in html and "<td>{&quot;id&quot;:" in html  # keys: the payload, not the schema

    dom = chromium(tmp_path, "--virtual-time-budget=5000", "--dump-dom", page.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    root = re.search(r"<html[^>]*>", dom.stdout).group(0)
    assert f'data-charts="{len(CHARTS)}"' in root and "data-errors" not in root, root  # every picture drawn, no error
    assert "Uncaught" not in dom.stderr, dom.stderr[-2000:]
    text = unescape(re.sub(r"<[^>]+>", " ", re.sub(r"<script.*?</script>", " ", dom.stdout, flags=re.S)))
    found = {rule for d in label_dicts(traffic) for rule in [d["rule"]]}
    for rule in found:
        assert rule in text and CATALOGUE[rule].meaning in text, rule
    assert "cdc-monitor report" in text and "faulty.jsonl" in text  # the header names the input

    shot = tmp_path / "report.png"
    png = chromium(tmp_path, "--virtual-time-budget=5000", "--window-size=1280,2600", f"--screenshot={shot}", page.as_uri())
    assert png.returncode == 0, png.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 60_000, len(data)  # a drawn page, not a blank one
    assert "Uncaught" not in png.stderr


def test_the_page_is_drawn_from_the_json_report_numbers(scan, tmp_path):
    """The pictures show the scan's numbers: the lag distribution is the JSON report's histogram, per
    table; the findings bars are the findings per rule and interval; the transactions, the statuses."""
    from cdc_monitor.checks.lag import HISTOGRAM_LE_S
    from cdc_monitor.sinks.html_charts import MAX_LINES, chart_configs
    from cdc_monitor.sinks.report import render_json

    traffic = generate("postgresql", events=300, seed=4, faults=True)
    write_capture(traffic, tmp_path / "f.jsonl")
    result = scan([tmp_path / "f.jsonl"])
    configs = {cid: cfg for cid, _, cfg in chart_configs(result)}
    assert set(configs) == {cid for cid, _, _ in CHARTS}
    # the lag distribution: per table, the JSON report's histogram (cumulative counts per bound) as shares
    # of the table's events, the tables with the largest p99 first
    report = json.loads(render_json(result))
    tables = sorted((r for r in report["lag"] if r["count"]), key=lambda r: -(r["p99_ms"] or 0))
    dist = configs["lag-distribution"]["data"]
    assert len(dist["labels"]) == len(HISTOGRAM_LE_S) and len(tables) > 1
    assert [ds["label"] for ds in dist["datasets"]] == [" ".join(filter(None, (r["server"], r["table"])))
                                                       for r in tables[:MAX_LINES]]
    for ds, row in zip(dist["datasets"], tables, strict=False):
        shares = [round(100 * row["histogram"][format(le, "g")] / row["count"], 2) for le in HISTOGRAM_LE_S]
        assert ds["data"] == shares, row
        assert shares == sorted(shares) and row["histogram"]["+Inf"] == row["count"]
    bars = configs["findings-over-time"]["data"]["datasets"]
    located = sum(r["count"] for r in result.series["findings"])
    assert sum(sum(ds["data"]) for ds in bars) == located > 0
    # the series itself: every finding that names a record, per rule, severity and interval of that
    # record's time (counted here from the findings list and the generated records)
    step, times = result.series["step_ms"], {(r.topic, r.partition, r.offset): r.ts for r in traffic.records}
    expected = collections.Counter((f["rule"], f["severity"], times[(f["topic"], f["partition"], f["offset"])] // step * step)
                                   for f in result.findings if f["offset"] is not None)
    assert {(r["rule"], r["severity"], r["t_ms"]): r["count"] for r in result.series["findings"]} == dict(expected)
    statuses = configs["transactions-by-status"]["data"]["datasets"][0]["data"]
    assert sum(statuses) == sum(result.transactions[s] for s in configs["transactions-by-status"]["data"]["labels"])
    json.dumps(configs)  # plain data: what the page embeds
