"""Pure (no Spark): a value's *shape* and the embedded-schema rules judged on it.

A shape is the text Spark's ``schema_of_variant`` gives for a parsed JSON value, for example
``OBJECT<after: OBJECT<id: BIGINT, name: STRING>, before: VOID, op: STRING>`` (names that are
not plain identifiers are back-quoted, with back-quotes doubled). Records of one embedded
schema take few distinct shapes (which fields are null or absent, which JSON type each value
has), so the schema check groups records by (schema, shape) in Spark and judges every distinct
pair here, once, instead of evaluating per-schema expressions on every record.

What a shape cannot tell: the magnitude of an integer (every JSON integer is ``BIGINT``), so an
int8/int16/int32 value outside its range is not reported; a number beyond int64 is (``DECIMAL``).
Fields of struct elements of arrays are judged on the elements' merged shape: a field null or
absent in every element is found, one null among non-null values is not (the merge hides it).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from cdc_monitor.checks.connect_schema import ARRAY_ITEMS, FieldCheck


@dataclass(frozen=True)
class Shape:
    kind: str  # OBJECT, ARRAY, BIGINT, DECIMAL, DOUBLE, STRING, BOOLEAN, VOID, VARIANT, ...
    fields: dict[str, Shape] = field(default_factory=dict)  # OBJECT only
    element: Shape | None = None  # ARRAY only


class ShapeSyntaxError(ValueError):
    pass


def parse_shape(text: str) -> Shape:
    parser = _Parser(text)
    shape = parser.type_()
    if parser.i != len(text):
        raise ShapeSyntaxError(f"unexpected {text[parser.i:parser.i + 20]!r} at {parser.i} in shape")
    return shape


class _Parser:
    def __init__(self, text: str):
        self.text, self.i = text, 0

    def expect(self, token: str) -> None:
        if not self.text.startswith(token, self.i):
            raise ShapeSyntaxError(f"expected {token!r} at {self.i} in shape {self.text[:60]!r}")
        self.i += len(token)

    def name(self) -> str:
        t = self.text
        if t.startswith("`", self.i):
            out, j = [], self.i + 1
            while j < len(t):
                if t[j] == "`":
                    if t.startswith("``", j):
                        out.append("`")
                        j += 2
                        continue
                    self.i = j + 1
                    return "".join(out)
                out.append(t[j])
                j += 1
            raise ShapeSyntaxError("unterminated back-quoted name in shape")
        end = t.find(":", self.i)
        if end < 0:
            raise ShapeSyntaxError(f"expected a field name at {self.i} in shape")
        name, self.i = t[self.i:end], end
        return name

    def type_(self) -> Shape:
        m = re.compile(r"[A-Z_]+").match(self.text, self.i)
        if not m:
            raise ShapeSyntaxError(f"expected a type at {self.i} in shape {self.text[:60]!r}")
        kind, self.i = m.group(0), m.end()
        if kind == "OBJECT":
            self.expect("<")
            fields: dict[str, Shape] = {}
            while not self.text.startswith(">", self.i):
                if fields:
                    self.expect(", ")
                name = self.name()
                self.expect(": ")
                fields[name] = self.type_()
            self.expect(">")
            return Shape("OBJECT", fields=fields)
        if kind == "ARRAY":
            self.expect("<")
            element = self.type_()
            self.expect(">")
            return Shape("ARRAY", element=element)
        if self.text.startswith("(", self.i):  # DECIMAL(p,s), when Spark did not drop the precision
            self.i = self.text.index(")", self.i) + 1
        return Shape(kind)


def _at(shape: Shape | None, path: tuple[str, ...]) -> Shape | None:
    """The value at ``path`` below ``shape`` (None when absent: a missing field, or a non-object on the way)."""
    node = shape
    for name in path:
        if node is not None and node.kind == "ARRAY" and name == ARRAY_ITEMS:
            node = node.element  # the elements' merged shape: a field null in every element is VOID
            continue
        if node is None or node.kind != "OBJECT":
            return None
        node = node.fields.get(name)
    return node


def _is_null(node: Shape | None) -> bool:
    return node is None or node.kind == "VOID"


def field_problems(checks: list[FieldCheck], payload: Shape) -> tuple[list[str], list[str]]:
    """(paths of null/absent non-optional fields, paths of values of a type the schema does not
    allow), judged on the payload's shape. A field is judged only when its parent is present and
    not null; a wrapped value (``{"value": x}``, FieldCheck.unwrap) is judged by ``x``."""
    nulls: list[str] = []
    types: list[str] = []
    for c in checks:
        parent = _at(payload, c.path[:-1]) if len(c.path) > 1 else payload
        if _is_null(parent) or (ARRAY_ITEMS in c.path and parent is not None and parent.kind != "OBJECT"):
            continue  # (elements of mixed shapes merge into VARIANT: their fields cannot be told)
        node = _at(payload, c.path)
        if c.unwrap and node is not None and node.kind == "OBJECT":
            node = node.fields.get("value")
        if _is_null(node):
            if not c.optional:
                nulls.append(c.dotted)
            continue
        assert node is not None
        if c.allowed and node.kind not in c.allowed:
            types.append(c.dotted)
    return nulls, types
