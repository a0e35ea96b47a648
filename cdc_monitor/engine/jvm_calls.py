"""Fewer driver round trips while building plans: PySpark's column functions look their JVM
function up by reflection on every call.

``F.when(...)``, ``F.col(...)`` and every other column function run
``getattr(getattr(jvm, "org.apache.spark.sql.functions"), name)`` and then call it: py4j asks the
JVM what the class is and what the member is (two round trips) before the call itself (a third).
The checks build the same few hundred functions again for every window and micro-batch, ~15k
round trips per watch micro-batch, each 0.2-2 ms on a small machine. ``install()`` keeps the
looked-up members, per gateway, so each later call is one round trip, and the JVM columns of
column names and scalar literals, which mean the same in every plan, so those cost none (nor a
release command when Python drops them). Nothing else changes: the same JVM functions build the
same expressions.
"""

from __future__ import annotations

from typing import Any

_members: dict[tuple[int, str], Any] = {}
_installed = False


def _member(sc: Any, owner: str, name: str) -> Any:
    """The JVM static member ``owner.name``, looked up once per gateway."""
    key = (id(sc._gateway), f"{owner}.{name}")
    member = _members.get(key)
    if member is None:
        member = _members[key] = getattr(getattr(sc._jvm, owner), name)
    return member


def _cached_function(name: str, sc: Any) -> Any:
    return _member(sc, "org.apache.spark.sql.functions", name)


# JVM columns of column names and scalar literals, per gateway: an unresolved column or a literal
# means the same in every plan, so one JVM object serves them all (no call, and no release later)
_values: dict[tuple[Any, ...], Any] = {}
_SCALARS = (str, int, float, bool, type(None))
MAX_VALUES = 20_000


def _value(sc: Any, function: str, value: Any) -> Any:
    key = (id(sc._gateway), function, type(value), value)
    jc = _values.get(key)
    if jc is None:
        jc = _cached_function(function, sc)(value)
        if len(_values) < MAX_VALUES:
            _values[key] = jc
    return jc


def _cached_column_from_name(name: str) -> Any:
    from pyspark.sql.classic.column import get_active_spark_context

    return _value(get_active_spark_context(), "col", name)


def _cached_column_from_literal(literal: Any) -> Any:
    from pyspark.sql.classic.column import enum_to_value, get_active_spark_context

    value = enum_to_value(literal)
    sc = get_active_spark_context()
    if type(value) in _SCALARS:
        return _value(sc, "lit", value)
    return _cached_function("lit", sc)(value)


def _wrap(original: Any, function: str, kinds: tuple[type, ...]) -> Any:
    """``F.col``/``F.lit`` over the value cache for values of ``kinds``; anything else as before."""
    def wrapper(value: Any) -> Any:
        from pyspark.sql.classic.column import Column, get_active_spark_context
        from pyspark.sql.utils import is_remote

        if is_remote():
            return original(value)
        if type(value) in kinds:
            return Column(_value(get_active_spark_context(), function, value))
        # Columns and lists of scalars as PySpark's lit takes them, without the import of
        # pyspark.testing.utils (and so of pandas, 0.28 s) it runs first on every call
        if function == "lit" and isinstance(value, Column):
            return value
        if function == "lit" and isinstance(value, list) and all(type(v) in kinds for v in value):
            from pyspark.sql.functions import array

            return array(*[wrapper(v) for v in value])
        return original(value)

    wrapper._cdc_monitor_cached = True  # type: ignore[attr-defined]
    wrapper.__doc__ = original.__doc__
    return wrapper


def _cached_func_op(name: str, self: Any) -> Any:
    from pyspark.sql.classic.column import Column, get_active_spark_context

    return Column(_cached_function(name, get_active_spark_context())(self._jc))


SEQ_ARITY = 32  # cdcmonitor.Seqs.of takes up to this many values (cdc_monitor/java/Seqs.java)
_seqs: dict[int, Any] = {}


def _seqs_of(sc: Any) -> Any:
    """``cdcmonitor.Seqs.of`` of the operator jar, or None where the JVM lacks it (Spark started
    without cdc-monitor's spark.jars): looked up once per gateway."""
    key = id(sc._gateway)
    if key not in _seqs:
        from py4j.java_gateway import JavaClass

        owner = sc._jvm.cdcmonitor.Seqs
        _seqs[key] = owner.of if isinstance(owner, JavaClass) else None
    return _seqs[key]


