"""Rebuild ``seed_events.json`` from the seed documents (run by hand, not by the tests).

    python tests/golden/seeds/build_fixtures.py ../shared/seeds

Every JSON example of a change event, key, transaction marker or schema-change message in the
five seed documents becomes one record. The documents annotate JSON with callout numbers
(``"op": "c", 6`` / ``--> 3``) and elide parts (``"schema": { ... }``); those are the only
edits, each listed in the case's ``edits``. Two examples are not valid JSON as printed (seed
003's key lacks a comma, seed 004's key has a trailing comma): they are kept verbatim, so they
must fail to decode as JSON (``decode_error`` ``json``, the ``invalid_json`` finding), and a
repaired copy is added beside them.
The ``expected`` blocks in the output are written by hand and kept on rebuild.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).parent
OUT = HERE / "seed_events.json"


def blocks(text: str) -> dict[int, str]:
    lines = text.split("\n")
    out, cur, start = {}, None, 0
    for i, line in enumerate(lines):
        if cur is None and line.rstrip() == "{":
            cur, start = [line], i + 1
        elif cur is not None:
            cur.append(line)
            if line.rstrip() == "}":
                out[start] = "\n".join(cur)
                cur = None
    return out


def strip_callouts(text: str) -> str:
    text = re.sub(r'([{\[,"\d])[ \t]+(-->[ \t]*)?\d+[ \t]*$', r"\1", text, flags=re.M)
    return re.sub(r"\{[ \t]*<>", "{", text)


def fill(text: str, schema: str | None) -> tuple[str, list[str]]:
    edits = []
    if schema == "drop":
        payload = re.search(r'"payload":\s*(\{.*\})\s*\}\s*$', text, flags=re.S)
        return payload.group(1), ['"schema": { ... } dropped (the example\'s source differs from the create\'s schema): '
                                  "the payload alone, as with schemas disabled"]
    if re.search(r'"schema":\s*\{\s*(\.\.\.)?\s*\}', text):
        text = re.sub(r'"schema":\s*\{\s*(\.\.\.)?\s*\}', lambda _: '"schema": ' + schema, text)
        edits.append('"schema": { ... } replaced by the schema of the same table\'s create example')
    if re.search(r'"source":\s*\{\s*\.\.\.\s*\}', text):
        text = re.sub(r'"source":\s*\{\s*\.\.\.\s*\}', '"source": {}', text)
        edits.append('"source": { ... } replaced by {}')
    if "...\n" in text and '"snapshot":"incremental"' in text:
        text = text.replace("...\n", "")
        edits.append("the elided source fields (...) dropped")
    return text, edits


def main(seed_dir: str) -> None:
    seeds = {p.name[:3]: p.read_text() for p in Path(seed_dir).glob("0*.txt")}
    b = {k: blocks(v) for k, v in seeds.items()}

    def block(seed: str, line: int) -> str:
        return strip_callouts(b[seed][line])

    def schema_of(seed: str, line: int) -> str:
        return json.dumps(json.loads(block(seed, line))["schema"])

    previous = {c["name"]: c.get("expected") for c in json.loads(OUT.read_text())} if OUT.exists() else {}
    cases = []

    def add(name, seed, line, topic, key, value, edits=(), schema=None, offset=None):
        value_text, value_edits = fill(block(seed, line), schema) if line else (value, [])
        if line and seed == "002" and line == 1340:  # a stray "}," after the elided schema
            value_text = value_text.replace("},\n  },", "},", 1)
            value_edits.append('a stray "}," after the elided schema removed')
        cases.append({
            "name": name, "seed": seed, "line": line, "topic": topic, "partition": 0,
            "offset": len(cases) if offset is None else offset, "key": key,
            "value": value_text,
            "edits": [*edits, *value_edits], "expected": previous.get(name),
        })

    def key_with(line_seed: str, line: int, field: str, value: int) -> str:
        key = json.loads(block(line_seed, line))
        key["payload"][field] = value
        return json.dumps(key)

    rekeyed = ["key: the key example's payload set to the id of the row this value describes"]
    ora_key = json.dumps(json.loads(block("000", 34)))
    ora_schema = schema_of("000", 99)
    add("oracle_create", "000", 99, "server1.DEBEZIUM.CUSTOMERS", ora_key, None)
    add("oracle_update", "000", 281, "server1.DEBEZIUM.CUSTOMERS", ora_key, None, schema=ora_schema)
    add("oracle_delete", "000", 336, "server1.DEBEZIUM.CUSTOMERS", ora_key, None, schema=ora_schema)
    add("oracle_truncate", "000", 382, "server1.DEBEZIUM.CUSTOMERS", None, None, schema="drop")
    my_key = key_with("001", 79, "id", 1004)
    my_schema = schema_of("001", 154)
    add("mysql_create", "001", 154, "mysql-server-1.inventory.customers", my_key, None, edits=rekeyed)
    add("mysql_update", "001", 430, "mysql-server-1.inventory.customers", my_key, None, schema=my_schema, edits=rekeyed)
    add("mysql_delete", "001", 531, "mysql-server-1.inventory.customers", my_key, None, schema=my_schema, edits=rekeyed)
    add("mysql_truncate", "001", 623, "mysql-server-1.inventory.customers", None, None, schema=my_schema)
    ss_key = key_with("002", 928, "id", 1005)
    ss_schema = schema_of("002", 1001)
    add("sqlserver_schema_change", "002", 659, "server1", json.dumps(json.loads(block("002", 830))), None,
        schema='{"type": "struct", "optional": false, "name": "io.debezium.connector.sqlserver.SchemaChangeValue"}')
    cases[-1]["edits"] = ['"schema": { ... } replaced by a minimal SchemaChangeValue schema']
    add("sqlserver_create", "002", 1001, "server1.testDB.dbo.customers", ss_key, None, edits=rekeyed)
    add("sqlserver_update", "002", 1252, "server1.testDB.dbo.customers", ss_key, None, schema=ss_schema, edits=rekeyed)
    add("sqlserver_delete", "002", 1340, "server1.testDB.dbo.customers", ss_key, None, schema=ss_schema, edits=rekeyed)
    add("sqlserver_tombstone", "002", None, "server1.testDB.dbo.customers", ss_key, None,
        edits=["the tombstone the text describes after a delete: same key, null value", *rekeyed])
    add("sqlserver_incremental_snapshot", "002", 366, "server1.testDB.dbo.products", '{"pk": "1"}', None)
    add("sqlserver_begin", "002", 1445, "server1.transaction", '{"id": "00000025:00000d08:0025"}', None)
    add("sqlserver_end", "002", 1453, "server1.transaction", '{"id": "00000025:00000d08:0025"}', None)
    add("sqlserver_enriched_event", "002", 1485, "server1.testDB.dbo.tablea", '{"pk": "2"}', None)
    bad_dtle_key = b["003"][25]
    add("dtle_key_as_printed", "003", None, "dbserver1.inventory.customers", bad_dtle_key, None,
        edits=["none: the printed key lacks a comma after \"name\" and is kept verbatim"])
    good_dtle_key = bad_dtle_key.replace('"dbserver1.inventory.customers.Key"\n', '"dbserver1.inventory.customers.Key",\n')
    add("dtle_create", "003", 52, "dbserver1.inventory.customers", json.dumps(json.loads(good_dtle_key)), None,
        edits=["key: the missing comma after \"name\" added"])
    add("dtle_schema_change", "003", 228, "dtle.schema-changes", None, None)
    add("bmdb_begin", "004", 161, "dbserver1.transaction", '{"id": "571"}', None)
    add("bmdb_end", "004", 168, "dbserver1.transaction", '{"id": "571"}', None)
    add("bmdb_enriched_event", "004", 197, "dbserver1.s1.a", '{"pk": "2"}', None)
    bad_yb_key = strip_callouts(b["004"][273])
    add("bmdb_key_as_printed", "004", None, "dbserver1.public.customers", bad_yb_key, None,
        edits=["callout numbers removed; the trailing comma after payload kept, so the key is not JSON"])
    yb_key = json.dumps(json.loads(bad_yb_key.replace("  },\n}", "  }\n}")))
    yb_schema = schema_of("004", 328)
    add("bmdb_create", "004", 328, "dbserver1.public.customers", yb_key, None,
        edits=["key: the trailing comma after payload removed"])
    add("bmdb_update", "004", 550, "dbserver1.public.customers", yb_key, None, schema=yb_schema)
    add("bmdb_delete", "004", 643, "dbserver1.public.customers", yb_key, None, schema=yb_schema)
    OUT.write_text(json.dumps(cases, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {len(cases)} cases to {OUT}")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else str(HERE.parents[3] / "shared" / "seeds"))
