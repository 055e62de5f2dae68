"""The group coordinator under load: joins, a rebalance, acknowledged commits.

    .venv/bin/python bench/groups.py                 # 3 rounds, 100 members
    .venv/bin/python bench/groups.py --runs 1 --members 20

A 3-broker local cluster in a temporary directory (taken down at the end),
with Kafka's group.initial.rebalance.delay.ms of 3 s (the local cluster's
own default is 0). Members are raw protocol clients (one connection and one
thread each), so what is timed is the coordinator, not a client library:

- join: N members send JoinGroup (v5: KIP-394's two rounds) at once, the
  leader's SyncGroup hands out the assignment; timed from the first JoinGroup
  to the last SyncGroup answer. Two initial-delay windows are part of it (the
  3 s delay, re-armed once because members joined during the first, as
  Kafka's rule does); the coordinator's own share is the rest.
- rebalance: one member leaves (LeaveGroup); the others learn it from a
  Heartbeat (REBALANCE_IN_PROGRESS), rejoin and sync; timed from the leave
  to the last SyncGroup answer.
- commits: OffsetCommit of one partition, one request at a time per client,
  acknowledged once on the ISR of its __consumer_offsets partition (RF 3),
  by 1 and by 8 clients, for COMMIT_SECONDS each.

The machine's limits, measured in the same rounds with the same clients:
round trips of ApiVersions (what N members' requests cost without any
coordinator work), and acks=-1 Produce requests of one small record to an
RF 3 topic (what an acknowledged commit costs at least: a replicated write).
Every figure is the median of the rounds (the machine is shared).

This is a measurement, not a test: nothing here asserts a speed.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import tempfile
import threading
import time
from pathlib import Path

INITIAL_DELAY_MS = 3000
DELAY_WINDOWS = 2         # the first window, and the one re-armed because members joined during it
COMMIT_SECONDS = 5.0
MS = datetime.timedelta(milliseconds=1)


def client(address):
    from kafkactl.cluster.broker.broker_client import BrokerClient

    return BrokerClient(address[0], address[1], "bench-groups", request_timeout_s=120.0)


def subscription(topic: str) -> bytes:
    encoded = topic.encode()
    return b"\x00\x00" + (1).to_bytes(4, "big") + len(encoded).to_bytes(2, "big") + encoded + b"\xff\xff\xff\xff"


def coordinator(bootstrap, group: str):
    from kio.schema.find_coordinator.v3.request import FindCoordinatorRequest

    deadline = time.monotonic() + 120
    while True:
        with_client = client(bootstrap)
        try:
            answer = with_client.request(FindCoordinatorRequest(key=group, key_type=0))
        finally:
            with_client.close()
        if answer.error_code.value == 0:
            return answer.host, answer.port
        if time.monotonic() > deadline:
            raise RuntimeError(f"no coordinator for {group}: {answer.error_code}")
        time.sleep(0.5)


class Member:
    def __init__(self, address, group: str, topic: str) -> None:
        self.client = client(address)
        self.group, self.topic = group, topic
        self.member_id, self.generation, self.leader, self.members = "", -1, "", ()

    def join(self) -> None:
        from kio.schema.join_group.v5 import request as join

        while True:
            answer = self.client.request(join.JoinGroupRequest(
                group_id=self.group, session_timeout=30000 * MS, rebalance_timeout=60000 * MS,
                member_id=self.member_id, group_instance_id=None, protocol_type="consumer",
                protocols=(join.JoinGroupRequestProtocol(name="range", metadata=subscription(self.topic)),)))
            self.member_id = answer.member_id
            if answer.error_code.name != "member_id_required":
                break
        assert answer.error_code.value == 0, answer.error_code
        self.generation, self.leader, self.members = answer.generation_id, answer.leader, answer.members

    def sync(self) -> None:
        from kio.schema.sync_group.v3 import request as sync

        assignments = tuple(sync.SyncGroupRequestAssignment(member_id=m.member_id, assignment=b"a")
                            for m in self.members)
        answer = self.client.request(sync.SyncGroupRequest(
            group_id=self.group, generation_id=self.generation, member_id=self.member_id,
            group_instance_id=None, assignments=assignments))
        assert answer.error_code.value == 0, answer.error_code

    def heartbeat(self) -> str:
        from kio.schema.heartbeat.v4.request import HeartbeatRequest

        return self.client.request(HeartbeatRequest(group_id=self.group, generation_id=self.generation,
                                                    member_id=self.member_id, group_instance_id=None)).error_code.name

    def leave(self) -> None:
        from kio.schema.leave_group.v4 import request as leave

        self.client.request(leave.LeaveGroupRequest(group_id=self.group, members=(
            leave.MemberIdentity(member_id=self.member_id, group_instance_id=None),)))

    def api_versions(self) -> None:
        from kio.schema.api_versions.v3.request import ApiVersionsRequest

        self.client.request(ApiVersionsRequest(client_software_name="bench", client_software_version="1"))


def in_parallel(members, action) -> float:
    """Run action(member) on a thread each, started together; seconds until all ended."""
    errors = []

    def run(member):
        try:
            action(member)
        except Exception as error:       # reported after the round
            errors.append(error)

    threads = [threading.Thread(target=run, args=(m,)) for m in members]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise RuntimeError(f"{len(errors)} members failed, e.g. {errors[0]!r}")
    return time.monotonic() - started


def join_round(bootstrap, topic: str, count: int, group: str) -> tuple[float, float, float, list[Member]]:
    """(join seconds, rebalance seconds, round-trip floor seconds, members)."""
    address = coordinator(bootstrap, group)
    members = [Member(address, group, topic) for _ in range(count)]
    floor_s = in_parallel(members, lambda m: [m.api_versions() for _ in range(3)])

    def join_and_sync(member):
        member.join()
        member.sync()
    join_s = in_parallel(members, join_and_sync)
    leaving, staying = members[0], members[1:]
    started = time.monotonic()
    leaving.leave()

    def rejoin(member):
        assert member.heartbeat() == "rebalance_in_progress"
        join_and_sync(member)
    in_parallel(staying, rejoin)
    rebalance_s = time.monotonic() - started
    return join_s, rebalance_s, floor_s, members


def commit_rate(address, group: str, topic: str, clients: int) -> float:
    from kio.schema.offset_commit.v8 import request as commit

    def loop(c, done: list):
        count, deadline, offset = 0, time.monotonic() + COMMIT_SECONDS, 0
        while time.monotonic() < deadline:
            offset += 1
            answer = c.request(commit.OffsetCommitRequest(
                group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
                topics=(commit.OffsetCommitRequestTopic(name=topic, partitions=(commit.OffsetCommitRequestPartition(
                    partition_index=0, committed_offset=offset, committed_leader_epoch=-1,
                    committed_metadata=None),)),)))
            assert answer.topics[0].partitions[0].error_code.value == 0
            count += 1
        done.append(count)
    return _rate(address, clients, loop)


def produce_rate(bootstrap, topic: str, clients: int) -> float:
    from kio.schema.produce.v8 import request as produce

    from kafkactl.cluster.protocol.record_batch import build_batch

    def loop(c, done: list):
        count, deadline = 0, time.monotonic() + COMMIT_SECONDS
        while time.monotonic() < deadline:
            batch = build_batch([(b"k", b"v" * 30, None, int(time.time() * 1000))])
            answer = c.request(produce.ProduceRequest(
                transactional_id=None, acks=-1, timeout=30000 * MS, topic_data=(produce.TopicProduceData(
                    name=topic, partition_data=(produce.PartitionProduceData(index=0, records=batch),)),)))
            assert answer.responses[0].partition_responses[0].error_code.value == 0
            count += 1
        done.append(count)
    return _rate(bootstrap, clients, loop)


def _rate(address, clients: int, loop) -> float:
    connections = [client(address) for _ in range(clients)]
    done: list[int] = []
    threads = [threading.Thread(target=loop, args=(c, done)) for c in connections]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for c in connections:
        c.close()
    return sum(done) / COMMIT_SECONDS


def leader_of(cluster_status, zk, topic: str):
    from kafkactl.cluster.admin.topics import describe_topics

    [info] = describe_topics(zk, [topic])[topic]
    broker = cluster_status.broker(info.leader)
    return broker.host, broker.port


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--members", type=int, default=100)
    args = parser.parse_args()

    from kafkactl.cluster.admin.topics import create_topic
    from kafkactl.cluster.local import LocalCluster
    from kafkactl.cluster.zk.client import close, connect

    root = Path(tempfile.mkdtemp(prefix="bench-groups-"))
    cluster = LocalCluster(root / "cluster")
    status = cluster.up(brokers=3, overrides={"group.initial.rebalance.delay.ms": str(INITIAL_DELAY_MS),
                                              "auto.leader.rebalance.enable": "false"})
    zk = connect(status.zookeeper_connect, session_timeout_ms=10000, connection_timeout_ms=10000)
    results: dict[str, list[float]] = {}
    try:
        topic = "bench-groups"
        create_topic(zk, topic, {0: [1, 2, 3]}, {"min.insync.replicas": "2"})
        bootstrap = (status.brokers[0].host, status.brokers[0].port)
        coordinator(bootstrap, "warm-up")
        time.sleep(2)
        for run in range(args.runs):
            join_s, rebalance_s, floor_s, members = join_round(bootstrap, topic, args.members, f"join-{run}")
            for member in members:
                member.client.close()
            results.setdefault("join_s", []).append(join_s)
            results.setdefault("join_own_s", []).append(join_s - DELAY_WINDOWS * INITIAL_DELAY_MS / 1000)
            results.setdefault("rebalance_s", []).append(rebalance_s)
            results.setdefault("floor_s", []).append(floor_s)
            group = f"commits-{run}"
            address = coordinator(bootstrap, group)
            produce_at = leader_of(status, zk, topic)
            for clients in (1, 8):
                results.setdefault(f"commits_{clients}", []).append(commit_rate(address, group, topic, clients))
                results.setdefault(f"produce_{clients}", []).append(produce_rate(produce_at, topic, clients))
    finally:
        close(zk)
        cluster.down(purge=True)
    report(results, args)


def report(results: dict[str, list[float]], args) -> None:
    median = {k: statistics.median(v) for k, v in results.items()}
    print(f"group coordinator, {args.members} raw-protocol members, median of {args.runs} rounds")
    print(f"  join to Stable:            {median['join_s']:.2f} s (of which {DELAY_WINDOWS} initial-delay "
          f"windows of {INITIAL_DELAY_MS / 1000:.0f} s; coordinator and network {median['join_own_s']:.2f} s)")
    print(f"  rebalance after one leave: {median['rebalance_s']:.2f} s")
    print(f"  limit: {3 * args.members} ApiVersions round trips by the same members: {median['floor_s']:.2f} s; "
          f"join / limit {median['join_own_s'] / median['floor_s']:.1f}x, "
          f"rebalance / limit {median['rebalance_s'] / median['floor_s']:.1f}x")
    for clients in (1, 8):
        commits, produce = median[f"commits_{clients}"], median[f"produce_{clients}"]
        print(f"  acknowledged commits/s, {clients} client(s): {commits:.0f}; limit (acks=-1 produce "
              f"requests/s, RF 3): {produce:.0f}; ratio {commits / produce:.2f}")


if __name__ == "__main__":
    main()
