"""The pure shape parser and the schema rules judged on shapes (no Spark)."""

import pytest

from cdc_monitor.checks.connect_schema import compile_schema
from cdc_monitor.checks.variant_shape import Shape, ShapeSyntaxError, field_problems, parse_shape

ENVELOPE = {
    "type": "struct",
    "fields": [
        {"field": "before", "type": "struct", "optional": True, "fields": [
            {"field": "id", "type": "int32", "optional": False},
            {"field": "note", "type": "string", "optional": True}]},
        {"field": "after", "type": "struct", "optional": True, "fields": [
            {"field": "id", "type": "int32", "optional": False},
            {"field": "note", "type": "string", "optional": True}]},
        {"field": "source", "type": "struct", "optional": False, "fields": [
            {"field": "db", "type": "string", "optional": False}]},
        {"field": "op", "type": "string", "optional": False},
    ],
}
CHECKS = compile_schema(ENVELOPE)


def test_parses_nested_objects_arrays_decimals_and_quoted_names():
    shape = parse_shape(
        "OBJECT<``: BIGINT, ```tick`: BIGINT, `a b`: DECIMAL(21,1), `e:f`: OBJECT<x: BOOLEAN>, "
        "f: OBJECT<>, `g<h>`: ARRAY<VARIANT>, z: ARRAY<VOID>>")
    assert set(shape.fields) == {"", "`tick", "a b", "e:f", "f", "g<h>", "z"}
    assert shape.fields["a b"].kind == "DECIMAL"
    assert shape.fields["e:f"].fields["x"] == Shape("BOOLEAN")
    assert shape.fields["f"] == Shape("OBJECT")
    assert shape.fields["g<h>"].element == Shape("VARIANT")


@pytest.mark.parametrize("text", ["OBJECT<a: BIGINT", "OBJECT<a BIGINT>", "lower", "BIGINT trailing", "OBJECT<`a: X>"])
def test_malformed_shapes_are_refused(text):
    with pytest.raises(ShapeSyntaxError):
        parse_shape(text)


def test_a_conforming_update_has_no_problems():
    shape = parse_shape("OBJECT<after: OBJECT<id: BIGINT, note: VOID>, before: OBJECT<id: BIGINT, note: STRING>, "
                        "op: STRING, source: OBJECT<db: STRING>>")
    assert field_problems(CHECKS, shape) == ([], [])


def test_null_and_absent_required_fields_under_present_parents():
    # before is null: its fields are not judged; after.id absent; source.db null; op absent
    shape = parse_shape("OBJECT<after: OBJECT<note: STRING>, before: VOID, source: OBJECT<db: VOID>>")
    assert field_problems(CHECKS, shape) == (["after.id", "source.db", "op"], [])


def test_wrong_types_and_wrapped_values():
    # after.id wrapped as {"value": "x"} (seed 004 style) is judged by the wrapped value
    shape = parse_shape("OBJECT<after: OBJECT<id: OBJECT<value: STRING>, note: BIGINT>, op: BIGINT, "
                        "source: STRING>")
    nulls, types = field_problems(CHECKS, shape)
    assert types == ["after.id", "after.note", "source", "op"]
    assert nulls == ["source.db"]  # its parent is present (a string), so the field counts as absent
