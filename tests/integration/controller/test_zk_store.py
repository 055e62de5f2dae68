"""The controller's ZooKeeper store against a real ZooKeeper."""

from __future__ import annotations

import time

import pytest
from kazoo.exceptions import BadVersionError

from kafkactl.cluster.controller.zk_store import (
    ControllerMovedError, Create, Delete, SetData, ZkControllerStore,
)
from kafkactl.cluster.zk import client as zk_client
from kafkactl.cluster.zk import codecs, layout


@pytest.fixture
def clients(zk_chroot):
    made = []

    def connect():
        client = zk_client.connect(zk_chroot, session_timeout_ms=6000)
        made.append(client)
        return client

    yield connect
    for client in made:
        zk_client.close(client)


def test_election_is_exclusive_and_bumps_the_epoch(clients):
    first, second = ZkControllerStore(clients()), ZkControllerStore(clients())
    won = first.elect(1, 123)
    assert won is not None and won.epoch == 1
    assert second.elect(2, 124) is None
    data, stat = first.client.get(layout.CONTROLLER)
    assert codecs.decode_controller(data) == 1 and stat.ephemeralOwner == first.client.client_id[0]
    assert codecs.decode_controller_epoch(first.client.get(layout.CONTROLLER_EPOCH)[0]) == 1


def test_a_replaced_controller_cannot_write(clients):
    old_client = clients()
    old, new = ZkControllerStore(old_client), ZkControllerStore(clients())
    old_epoch = old.elect(1, 1)
    old_client.ensure_path("/data")
    zk_client.close(old_client)  # its session ends: /controller goes away
    new_epoch = new.elect(2, 2)
    assert new_epoch.epoch == old_epoch.epoch + 1
    stale = ZkControllerStore(clients())
    with pytest.raises(ControllerMovedError):
        stale.write([SetData("/data", b"x")], old_epoch)
    assert new.write([SetData("/data", b"y")], new_epoch)[0].ok


def test_one_failing_write_does_not_sink_its_batch(clients):
    store = ZkControllerStore(clients(), batch_size=50)
    epoch = store.elect(1, 1)
    store.client.ensure_path("/p")
    ops = [Create(f"/p/{i}", b"0") for i in range(120)]
    assert all(r.ok for r in store.write(ops, epoch))
    updates = [SetData(f"/p/{i}", b"1", version=0) for i in range(120)]
    updates[70] = SetData("/p/70", b"1", version=5)  # stale version
    results = store.write(updates, epoch)
    assert [i for i, r in enumerate(results) if not r.ok] == [70]
    assert isinstance(results[70].error, BadVersionError)
    assert results[0].zk_version == 1
    assert store.client.get("/p/71")[0] == b"1" and store.client.get("/p/70")[0] == b"0"
    assert all(r.ok for r in store.write([Delete(f"/p/{i}") for i in range(120)], epoch))
    assert store.children("/p") == []


def test_ten_thousand_fenced_writes_are_pipelined(clients):
    store = ZkControllerStore(clients())
    epoch = store.elect(1, 1)
    store.client.ensure_path("/many")
    started = time.monotonic()
    results = store.write([Create(f"/many/{i}", b"{}") for i in range(10_000)], epoch)
    elapsed_s = time.monotonic() - started
    assert all(r.ok for r in results)
    assert len(store.children("/many")) == 10_000
    print(f"10,000 fenced creates in {elapsed_s:.2f} s")


def test_results_per_operation_under_a_chroot(clients):
    # The multi is encoded by the store itself: created paths come back
    # without the chroot, set_data with the new version, and a failing
    # operation (after the one-by-one retry) with kazoo's exception.
    store = ZkControllerStore(clients(), batch_size=3)
    epoch = store.elect(1, 1)
    assert store.client.chroot                       # the fixture's chroot is in use
    store.client.ensure_path("/r")
    results = store.write([Create("/r/a", b"1"), Create("/r/seq-", b"2", sequential=True),
                           SetData("/r/a", b"3", version=0), Delete("/r/missing"),
                           SetData("/r/a", b"4", version=1)], epoch)
    assert [r.ok for r in results] == [True, True, True, False, True]
    assert results[1].created_path.startswith("/r/seq-") and results[1].zk_version == 0
    assert results[0].created_path == "/r/a"
    assert results[2].zk_version == 1 and results[4].zk_version == 2
    from kazoo.exceptions import NoNodeError
    assert isinstance(results[3].error, NoNodeError)
    assert store.client.get("/r/a")[0] == b"4"
    assert sorted(store.children("/r")) == sorted(["a", results[1].created_path.rsplit("/", 1)[1]])
