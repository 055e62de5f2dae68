"""A small cluster for the goals' pure logic: 3 brokers in 3 racks, each with
one SSD dir (1,000 bytes) and one HDD dir (2,000 bytes)."""

from kafkactl.planner.goals.base import Broker, Cluster, Dir, Replica
from kafkactl.planner.options import PlannerOptions


def cluster(sizes=None, options=None, racks=("a", "b", "c"), excluded=()):
    """sizes: {dir_id: bytes}; dir ids: broker b has ssd 2(b-1), hdd 2(b-1)+1."""
    dirs, brokers = [], []
    for b, rack in enumerate(racks, start=1):
        brokers.append(Broker(b, rack, 1000, 1000, b not in excluded))
        dirs.append(Dir(2 * (b - 1), b, "/ssd", "ssd", 1000))
        dirs.append(Dir(2 * (b - 1) + 1, b, "/hdd", "hdd", 2000))
    for d in dirs:
        d.size_bytes = (sizes or {}).get(d.dir_id, 0)
    return Cluster(dirs, brokers, options or PlannerOptions())


def replica(index=0, brokers=(1, 2), dirs=(1, 3), size=100, bytes_in=10, bytes_out=20, hot=False,
            topic="t", partition=0):
    return Replica(topic, partition, index, size, bytes_in, bytes_out, hot, tuple(brokers), tuple(dirs))
