"""Plans built once per shape of a window and run again over the next window's data.

A ``watch`` micro-batch plans the same checks as the one before it, over new records: building
that plan from Python costs ~1,000 JVM round trips and a few hundred analyses by Spark, each over
a growing plan (1.5-2 s of a ~4.5 s batch of 1k records on 2 cores). ``PlanTemplates`` keeps the
analyzed plan the first batch of each shape built, with the checkpoints it read (its leaves) and
the fact texts it holds (``engine/facts.py``), and gives each later batch of that shape the same
plan over its own checkpoints and facts (``cdcmonitor.PlanTemplate`` in the operator jar), already
optimized: Spark's optimizer does not run again either.

The shape (``key``) is everything the plan's structure depends on besides those leaves' data
(their columns are part of it) and texts:
which checks the window feeds, whether it is held in one partition, the schemas whose integer
ranges are judged... The caller names it; ``CDC_MONITOR_PLAN_REUSE=verify`` (the tests) builds
every plan again as well and fails when the reused one differs from it, analyzed or optimized
(Spark's ``sameResult``: the same plan up to attribute ids; what persisted frames hold is compared
in the analyzed plan), so a shape that missed something shows up as a failing test.
``off`` builds every plan (as without the operator jar).
"""

from __future__ import annotations

import os
import sys
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from py4j.protocol import Py4JError
from pyspark.errors.exceptions.captured import CapturedException

JVM_ERRORS = (Py4JError, CapturedException)  # (PySpark turns most of the JVM's exceptions into the latter)

if TYPE_CHECKING:
    from pyspark.sql import DataFrame

    from cdc_monitor.engine.cache import FrameCache

T = TypeVar("T")
MODES = ("on", "off", "verify")


class PlanMismatch(AssertionError):
    """A reused plan that differs from the plan built for the same window (a shape missing from its key)."""


@dataclass
class _Template(Generic[T]):
    jvm: Any  # cdcmonitor.PlanTemplate, with its optimized plan
    kept: list[Any]  # the frames it persisted (FrameCache.keep), as templates (analyzed)
    leaf_ids: list[int]
    texts: dict[str, str]  # fact name -> the text the plan holds
    meta: T


class PlanTemplates:
    """Up to ``max_entries`` plans, the least recently used dropped first."""

    def __init__(self, max_entries: int = 16, mode: str | None = None):
        self.max_entries = max_entries
        self._mode = mode
        self._plans: OrderedDict[Hashable, _Template[Any]] = OrderedDict()
        self.built = self.reused = 0
        self.given_up = False  # a template failed (a Spark whose internals it does not know): plans are built
        self.why = ""  # the first line of that failure

    def _give_up(self, mode: str) -> None:
        """Build every plan from now on (verify mode: fail instead, so the tests see it). Called
        while handling the JVM's error, which a bare raise re-raises."""
        if mode == "verify":
            raise
        self._plans.clear()
        self.given_up = True
        self.why = (str(sys.exc_info()[1]).strip().splitlines() or [""])[0][:300]

    def frame(self, key: Hashable, leaves: Sequence[DataFrame], texts: Mapping[str, str],
              build: Callable[[], tuple[DataFrame, T]], cache: FrameCache) -> tuple[DataFrame, T]:
        """The frame ``build`` returns (with what it returns beside it) for ``leaves`` and fact
        ``texts`` (name -> text): built, or the plan built for ``key`` over these leaves and texts.
        ``leaves`` are checkpoints (``localCheckpoint``), the only data ``build`` reads; ``texts``
        every fact text it puts in the plan. What ``build`` persists through ``cache`` (frames
        its plan reads more than once) is persisted again over the new leaves."""
        spark = leaves[0].sparkSession
        mode = self._mode or os.environ.get("CDC_MONITOR_PLAN_REUSE", "on")
        if mode not in MODES:
            raise ValueError(f"CDC_MONITOR_PLAN_REUSE={mode}: use one of {', '.join(MODES)}")
        owner = _template_class(spark) if mode != "off" and not self.given_up else None
        if owner is None:
            self.built += 1
            return build()
        # the leaves' columns (types, nullability) shape the plan too
        key = (spark.sparkContext.applicationId, key, *[f._jdf.schema().json() for f in leaves])
        template = self._plans.get(key)
        if template is None:
            mark = len(cache.kept)
            frame, meta = build()
            self.built += 1
            kept = cache.kept[mark:]
            try:
                self._plans[key] = _Template(owner(frame._jdf, [f._jdf for f in kept]), [owner(f._jdf) for f in kept],
                                             [owner.leafId(f._jdf) for f in leaves], dict(texts), meta)
            except JVM_ERRORS:
                self._give_up(mode)
            while len(self._plans) > self.max_entries:
                self._plans.popitem(last=False)
            return frame, meta
        self._plans.move_to_end(key)
        swaps = {template.texts[name]: text for name, text in texts.items() if template.texts[name] != text}
        named = dict(zip(template.leaf_ids, [f._jdf for f in leaves], strict=True))
        try:
            # the frames it persisted, persisted again over the new leaves (first: the plan reads them from the cache)
            kept = [cache.hold(_frame(k.instantiate(spark._jsparkSession, named, swaps), spark))._jdf
                    for k in template.kept]
            jdf = template.jvm.instantiateOptimized(spark._jsparkSession, named, swaps, kept)
        except JVM_ERRORS:
            self._give_up(mode)
            self.built += 1
            return build()
        self.reused += 1
        if mode == "verify":
            fresh, _ = build()
            for stage, built, reused in (
                    ("analyzed", fresh._jdf.queryExecution().analyzed(), jdf.queryExecution().analyzed()),
                    ("optimized", owner.uncached(fresh._jdf), owner.uncached(jdf))):
                if not built.sameResult(reused):
                    raise PlanMismatch(f"the {stage} plan reused for {key[:2]!r} differs from the plan built for this "
                                       "window:\n" + _first_difference(built.canonicalized().treeString(),
                                                                       reused.canonicalized().treeString()))
        return _frame(jdf, spark), template.meta


def _first_difference(built: str, reused: str) -> str:
    for i, (a, b) in enumerate(zip(built.splitlines(), reused.splitlines(), strict=False)):
        if a != b:
            return f"line {i}: built  {a[:400]}\nline {i}: reused {b[:400]}"
    return "(one plan is longer)"


def _template_class(spark: Any) -> Any:
    """``cdcmonitor.PlanTemplate`` of the operator jar, or None where the JVM lacks it."""
    from py4j.java_gateway import JavaClass

    owner = spark._jvm.cdcmonitor.PlanTemplate
    return owner if isinstance(owner, JavaClass) else None


def _frame(jdf: Any, spark: Any) -> DataFrame:
    from pyspark.sql.classic.dataframe import DataFrame as ClassicFrame

    return ClassicFrame(jdf, spark)
