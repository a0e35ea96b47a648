"""Avro with a Schema Registry, end to end: traffic serialized by confluent-kafka's AvroSerializer
(schemas registered through its SchemaRegistryClient, as Debezium's Avro converter does) into
Apache Kafka, scanned from Kafka with --schema-registry; the same records as JSON and as Avro-JSON text
give the same findings. The registry is a loopback server speaking the registry's REST API."""

from __future__ import annotations

import collections
import dataclasses
import json

import pytest
from click.testing import CliRunner

from cdc_monitor.cli.main import cli
from cdc_monitor.generator import generate
from cdc_monitor.generator.kcat_writer import label_dicts, write_capture
from cdc_monitor.generator.produce import produce_traffic
from cdc_monitor.generator.wire_faults import AVRO_WIRE_RULES
from cdc_monitor.sources.kafka.options import KafkaOptions
from tests.registry_server import RegistryServer

FLAVOURS = ("postgresql", "sqlserver")  # MySQL Avro: the generator and decoder share every code path with these
pytestmark = pytest.mark.xdist_group("avro")  # one worker builds the Avro world (broker, registry) once
PREFIX = "avro"


def _key(d: dict) -> tuple:
    return (d["rule"], d["topic"], d["partition"], d["offset"], d["key"], d["txn_id"])


BAD_TOPIC = "avrobad.inventory.items"  # registry schemas that are not Debezium's


def _produce_bad_topic(bootstrap: str, url: str) -> None:
    """Records whose registry schemas are wrongly named, the value one without op (as a hand-made producer might)."""
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    value_schema = {"type": "record", "name": "Item", "namespace": "shop", "fields": [
        {"name": "before", "type": ["null", "string"], "default": None},
        {"name": "after", "type": ["null", "string"], "default": None},
        {"name": "source", "type": {"type": "record", "name": "Src", "fields": [{"name": "ts_ms", "type": "long"}]}}]}
    key_schema = {"type": "record", "name": "Key", "namespace": BAD_TOPIC, "fields": [{"name": "id", "type": "int"}]}
    client = SchemaRegistryClient({"url": url})
    ser_v, ser_k = AvroSerializer(client, json.dumps(value_schema)), AvroSerializer(client, json.dumps(key_schema))
    producer = Producer({"bootstrap.servers": bootstrap})
    for i in range(3):
        producer.produce(BAD_TOPIC, key=ser_k({"id": i}, SerializationContext(BAD_TOPIC, MessageField.KEY)),
                         value=ser_v({"before": None, "after": "x", "source": {"ts_ms": 1_767_225_600_000 + i}},
                                     SerializationContext(BAD_TOPIC, MessageField.VALUE)), timestamp=1_767_225_600_500 + i)
    assert producer.flush(10) == 0


@pytest.fixture(scope="module")
def avro_world(kafka_broker, tmp_path_factory):
    """Faulty Avro traffic of two flavours in Apache Kafka (and a topic whose schemas are not Debezium's); the
    same records as JSON and Avro-JSON captures."""
    root = tmp_path_factory.mktemp("avro")
    with RegistryServer() as registry:
        labels: list[dict] = []
        for i, flavour in enumerate(FLAVOURS):
            traffic = generate(flavour, events=200, seed=300 + i, faults=True, fault_repeats=1, heartbeats=True, value_format="avro",
                               server=f"{PREFIX}{i}_{flavour}")
            produce_traffic(traffic, KafkaOptions.from_options({"kafka.bootstrap.servers": kafka_broker}),
                            registry={"url": registry.url})
            labels += label_dicts(traffic)  # offsets are the broker's now
            write_capture(dataclasses.replace(traffic, value_format="json"), root / "json" / f"{flavour}.jsonl")
            write_capture(dataclasses.replace(traffic, value_format="avro-json"), root / "avro-json" / f"{flavour}.jsonl")
        _produce_bad_topic(kafka_broker, registry.url)
        yield {"registry": registry, "labels": labels, "root": root, "bootstrap": kafka_broker}


@pytest.fixture(scope="module")
def json_twin(avro_world, scan):
    """The same records as the JSON converter writes them (schemas off), scanned."""
    return scan([avro_world["root"] / "json"])


def _cli_scan(*args: str, report) -> tuple[int, dict, str]:
    run = CliRunner().invoke(cli, ["scan", *args, "--output", "json", "--report-file", str(report), "--max-findings",
                                   "100000", "--quiet"])
    return run.exit_code, (json.loads(report.read_text()) if report.exists() else {}), run.output


