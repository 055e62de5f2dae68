"""Counting in messages: "1 partition", never "1 partitions"."""

from kafkactl.cluster.admin.wording import counted


def test_one_is_singular_everything_else_plural():
    assert [counted(n, "partition") for n in (0, 1, 2)] == ["0 partitions", "1 partition", "2 partitions"]
    assert counted(1, "log dir") == "1 log dir" and counted(3, "entry") == "3 entries"
    assert counted(2, "broker", "brokers alive") == "2 brokers alive"
