"""The suite's Kafka broker (tests/support/broker.py) draws its KRaft cluster id as Kafka does:
never a text StorageTool reads as an option."""

from __future__ import annotations

import base64
import uuid

from tests.support.broker import random_cluster_id


def _uuid_with_text_starting(char: str) -> uuid.UUID:
    """A UUID whose Kafka text (URL-safe base64) starts with ``char``."""
    first = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".index(char)
    return uuid.UUID(bytes=bytes([first << 2]) + bytes(range(1, 16)))


def test_an_id_starting_with_a_dash_or_reserved_is_drawn_again():
    dash, zero, fine = _uuid_with_text_starting("-"), uuid.UUID(int=0), _uuid_with_text_starting("_")
    drawn = iter([dash, zero, uuid.UUID(int=1), fine])
    assert random_cluster_id(lambda: next(drawn)) == base64.urlsafe_b64encode(fine.bytes).decode().rstrip("=")


def test_drawn_ids_are_kafka_uuid_texts_and_never_start_with_a_dash():
    ids = [random_cluster_id() for _ in range(2000)]  # the old draw: ~31 of 2000 started with "-"
    assert not [i for i in ids if i.startswith("-")]
    assert all(len(i) == 22 and len(base64.urlsafe_b64decode(i + "==")) == 16 for i in ids)
    assert len(set(ids)) == len(ids)