def test_avro_from_kafka_and_avro_json_equal_their_json_twin(avro_world, json_twin, scan, tmp_path):
    code, report, output = _cli_scan("--bootstrap-servers", avro_world["bootstrap"], "--topics",
                                     rf"{PREFIX}\d_.*|avrobad\..*", "--schema-registry", avro_world["registry"].url,
                                     report=tmp_path / "avro.json")
    assert code == 1, output
    labels = avro_world["labels"]
    generated = [f for f in report["findings"] if f["topic"] != BAD_TOPIC]
    found = collections.Counter(_key(f) for f in generated)
    expected = collections.Counter(_key(lab) for lab in labels)
    assert found == expected, {"missed": sorted(expected - found)[:10], "extra": sorted(found - expected)[:10]}
    assert {lab["rule"] for lab in labels} >= set(AVRO_WIRE_RULES)
    assert report["inputs"]["schema_registry"] == avro_world["registry"].url
    # the report's schema versions are the registry's ids, per topic
    pg = f"{PREFIX}{FLAVOURS.index('postgresql')}_postgresql.public."
    versions = {s["topic"]: s for s in report["schemas"] if s["topic"].startswith(pg)}
    assert versions and all(s["value_schemas"] == 1 and s["registry_ids"]["value"] for s in versions.values())
    registered = avro_world["registry"].registry.subjects
    for topic, s in versions.items():
        assert s["registry_ids"]["value"] == registered[f"{topic}-value"]
        assert s["registry_ids"]["key"] == registered[f"{topic}-key"]

    # the same records written by the JSON converter (schemas off): the same findings, but the wire-format ones
    twin_found = collections.Counter(_key(f) for f in json_twin.findings)
    avro_found = collections.Counter(_key(f) for f in generated if f["rule"] not in AVRO_WIRE_RULES)
    assert twin_found == avro_found
    assert json_twin.summary["invalid_records"] == 0
    assert report["summary"]["invalid_records"] == sum(1 for lab in labels if lab["rule"] in AVRO_WIRE_RULES)

    # a topic whose registry schemas are not Debezium's: judged once per topic and schema id
    bad = collections.defaultdict(list)
    for f in report["findings"]:
        if f["topic"] == BAD_TOPIC:
            bad[f["rule"]].append(f["message"])
    value_id = registered[f"{BAD_TOPIC}-value"][0]
    assert bad["avro_schema_name"] == [  # the key's name is right
        f"schema id {value_id}: value schema is named shop.Item, Debezium names it {BAD_TOPIC}.Envelope"]
    assert bad["avro_envelope_fields"] == [f"schema id {value_id}: value schema shop.Item has no op: not a Debezium envelope"]
    assert len(bad["op_missing"]) == 3  # its records decode: every check judges them

    # kcat -s avro / kafka-avro-console-consumer text: unions unwrapped, bytes as the JSON converter writes them
    avro_json = scan([avro_world["root"] / "avro-json"], avro_json=True)
    assert avro_json.summary["invalid_records"] == 0
    assert collections.Counter(_key(f) for f in avro_json.findings) == collections.Counter(_key(f) for f in json_twin.findings)
    assert avro_json.lag == json_twin.lag
    assert avro_json.transactions == json_twin.transactions
    # without the flag each record is recognised (one note per topic: tests/test_avro_json.py); with
    # --no-avro-json the same text is read as plain JSON: its union wrappers hide the rows and ts_ms
    recognised = scan([avro_world["root"] / "avro-json"])
    assert collections.Counter(_key(f) for f in recognised.findings if f["rule"] != "avro_json_values") == \
        collections.Counter(_key(f) for f in json_twin.findings)
    tail = tmp_path / "tail.jsonl"  # streaming changes: their ts_ms is a union ({"long": ...})
    lines = (avro_world["root"] / "avro-json" / f"{FLAVOURS[-1]}.jsonl").read_text().split("\n")[-81:]
    tail.write_text("\n".join(lines))
    assert sum('"op": "u"' in line for line in lines) > 10
    assert sum(r["count"] for r in scan([tail], avro_json=False).lag) == 0 < sum(r["count"] for r in avro_json.lag)


def test_registry_down_or_refusing_is_exit_2_before_spark(kafka_broker, tmp_path, monkeypatch):
    run = CliRunner().invoke(cli, ["scan", "--bootstrap-servers", kafka_broker, "--schema-registry", "http://127.0.0.1:9"])
    assert run.exit_code == 2
    assert "schema registry at http://127.0.0.1:9 is unreachable" in run.output
    assert "check --schema-registry" in run.output and len(run.output.strip().splitlines()) == 1
    assert "starting Spark" not in run.output  # refused before Spark starts
    with RegistryServer(user_info="monitor:s3cret") as registry:
        refused = CliRunner().invoke(cli, ["scan", "--bootstrap-servers", kafka_broker, "--schema-registry", registry.url])
        assert refused.exit_code == 2 and "refused the credentials (HTTP 401)" in refused.output
        monkeypatch.setenv("CDC_MONITOR_SCHEMA_REGISTRY_BASIC_AUTH_USER_INFO", "monitor:s3cret")
        from cdc_monitor.avro.registry import RegistryClient, RegistrySettings
        from cdc_monitor.config import load_config

        settings = RegistrySettings.from_conf(load_config(None).schema_registry | {"url": registry.url})
        RegistryClient(settings).check()  # accepted with the credentials from the environment
        assert registry.registry.requests[-1][2].startswith("Basic ")
        assert "s3cret" not in repr(settings)
    creds = CliRunner().invoke(cli, ["scan", "x.jsonl", "--schema-registry", "http://u:p@127.0.0.1:9"])
    assert creds.exit_code == 2 and "holds credentials" in creds.output
