"""Names in a log dir (layout.py)."""

import os

from kafkactl.cluster.log.layout import (
    FUTURE_DIR_SUFFIX,
    deleted_dir_path,
    future_dir_name,
    is_deleted_dir_name,
    parse_future_dir_name,
    parse_partition_dir_name,
)


def test_parse_partition_dir_name():
    assert parse_partition_dir_name("orders-3") == ("orders", 3)
    assert parse_partition_dir_name("my-topic.v2-10") == ("my-topic.v2", 10)
    assert parse_partition_dir_name("orders-3.abc-delete") is None
    assert parse_partition_dir_name("orders") is None
    assert parse_partition_dir_name("-3") is None


def test_future_and_deleted_dir_names():
    future = future_dir_name("orders", 3)
    assert future.startswith("orders-3.") and future.endswith(FUTURE_DIR_SUFFIX)
    assert parse_future_dir_name(future) == ("orders", 3)
    assert parse_partition_dir_name(future) is None
    assert parse_future_dir_name("orders-3.XYZ-future") is None     # the id is lower-case hex
    assert parse_future_dir_name("orders-3") is None
    deleted = deleted_dir_path("/data/ssd0/orders-3")
    assert deleted.startswith("/data/ssd0/orders-3.") and is_deleted_dir_name(os.path.basename(deleted))
    assert deleted != deleted_dir_path("/data/ssd0/orders-3")        # never meets an earlier one