def _cached_to_seq(sc: Any, cols: Any, converter: Any = None) -> Any:
    """PySpark's ``_to_seq``: a list of up to SEQ_ARITY values in one round trip instead of one per
    element plus two (py4j builds a java.util.List element by element)."""
    if converter:
        cols = [converter(c) for c in cols]
    if len(cols) <= SEQ_ARITY and (of := _seqs_of(sc)) is not None:
        return of(*cols)
    return _member(sc, "PythonUtils", "toSeq")(cols)


def install() -> None:
    """Route PySpark's lookups (column functions, column names, literals, unary operators, lists
    of columns) through the cache (idempotent; a PySpark without these private hooks keeps its own)."""
    global _installed
    if _installed:
        return
    try:
        from pyspark.sql.classic import column
        from pyspark.sql.functions import builtin
    except ImportError:
        return
    if callable(getattr(builtin, "_get_jvm_function", None)):
        builtin._get_jvm_function = _cached_function
    import pyspark.sql.functions as functions

    for name, kinds in (("col", (str,)), ("lit", _SCALARS)):
        original = getattr(functions, name, None)
        if callable(original) and not getattr(original, "_cdc_monitor_cached", False):
            wrapped = _wrap(original, name, kinds)
            setattr(functions, name, wrapped)
            setattr(builtin, name, wrapped)
    if not all(hasattr(column, name) for name in ("get_active_spark_context", "enum_to_value", "Column")):
        _installed = True
        return
    for name, cached in (("_create_column_from_name", _cached_column_from_name),
                         ("_create_column_from_literal", _cached_column_from_literal), ("_func_op", _cached_func_op),
                         ("_to_seq", _cached_to_seq)):
        if callable(getattr(column, name, None)):
            setattr(column, name, cached)
    try:  # imported by name at its module's top
        from pyspark.sql.classic import dataframe
    except ImportError:
        dataframe = None
    if dataframe is not None and callable(getattr(dataframe, "_to_seq", None)):
        dataframe._to_seq = _cached_to_seq
    _installed = True


def round_trips() -> int:
    """py4j commands the calling thread has sent so far (for budgets and benchmarks; other threads,
    such as a streaming query's, send their own)."""
    import threading

    return _sent.get(threading.get_ident(), 0)


_sent: dict[int, int] = {}


def count_round_trips() -> None:
    """Count every py4j command, per thread (``round_trips()``)."""
    import threading

    from py4j import clientserver

    original = clientserver.ClientServerConnection.send_command
    if getattr(original, "_counted", False):
        return

    def send_command(self: Any, command: str) -> Any:
        thread = threading.get_ident()
        _sent[thread] = _sent.get(thread, 0) + 1
        return original(self, command)

    send_command._counted = True  # type: ignore[attr-defined]
    clientserver.ClientServerConnection.send_command = send_command  # type: ignore[method-assign]


class _NumpyOnly:
    """One of PySpark's py4j input converters for numpy values, asked only about numpy objects.
    PySpark's own ``can_convert`` runs ``from pyspark.testing.utils import have_numpy`` for every
    argument of every JVM call, and that module imports pandas: 0.28 s of a cold scan's start, in
    a process that never passes a numpy value. numpy values still convert as before."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def can_convert(self, obj: Any) -> bool:
        return type(obj).__module__.startswith("numpy") and self.inner.can_convert(obj)

    def convert(self, obj: Any, gateway_client: Any) -> Any:
        return self.inner.convert(obj, gateway_client)


NUMPY_CONVERTERS = ("NumpyScalarConverter", "NumpyArrayConverter")


def numpy_converters_on_demand() -> None:
    """Wrap PySpark's numpy converters in py4j's list (idempotent; pyspark.sql.types registers them)."""
    import pyspark.sql.types  # noqa: F401  (registers the converters)
    from py4j import protocol

    protocol.INPUT_CONVERTER[:] = [
        _NumpyOnly(c) if type(c).__name__ in NUMPY_CONVERTERS else c for c in protocol.INPUT_CONVERTER]
