"""JVM columns built once per process: the same column expression asked for again is the same JVM
object, with no round trip.

Every watch micro-batch (and every scan of a long-lived session) plans the checks again, and most
of what it builds is the same column expressions as the batch before: ~2,500 of a 1k-record
batch's ~4,000 py4j round trips built columns, window specifications and the lists that carry them.
Spark's columns and window specifications are immutable values (a column is converted to a
Catalyst expression, with fresh ids, each time a plan uses it), so a call that builds one from the
same inputs can return the object built the first time. ``install()`` memoises, per gateway:

- static calls of ``org.apache.spark.sql.functions`` (but those with a random seed or that take a
  DataFrame), ``org.apache.spark.sql.expressions.Window`` and ``cdcmonitor.Seqs`` (lists);
- any method called on a JVM object such a call returned (a column's ``and``, ``cast``, ``as``,
  ``over``, ``when``/``otherwise``; a window specification's ``orderBy``, ``rowsBetween``).

A call is memoised only when every argument is a scalar or a JVM object (a Python list or dict,
which py4j converts afresh, is not); a column built from a fresh object (a lambda variable, a data
type parsed again) is a miss, never a wrong hit, since py4j never reuses an object id. The memo holds
at most ``MAX_ENTRIES`` objects and starts over when full (a batch's facts are literals that change,
so some entries are used once).
"""

from __future__ import annotations

import os
from typing import Any

from py4j.java_gateway import JavaMember, JavaObject

PURE_CLASSES = frozenset({
    "z:org.apache.spark.sql.functions",
    "z:org.apache.spark.sql.expressions.Window",
    "z:cdcmonitor.Seqs",
})
# functions whose result differs from call to call (a seed drawn when built) or that take a frame
IMPURE = frozenset({"rand", "randn", "random", "randstr", "uniform", "uuid", "shuffle", "broadcast", "udf", "udaf",
                    "call_udf", "callUDF"})
MAX_ENTRIES = 50_000
_SCALARS = (str, int, float, bool)

_memo: dict[tuple[Any, ...], Any] = {}
_built: set[str] = set()  # ids of the JVM objects pure calls returned: their methods are pure too
_installed = False


class _NotPure(Exception):
    pass


def _arg(value: Any) -> Any:
    if value is None or type(value) in _SCALARS:
        return type(value), value
    if isinstance(value, JavaObject):
        return value._target_id
    raise _NotPure


def install() -> None:
    """Route py4j's method calls through the memo (idempotent)."""
    global _installed
    if _installed or os.environ.get("CDC_MONITOR_PURE_CALLS") == "off":
        return
    original = JavaMember.__call__

    def call(self: Any, *args: Any) -> Any:
        target = self.target_id
        if not (target in _built or (target in PURE_CLASSES and self.name not in IMPURE)):
            return original(self, *args)
        try:
            # the gateway client itself (not its id, which a later gateway could reuse once this one is gone)
            key = (self.gateway_client, target, self.name, *[_arg(a) for a in args])
        except _NotPure:
            return original(self, *args)
        out = _memo.get(key)
        if out is not None:
            return out
        out = original(self, *args)
        if isinstance(out, JavaObject):
            if len(_memo) >= MAX_ENTRIES:
                clear()
            _memo[key] = out
            _built.add(out._target_id)
        return out

    JavaMember.__call__ = call  # type: ignore[method-assign]
    _installed = True


def clear() -> None:
    _memo.clear()
    _built.clear()
