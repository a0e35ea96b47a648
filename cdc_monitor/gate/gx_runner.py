"""Run suites with Great Expectations 1.x (ephemeral context) and collect one outcome per expectation.

GX is imported only here (it is the ``gx`` extra and takes seconds to import). The events suite
runs on the Spark frame; aggregate suites on pandas frames, which GX evaluates far faster.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdc_monitor.errors import EnvironmentProblem, UsageError
from cdc_monitor.gate.suites import Suite

RESULT_KEYS = ("observed_value", "element_count", "unexpected_count", "unexpected_percent", "missing_count",
               "partial_unexpected_counts")


@dataclass
class Outcome:
    suite: str
    frame: str
    expectation: str
    kwargs: dict[str, Any]
    success: bool
    result: dict[str, Any] = field(default_factory=dict)
    exception: str | None = None
    seconds: float = 0.0

    @property
    def title(self) -> str:
        args = ", ".join(f"{k}={v}" for k, v in self.kwargs.items() if k != "batch_id")
        return f"{self.expectation}({args})"

    def observed(self) -> str:
        if self.exception:
            return f"error: {self.exception}"
        r = self.result
        parts = []
        if r.get("observed_value") is not None:
            parts.append(f"observed {r['observed_value']}")
        if r.get("unexpected_count"):
            pct = r.get("unexpected_percent")
            parts.append(f"{r['unexpected_count']} of {r.get('element_count')} rows unexpected"
                         + (f" ({pct:.2f}%)" if isinstance(pct, float | int) else ""))
        if r.get("partial_unexpected_counts"):
            counts = r["partial_unexpected_counts"]
            values = ", ".join(f"{c['value']!r} x{c['count']}" for c in counts[:10])
            sampled = sum(int(c["count"]) for c in counts)
            if sampled < int(r.get("unexpected_count") or 0):  # GX counts values in its sample only
                parts.append(f"values in a sample of {sampled} of the {r['unexpected_count']} unexpected rows: {values}")
            else:
                parts.append(f"values: {values}")
        if r.get("missing_count"):
            parts.append(f"{r['missing_count']} null")
        return "; ".join(parts) or "no observed value"


def _plain(value: Any) -> Any:
    """numpy scalars and NaN as plain JSON-able values."""
    if hasattr(value, "item") and not isinstance(value, list | dict | str):
        value = value.item()
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, list):
        return [_plain(v) for v in value[:20]]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _import_gx():
    try:
        import great_expectations as gx
    except ImportError:
        raise EnvironmentProblem("the gate needs Great Expectations: pip install -e '.[gx]' (the gx extra)") from None
    logging.getLogger("great_expectations").setLevel(logging.ERROR)
    return gx


class GateRunner:
    def __init__(self, data_docs: str | Path | None = None) -> None:
        gx = _import_gx()
        from great_expectations.data_context.types.base import ProgressBarsConfig

        self.gx = gx
        self.context = gx.get_context(mode="ephemeral")
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        self.docs = Path(data_docs) if data_docs else None
        if self.docs is not None:
            self.docs.mkdir(parents=True, exist_ok=True)
            self.context.add_data_docs_site(site_name="cdc-monitor", site_config={
                "class_name": "SiteBuilder",
                "store_backend": {"class_name": "TupleFilesystemStoreBackend", "base_directory": str(self.docs.resolve())},
                "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
            })
        self.pandas = self.context.data_sources.add_pandas("cdc_aggregates")
        self.spark = None
        self.suites: dict[str, Any] = {}

    def prepare(self, suites: list[Suite]) -> None:
        """Build every suite with GX now (before any scan): unknown expectations fail fast."""
        for suite in suites:
            if suite.name in self.suites:
                raise UsageError(f"two suites are named {suite.name!r} ({suite.path}): give each a unique 'name'")
            # GX only logs an expectation it cannot build and drops it from the suite: a gate with
            # fewer expectations than written must never pass, so each one is built here first
            from great_expectations.expectations.expectation_configuration import ExpectationConfiguration

            for i, exp in enumerate(suite.spec["expectations"]):
                try:
                    ExpectationConfiguration(**exp).to_domain_obj()
                except Exception as err:
                    first = str(err).splitlines()[0][:300]
                    raise UsageError(f"suite {suite.path}: expectation #{i + 1} ({exp.get('type')}): {first}") from None
            try:
                built = self.context.suites.add(self.gx.ExpectationSuite(**suite.spec))
            except Exception as err:
                raise UsageError(f"suite {suite.path}: {str(err).splitlines()[0][:300]}") from None
            if len(built.expectations) != len(suite.spec["expectations"]):
                raise UsageError(f"suite {suite.path}: Great Expectations kept {len(built.expectations)} of "
                                 f"{len(suite.spec['expectations'])} expectations: check each type and its kwargs")
            self.suites[suite.name] = built

    def run(self, suite: Suite, frame: Any) -> list[Outcome]:
        if suite.name not in self.suites:
            self.prepare([suite])
        gx_suite = self.suites[suite.name]
        if suite.frame == "events":
            if self.spark is None:
                self.spark = self.context.data_sources.add_spark("cdc_events")
            source = self.spark
        else:
            source = self.pandas
        asset = source.add_dataframe_asset(f"{suite.name}-{suite.frame}")
        batch = asset.add_batch_definition_whole_dataframe("window")
        definition = self.context.validation_definitions.add(
            self.gx.ValidationDefinition(data=batch, suite=gx_suite, name=suite.name))
        actions = [self.gx.checkpoint.UpdateDataDocsAction(name="docs", site_names=["cdc-monitor"])] if self.docs else []
        checkpoint = self.context.checkpoints.add(self.gx.Checkpoint(
            name=f"gate-{suite.name}", validation_definitions=[definition], actions=actions, result_format="SUMMARY"))
        started = time.time()
        result = checkpoint.run(batch_parameters={"dataframe": frame})
        took = time.time() - started
        outcomes: list[Outcome] = []
        for run in result.run_results.values():
            for r in run.results:
                cfg = r.expectation_config
                raised = (r.exception_info or {}).get("raised_exception") if isinstance(r.exception_info, dict) else None
                message = (r.exception_info or {}).get("exception_message") if raised else None
                outcomes.append(Outcome(
                    suite=suite.name, frame=suite.frame, expectation=cfg.type, kwargs=dict(cfg.kwargs),
                    success=bool(r.success), result={k: _plain(r.result.get(k)) for k in RESULT_KEYS if k in r.result},
                    exception=message, seconds=round(took / max(1, len(run.results)), 3)))
        if len(outcomes) != len(suite.spec["expectations"]):
            raise UsageError(f"suite {suite.path}: {len(outcomes)} results for {len(suite.spec['expectations'])} "
                             "expectations: the gate cannot vouch for this suite")
        return outcomes
