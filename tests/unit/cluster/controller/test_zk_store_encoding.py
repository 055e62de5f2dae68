"""The controller's own multi encoding (zk_store.encode_multi) against
kazoo's: the same operations must give the same bytes, and a response must
decode to what kazoo's Transaction would answer."""

import logging
import struct

import pytest
from kazoo.client import TransactionRequest
from kazoo.exceptions import BadVersionError, NoNodeError, RolledBackError, RuntimeInconsistency
from kazoo.protocol.serialization import Transaction
from kazoo.security import ACL, Id, OPEN_ACL_UNSAFE

from kafkactl.cluster.controller.zk_store import (
    Create, Delete, EncodedMulti, SetData, _add, decode_multi_response, encode_multi,
)
from kafkactl.cluster.zk import codecs, layout
from kafkactl.cluster.zk.codecs import PartitionState


class _Client:
    """What kazoo's TransactionRequest reads from its client."""

    def __init__(self, chroot: str, default_acl=None) -> None:
        self.chroot = chroot
        self.default_acl = default_acl
        self.logger = logging.getLogger("kazoo.client")


def kazoo_bytes(ops, version: int, chroot: str = "", default_acl=None) -> bytes:
    transaction = TransactionRequest(_Client(chroot, default_acl))
    transaction.check(layout.CONTROLLER_EPOCH, version)
    for op in ops:
        _add(transaction, op)
    return bytes(Transaction(transaction.operations).serialize())


STATE = codecs.encode_partition_state(PartitionState(3, 7, [3, 1], 5, 0))
OPS = [
    SetData(layout.partition_state("t", 0), STATE, 4),
    SetData(layout.partition_state("tópico-ü", 12), STATE, 0),     # non-ASCII path
    SetData("/data", b"", -1),                                       # empty data, any version
    Create(layout.partition_state("t", 1), STATE),
    Create("/isr_change_notification/isr_change_", b"x", sequential=True),
    Create("/empty"),
    Delete("/admin/delete_topics/t"),
    Delete("/p/9", 3),
]


@pytest.mark.parametrize("chroot", ["", "/kafka", "/a/b"])
def test_the_bytes_are_kazoos(chroot):
    assert encode_multi(OPS, 17, chroot) == kazoo_bytes(OPS, 17, chroot)
    assert encode_multi([], 0, chroot) == kazoo_bytes([], 0, chroot)


def test_a_thousand_state_updates_are_kazoos_bytes():
    ops = [SetData(layout.partition_state("topic", p), STATE, p % 7) for p in range(1000)]
    assert encode_multi(ops, 3, "/chroot") == kazoo_bytes(ops, 3, "/chroot")


def test_paths_kazoo_normalizes_are_normalized_the_same_way():
    odd = [SetData("/a//b", b"1"), Delete("/trailing/"), SetData("relative", b"2"), Create("/.hidden")]
    for chroot in ("", "/root"):
        assert encode_multi(odd, 1, chroot) == kazoo_bytes(odd, 1, chroot)


def test_the_clients_default_acl_is_used_for_creates():
    acl = [ACL(31, Id("digest", "user:hash")), ACL(1, Id("world", "anyone"))]
    ops = [Create("/x", b"1")]
    assert encode_multi(ops, 2, "", acl) == kazoo_bytes(ops, 2, "", acl)
    assert encode_multi(ops, 2, "", acl) != encode_multi(ops, 2, "", OPEN_ACL_UNSAFE)


def test_anything_else_is_refused():
    with pytest.raises(TypeError):
        encode_multi(["not an op"], 1)


def _response(*parts: bytes) -> bytes:
    return b"".join(parts) + struct.pack(">iBi", -1, True, -1)


def _header(kind: int) -> bytes:
    return struct.pack(">iBi", kind, False, 0)


def _stat(version: int) -> bytes:
    return struct.pack(">qqqqiiiqiiq", 1, 2, 3, 4, version, 6, 7, 0, 9, 10, 11)


def test_a_response_decodes_as_kazoo_answers_it():
    ok = _response(_header(13), _header(5), _stat(42), _header(1), struct.pack(">i", 4) + b"/a/b",
                   _header(2))
    assert decode_multi_response(ok, 0) == [True, 42, "/a/b", True]
    kazoo = Transaction.deserialize(ok, 0)
    assert kazoo[0] is True and kazoo[1].version == 42 and kazoo[2] == "/a/b" and kazoo[3] is True

    def error(code: int) -> bytes:
        return _header(-1) + struct.pack(">i", code)

    failed = _response(error(0), error(BadVersionError.code), error(RuntimeInconsistency.code))
    decoded = decode_multi_response(failed, 0)
    assert [type(e) for e in decoded] == [RolledBackError, BadVersionError, RuntimeInconsistency]
    assert [type(e) for e in Transaction.deserialize(failed, 0)] == [type(e) for e in decoded]
    assert isinstance(decode_multi_response(_response(error(NoNodeError.code)), 0)[0], NoNodeError)


def test_the_request_object_serves_kazoos_queue():
    request = EncodedMulti(encode_multi(OPS, 1), len(OPS))
    assert request.type == Transaction.type == 14
    assert request.serialize() == kazoo_bytes(OPS, 1)
    assert "8 operations" in repr(request)
    assert request.deserialize(_response(_header(13)), 0) == [True]


def test_the_controllers_topic_write_keeps_partitions_it_does_not_know_yet():
    from kafkactl.cluster.controller.zk_port import keep_added_partitions
    from kafkactl.cluster.zk.codecs import TopicAssignment

    ours = TopicAssignment({0: [2, 3, 1]}, "id-a", adding_replicas={0: [3]}, removing_replicas={0: [1]})
    # A tool added partition 1; its view of partition 0 is older: ours wins there.
    merged = keep_added_partitions(ours, TopicAssignment({0: [1, 2], 1: [3, 1]}, "id-a"))
    assert merged == TopicAssignment({0: [2, 3, 1], 1: [3, 1]}, "id-a", {0: [3]}, {0: [1]})
    assert keep_added_partitions(ours, TopicAssignment({0: [1, 2]}, "id-a")) is ours
    assert keep_added_partitions(ours, None) is ours
    # Another incarnation of the topic: nothing of it is taken.
    assert keep_added_partitions(ours, TopicAssignment({0: [1], 1: [1]}, "id-b")) is ours
